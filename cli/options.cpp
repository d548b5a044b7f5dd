#include "cli/options.hpp"

#include <algorithm>
#include <getopt.h>

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
// Optimal string alignment distance: edits, with a swap of two neighbours
// counting as one.
std::size_t distance(const std::string& a, const std::string& b)
{
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i)
        d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j)
        d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

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

std::string did_you_mean(const std::string& given, const std::vector<std::string>& known)
{
    std::string best;
    std::size_t best_distance = std::string::npos;
    for (const std::string& word : known) {
        const std::size_t d = distance(given, word);
        if (d < best_distance) {
            best = word;
            best_distance = d;
        }
    }
    // Close: at most 2 edits, and fewer than a third of the word.
    if (best.empty() || best_distance > 2 || best_distance * 3 > std::max<std::size_t>(best.size(), 3))
        return "";
    return " (did you mean '" + best + "'?)";
}

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
