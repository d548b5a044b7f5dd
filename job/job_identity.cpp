#include "job/job_identity.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <grp.h>
#include <iterator>
#include <pwd.h>

#include "job/identity.hpp"
#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "lib/sys/group_list.hpp"

namespace dlstage {

namespace {
constexpr std::uint64_t kMiB = std::uint64_t(1) << 20;

std::optional<std::string> known(const std::string& value)
{
    if (value.empty() || value.find(',') != std::string::npos)
        return std::nullopt;
    return value;
}

// Slurm's numbers in its variables; anything else is not known.
std::optional<std::uint64_t> whole_number(const std::string& text)
{
    if (text.empty())
        return std::nullopt;
    try {
        return parse_count(text, 0, UINT64_MAX);
    } catch (const Error&) {
        return std::nullopt;
    }
}

// The fewest CPUs on any node of "4(x2),2,8".
std::optional<std::uint64_t> fewest_cpus(const std::string& text)
{
    std::optional<std::uint64_t> fewest;
    for (const std::string& part : split(text, ',')) {
        const auto cpus = whole_number(part.substr(0, part.find('(')));
        if (!cpus)
            return std::nullopt;
        fewest = std::min(fewest.value_or(*cpus), *cpus);
    }
    return fewest;
}

policy::JobMemory per_node(std::uint64_t megabytes, const std::string& asked)
{
    if (megabytes == 0 || megabytes > (UINT64_MAX >> 20))
        return {};
    return {megabytes * kMiB, asked};
}
}  // namespace

std::vector<std::string> unix_groups(const std::string& user)
{
    const passwd* pw = getpwnam(user.c_str());
    if (!pw)
        return {};
    std::vector<std::string> names;
    for (const gid_t gid : group_list(user, pw->pw_gid))
        if (const group* gr = getgrgid(gid))
            names.push_back(gr->gr_name);
    return names;
}

policy::JobIdentity identity_from_slurm(const EnvLookup& env, const std::string& user, bool with_groups)
{
    policy::JobIdentity job;
    job.partition = known(env("SLURM_JOB_PARTITION"));
    job.account = known(env("SLURM_JOB_ACCOUNT"));
    const std::string name = env("SLURM_JOB_USER").empty() ? user : env("SLURM_JOB_USER");
    if (!name.empty()) {
        job.user = name;
        if (with_groups)
            job.groups = unix_groups(name);
    }
    return job;
}

policy::JobIdentity identity_from_options(const std::optional<std::string>& partition,
                                          const std::optional<std::string>& account, const std::string& user)
{
    policy::JobIdentity job;
    job.partition = partition ? known(*partition) : std::nullopt;
    job.account = account ? known(*account) : std::nullopt;
    job.user = user;
    job.groups = unix_groups(user);
    return job;
}

policy::JobMemory memory_from_slurm(const EnvLookup& env)
{
    if (const auto node = whole_number(env("SLURM_MEM_PER_NODE")))
        return per_node(*node, "--mem=" + megabytes_text(*node) + " per node");
    const auto cpu = whole_number(env("SLURM_MEM_PER_CPU"));
    const auto cpus = fewest_cpus(env("SLURM_JOB_CPUS_PER_NODE"));
    if (!cpu || !cpus || *cpus == 0 || *cpu > UINT64_MAX / *cpus)
        return {};
    return per_node(*cpu * *cpus, "--mem-per-cpu=" + megabytes_text(*cpu) + " x " + std::to_string(*cpus) +
                                      " CPUs = " + megabytes_text(*cpu * *cpus) + " per node");
}

policy::JobMemory memory_from_option(const std::optional<std::string>& mem)
{
    if (!mem)
        return {};
    const std::optional<std::uint64_t> mib = slurm_memory_mib(*mem);
    if (!mib)
        return {};
    return per_node(*mib, "--mem=" + megabytes_text(*mib) + " per node");
}

std::string process_env(const std::string& name)
{
    const char* value = std::getenv(name.c_str());
    return value ? value : "";
}

Config config_for_this_job(const Config& config)
{
    return policy::config_for_job(config, identity_from_slurm(process_env, this_user_name()));
}

std::string megabytes_text(std::uint64_t megabytes)
{
    const char* units[] = {"M", "G", "T", "P"};
    std::size_t unit = 0;
    while (unit + 1 < std::size(units) && megabytes != 0 && megabytes % 1024 == 0) {
        megabytes /= 1024;
        ++unit;
    }
    return std::to_string(megabytes) + units[unit];
}

namespace {
// One bracket's names in order: "1-3,07" is 1 2 3 07 (a range keeps its
// low bound's width: "01-03" is 01 02 03); nothing when malformed or when
// more than `most`.
std::optional<std::vector<std::string>> bracket_names(std::string_view ranges, std::size_t most)
{
    std::vector<std::string> names;
    for (const std::string& range : split(std::string(ranges), ',')) {
        const std::size_t dash = range.find('-');
        const std::string low_text = range.substr(0, dash);
        try {
            const std::uint64_t low = parse_count(low_text, 0, kMaxSlurmNumber);
            const std::uint64_t high =
                dash == std::string::npos ? low : parse_count(range.substr(dash + 1), 0, kMaxSlurmNumber);
            if (high < low || high - low >= most - std::min<std::size_t>(most, names.size()))
                return std::nullopt;
            for (std::uint64_t n = low; n <= high; ++n) {
                std::string digits = std::to_string(n);
                if (digits.size() < low_text.size())
                    digits.insert(0, low_text.size() - digits.size(), '0');
                names.push_back(std::move(digits));
            }
        } catch (const Error&) {
            return std::nullopt;
        }
    }
    return names;
}

// One host expression ("r[1-2]x[01-04]"): every name, the first bracket
// varying slowest.
std::optional<std::vector<std::string>> expand_one(std::string_view expr, std::size_t most)
{
    std::vector<std::string> names{""};
    std::size_t i = 0;
    while (i < expr.size()) {
        if (expr[i] == ']')
            return std::nullopt;
        if (expr[i] != '[') {
            const std::size_t next = std::min(expr.find('[', i), expr.find(']', i));
            const std::string_view text = expr.substr(i, next == std::string_view::npos ? expr.size() - i : next - i);
            for (std::string& name : names)
                name += text;
            i += text.size();
            continue;
        }
        const std::size_t close = expr.find(']', i);
        if (close == std::string_view::npos || expr.substr(i + 1, close - i - 1).find('[') != std::string_view::npos)
            return std::nullopt;
        const auto parts = bracket_names(expr.substr(i + 1, close - i - 1), most);
        if (!parts || parts->empty() || names.size() > most / parts->size())
            return std::nullopt;
        std::vector<std::string> longer;
        for (const std::string& name : names)
            for (const std::string& part : *parts)
                longer.push_back(name + part);
        names = std::move(longer);
        i = close + 1;
    }
    return names;
}
}  // namespace

std::optional<std::vector<std::string>> expand_host_list(std::string_view list, std::size_t most)
{
    std::vector<std::string> hosts;
    std::size_t depth = 0, from = 0;
    for (std::size_t i = 0; i <= list.size(); ++i) {
        const char c = i < list.size() ? list[i] : ',';
        if (c == '[')
            ++depth;
        else if (c == ']' && depth > 0)
            --depth;
        if (c != ',' || depth > 0)
            continue;
        const std::string_view expr = list.substr(from, i - from);
        from = i + 1;
        if (expr.empty())
            return std::nullopt;
        const auto names = expand_one(expr, most - hosts.size());
        if (!names || names->size() > most - hosts.size())
            return std::nullopt;
        hosts.insert(hosts.end(), names->begin(), names->end());
    }
    if (hosts.empty() || depth > 0)  // "n[1-2,": a bracket left open
        return std::nullopt;
    return hosts;
}

}  // namespace dlstage
