// Shared by the fuzz targets (tests/fuzz/fuzz_*.cpp, built and run by
// tests/fuzz/run).  An invariant that does not hold is a crash, so
// libFuzzer saves the input that broke it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/error.hpp"

namespace fuzz {

// Aborts with what was expected, and the text it was expected of.
inline void expect(bool holds, const char* what, std::string_view about)
{
    if (holds)
        return;
    std::fprintf(stderr, "invariant broken: %s\n  of: '%.*s'\n", what, static_cast<int>(about.size()), about.data());
    std::abort();
}

inline std::string_view text_of(const std::uint8_t* data, std::size_t size)
{
    return std::string_view(reinterpret_cast<const char*>(data), size);
}

// The input as up to n fields separated by NUL bytes (the last takes the
// rest); missing fields are empty.
inline std::vector<std::string> fields(std::string_view text, std::size_t n)
{
    std::vector<std::string> out;
    for (std::size_t i = 0; i + 1 < n; ++i) {
        const std::size_t nul = text.find('\0');
        out.emplace_back(text.substr(0, nul));
        text = nul == std::string_view::npos ? std::string_view() : text.substr(nul + 1);
    }
    out.emplace_back(text);
    return out;
}

// Messages users see are one line.
inline void expect_one_line(const std::string& message, std::string_view about)
{
    expect(!message.empty() && message.find('\n') == std::string::npos && message.find('\r') == std::string::npos,
           "an error message is one non-empty line", message + " <- " + std::string(about));
}

// Whether fn throws dlstage::Error (with a one-line message); anything else
// it throws escapes, a finding.  The message, if any, goes to *message.
inline bool refuses(const std::function<void()>& fn, std::string_view about, std::string* message = nullptr)
{
    try {
        fn();
    } catch (const dlstage::Error& e) {
        expect_one_line(e.what(), about);
        if (message)
            *message = e.what();
        return true;
    }
    return false;
}

}  // namespace fuzz
