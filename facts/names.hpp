// The names a configuration gives the values of an enum: each value with
// its name, in the order the documentation gives them.  config/config reads
// them; to_string says them (facts/config_model, facts/dataset_format).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace dlstage {

template <typename E>
using NameTable = std::vector<std::pair<std::string, E>>;

// value's name, or "?" for a value the table lacks.
template <typename E>
std::string name_in(const NameTable<E>& names, E value)
{
    for (const auto& [name, each] : names)
        if (each == value)
            return name;
    return "?";
}

}  // namespace dlstage
