// The message of the dlstage::Error that fn throws, or "" if it throws none.
#pragma once

#include <string>

#include "lib/error.hpp"

namespace dlstage::test {

template <typename Fn>
std::string error_of(Fn&& fn)
{
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace dlstage::test
