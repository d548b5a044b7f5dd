#include "spank/source_facts_env.hpp"

#include <cstdlib>

#include "lib/strings.hpp"

namespace dlstage::spank {

namespace {
std::string number_or_dash(const std::optional<std::uint64_t>& n)
{
    return n ? std::to_string(*n) : "-";
}

std::optional<std::uint64_t> parse_number(const std::string& text)
{
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    return std::strtoull(text.c_str(), nullptr, 10);
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
