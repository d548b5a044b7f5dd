#include "cli/options.hpp"

#include <algorithm>
#include <getopt.h>

#include "lib/strings.hpp"

namespace dlstage::cli {

bool ParsedArgs::has(const std::string& long_name) const
{
    return std::any_of(given.begin(), given.end(), [&](const auto& g) { return g.first == long_name; });
}

std::optional<std::string> ParsedArgs::last(const std::string& long_name) const
{
    std::optional<std::string> value;
    for (const auto& g : given)
        if (g.first == long_name)
            value = g.second;
    return value;
}

std::vector<std::string> ParsedArgs::all(const std::string& long_name) const
{
    std::vector<std::string> values;
    for (const auto& g : given)
        if (g.first == long_name)
            values.push_back(g.second);
    return values;
}

namespace {
std::string option_name(const OptionSpec& spec)
{
    return std::string("--") + spec.long_name;
}

// The long options whose names begin with `prefix` (what getopt_long
// found ambiguous).
std::vector<std::string> starting_with(const std::string& prefix, const std::vector<OptionSpec>& specs)
{
    std::vector<std::string> names;
    for (const OptionSpec& spec : specs)
        if (std::string(spec.long_name).rfind(prefix, 0) == 0)
            names.push_back(option_name(spec));
    return names;
}

std::string problem_with(const std::string& arg, int unknown_short, const std::vector<OptionSpec>& specs,
                         bool missing_value)
{
    std::vector<std::string> known;
    for (const OptionSpec& spec : specs)
        known.push_back(option_name(spec));
    if (arg.rfind("--", 0) == 0 && arg.size() > 2) {
        const std::string name = arg.substr(0, arg.find('='));
        const std::vector<std::string> candidates = starting_with(name.substr(2), specs);
        if (missing_value)
            return "option '" + name + "' needs a value";
        if (candidates.size() > 1) {
            std::string list;
            for (const std::string& c : candidates)
                list += (list.empty() ? "" : ", ") + c;
            return "option '" + name + "' is ambiguous (" + list + ")";
        }
        if (candidates.size() == 1 && arg.find('=') != std::string::npos)
            return "option '" + candidates.front() + "' takes no value";
        return "unknown option '" + name + "'" + did_you_mean(name, known);
    }
    const std::string shown = std::string("-") + static_cast<char>(unknown_short);
    if (missing_value)
        return "option '" + shown + "' needs a value";
    return "unknown option '" + shown + "'";
}
}  // namespace

ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<OptionSpec>& specs)
{
    // getopt_long wants argv as it is in main: a writable array, a program
    // name first, a null last; it permutes it.
    std::vector<std::string> storage;
    storage.reserve(args.size() + 1);
    storage.push_back("dlstage");
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : storage)
        argv.push_back(s.data());
    argv.push_back(nullptr);

    std::string short_options = ":";  // ':' first: a missing value is told apart
    std::vector<option> long_options;
    for (const OptionSpec& spec : specs) {
        if (spec.short_name) {
            short_options += spec.short_name;
            if (spec.takes_value)
                short_options += ':';
        }
        long_options.push_back({spec.long_name, spec.takes_value ? required_argument : no_argument, nullptr, 0});
    }
    long_options.push_back({nullptr, 0, nullptr, 0});

    ParsedArgs parsed;
    const int argc = static_cast<int>(argv.size() - 1);
    optind = 0;  // GNU: start afresh (another parse may have run in this process)
    opterr = 0;  // the messages are ours
    for (;;) {
        int index = -1;
        const int c = getopt_long(argc, argv.data(), short_options.c_str(), long_options.data(), &index);
        if (c == -1)
            break;
        if (c == '?' || c == ':') {
            // A long option's problem has optopt 0 (no long option here has
            // a val), and getopt has just stepped past the element.
            const bool long_form = optopt == 0 && optind >= 1 && optind <= argc;
            throw UsageError(problem_with(long_form ? argv[optind - 1] : "", optopt, specs, c == ':'));
        }
        const OptionSpec* spec = nullptr;
        if (c == 0 && index >= 0)
            spec = &specs[static_cast<std::size_t>(index)];
        else
            for (const OptionSpec& s : specs)
                if (s.short_name == c)
                    spec = &s;
        if (!spec)
            throw UsageError("unknown option");
        parsed.given.emplace_back(spec->long_name, spec->takes_value && optarg ? optarg : "");
    }
    for (int i = optind; i < argc; ++i)
        parsed.operands.push_back(argv[static_cast<std::size_t>(i)]);
    return parsed;
}

}  // namespace dlstage::cli
