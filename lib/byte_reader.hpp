// Reading back values a program wrote as they lay in memory (the stager's
// plan on the wire, the directory times ranks send rank 0): both ends are
// the same binary.  Running past the end throws Error "malformed WHAT
// (truncated)".
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "lib/error.hpp"

namespace dlstage {

template <typename T>
void put_bytes(std::string& out, const T& value)
{
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// A text as its length (8 bytes) and its bytes: ByteReader::get_text.
inline void put_text(std::string& out, const std::string& text)
{
    put_bytes(out, static_cast<std::uint64_t>(text.size()));
    out += text;
}

class ByteReader {
public:
    ByteReader(const std::string& in, const char* what) : in_(in), what_(what) {}
    template <typename T>
    T get()
    {
        T value;
        std::memcpy(&value, take(sizeof value), sizeof value);
        return value;
    }
    const char* take(std::size_t n)
    {
        if (in_.size() - pos_ < n)
            throw Error(std::string("malformed ") + what_ + " (truncated)");
        const char* at = in_.data() + pos_;
        pos_ += n;
        return at;
    }
    std::string get_text()
    {
        const auto size = get<std::uint64_t>();
        return std::string(take(size), size);
    }
    bool done() const { return pos_ == in_.size(); }

private:
    const std::string& in_;
    const char* what_;
    std::size_t pos_ = 0;
};

}  // namespace dlstage
