// A bare dataset for tests that only care about its source.
#pragma once

#include <string>

#include "config/config.hpp"

namespace dlstage::test {

inline Dataset dataset_at(const std::string& source)
{
    Dataset d;
    d.name = "d";
    d.source = source;
    return d;
}

}  // namespace dlstage::test
