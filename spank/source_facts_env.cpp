#include "spank/source_facts_env.hpp"

#include "lib/number.hpp"
#include "lib/strings.hpp"

namespace dlstage::spank {

namespace {
std::string number_or_dash(const std::optional<std::uint64_t>& n)
{
    return n ? std::to_string(*n) : "-";
}

// The user's environment carries the facts from submission to the prolog:
// anything but a plain number that fits is unknown ("-"), never a guess.
std::optional<std::uint64_t> parse_number(const std::string& text)
{
    const auto number = scan_decimal(text);
    if (!number || number->fraction_digits > 0 || number->whole_overflows)
        return std::nullopt;
    return number->whole;
}
}  // namespace

std::string encode_facts(const std::map<std::string, SourceFacts>& facts)
{
    std::vector<std::string> parts;
    for (const auto& [name, f] : facts)
        parts.push_back(name + "=" + number_or_dash(f.bytes) + "/" + number_or_dash(f.files));
    return join(parts, ";");
}

std::map<std::string, SourceFacts> decode_facts(const std::string& text)
{
    std::map<std::string, SourceFacts> facts;
    for (const std::string& part : split(text, ';')) {
        const std::size_t eq = part.find('=');
        const std::size_t slash = part.find('/', eq);
        if (eq == std::string::npos || slash == std::string::npos)
            continue;
        SourceFacts f;
        f.bytes = parse_number(part.substr(eq + 1, slash - eq - 1));
        f.files = parse_number(part.substr(slash + 1));
        facts[part.substr(0, eq)] = f;
    }
    return facts;
}

}  // namespace dlstage::spank
