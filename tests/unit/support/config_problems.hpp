// The problems parse_config finds in a configuration text (none: valid).
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "lib/error.hpp"

namespace dlstage::test {

inline std::vector<ConfigProblem> problems_of(const std::string& text)
{
    try {
        parse_config(text, "t.toml");
    } catch (const ConfigError& e) {
        return e.problems();
    }
    return {};
}

}  // namespace dlstage::test
