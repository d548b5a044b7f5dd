// Fields of parsed state records (job/state_record.hpp), which users can
// write: read by type, never converted.  toml++'s value_or<int64_t> turns a
// float such as 1e300 into an integer with a cast that overflows, which is
// undefined behaviour (found by tests/fuzz).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <toml++/toml.h>

namespace dlstage {

// The integer at key, or nothing when it is missing or not an integer.
inline std::optional<std::int64_t> integer_field(const toml::table& record, std::string_view key)
{
    if (const auto* value = record.get_as<std::int64_t>(key))
        return value->get();
    return std::nullopt;
}

}  // namespace dlstage
