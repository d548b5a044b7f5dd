#include "status/job_status.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "job/identity.hpp"
#include "job/record_field.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "policies/slurm_states.hpp"

namespace dlstage {

namespace {
struct StateName {
    StagingState state;
    const char* word;
};
constexpr StateName kStateNames[] = {
    {StagingState::Pending, "pending"},       {StagingState::Staging, "staging"},
    {StagingState::Ready, kReadyState},       {StagingState::Reused, kReusedState},
    {StagingState::CacheHit, kCacheHitState}, {StagingState::Failed, kFailedState},
    {StagingState::Cleaned, kCleanedState},   {StagingState::Stale, "stale"},
    {StagingState::Unknown, "unknown"},
};
}  // namespace

const char* state_word(StagingState state)
{
    for (const StateName& name : kStateNames)
        if (name.state == state)
            return name.word;
    return "unknown";
}

std::optional<StagingState> state_from_word(std::string_view word)
{
    for (const StateName& name : kStateNames)
        if (word == name.word)
            return name.state;
    return std::nullopt;
}

std::vector<std::string> state_words()
{
    std::vector<std::string> words;
    for (const StateName& name : kStateNames)
        words.emplace_back(name.word);
    return words;
}

std::string StatusRow::shown_id() const
{
    return array_task_id.empty() ? job_id : array_job_id + "_" + array_task_id;
}

int StatusRow::percent() const
{
    if (bytes_total == 0)
        return 100;
    const double share = static_cast<double>(std::min(bytes_done, bytes_total)) / static_cast<double>(bytes_total);
    return static_cast<int>(share * 100.0);
}

namespace {
// Records are written by the job's user (progress, failures): every value
// is read by type, never converted, and shown through printable().
std::string text_field(const toml::table& record, std::string_view key)
{
    return printable(record[key].value_or(std::string()));
}

std::uint64_t count_field(const toml::table& record, std::string_view key)
{
    return static_cast<std::uint64_t>(std::max<std::int64_t>(integer_field(record, key).value_or(0), 0));
}

double seconds_field(const toml::table& record, std::string_view key)
{
    const double value = record[key].value_or(0.0);
    return std::isfinite(value) && value > 0 ? value : 0.0;
}

// The state a progress record states ("staging", "ready", ...).
StagingState recorded_state(const std::string& word, std::string& reason)
{
    if (word == kStagingState)
        return StagingState::Staging;
    if (const auto state = state_from_word(word);
        state && *state != StagingState::Stale && *state != StagingState::Unknown && *state != StagingState::Pending)
        return *state;
    reason = "the record says " + quoted(word);
    return StagingState::Unknown;
}

bool claims_data(StagingState state)
{
    return state == StagingState::Pending || state == StagingState::Staging || state == StagingState::Ready ||
           state == StagingState::Reused || state == StagingState::CacheHit;
}

// The first problem of root's outcomes that is not `good`: "EVENT on NODE: MESSAGE".
std::string outcome_problem(const std::vector<toml::table>& outcomes, const char* event, const char* good)
{
    for (const toml::table& outcome : outcomes) {
        const std::string status = text_field(outcome, "status");
        if (status != good) {
            const std::string message = text_field(outcome, "message");
            return std::string(event) + " on " + text_field(outcome, "node") + ": " +
                   (message.empty() ? status : message);
        }
    }
    return "";
}

std::string failure_reason(const std::vector<toml::table>& failures)
{
    std::string reason = text_field(failures.front(), "node") + ": " + text_field(failures.front(), "message");
    if (failures.size() > 1)
        reason +=
            " (and " + std::to_string(failures.size() - 1) + " more node" + (failures.size() > 2 ? "s" : "") + ")";
    return reason;
}

// What Slurm says turns a state that claims data on the nodes into stale
// (the job is gone) or unknown (Slurm could not be asked).
void weigh_slurm(StatusRow& row, const SlurmJobs& slurm)
{
    if (!claims_data(row.state))
        return;
    if (!slurm.asked) {
        row.reason = "cannot ask Slurm (" + slurm.problem + "); the records say " + state_word(row.state);
        row.state = StagingState::Unknown;
        return;
    }
    const SlurmJob* job = slurm.find(row.job_id);
    if (!job) {
        row.reason = "Slurm no longer knows the job; no epilog record";
        row.state = StagingState::Stale;
    } else if (!policy::slurm_state_is_live(job->state)) {
        row.reason = "the job ended (" + job->state + "); no epilog record";
        row.state = StagingState::Stale;
    }
}

// The facts of the job as a whole: user, array ids, nodes, newest time.
StatusRow job_row(const JobRecords& job, const SlurmJobs& slurm)
{
    StatusRow row;
    row.job_id = job.job_id;
    std::set<std::string> nodes;
    for (const auto* records : {&job.prologs, &job.epilogs, &job.progress})
        for (const toml::table& outcome : *records) {
            if (records == &job.progress) {  // the stager's, from the job's environment
                if (row.array_task_id.empty()) {
                    row.array_job_id = text_field(outcome, "array_job_id");
                    row.array_task_id = text_field(outcome, "array_task_id");
                }
                continue;
            }
            nodes.insert(text_field(outcome, "node"));
            row.updated = std::max(row.updated, integer_field(outcome, "time").value_or(0));
            if (!row.uid)
                if (const auto uid = integer_field(outcome, "uid"))
                    row.uid = *uid, row.user = text_field(outcome, "user");
            if (row.array_task_id.empty()) {
                row.array_job_id = text_field(outcome, "array_job_id");
                row.array_task_id = text_field(outcome, "array_task_id");
            }
        }
    if (!row.uid && job.user) {
        row.uid = *job.user;
        row.user = user_name_of(*job.user);
    }
    if (row.user.empty() && row.uid)
        row.user = user_name_of(static_cast<uid_t>(*row.uid));
    row.nodes = static_cast<std::int64_t>(nodes.size());
    row.nodelist = join(std::vector<std::string>(nodes.begin(), nodes.end()), ",");
    if (const SlurmJob* known = slurm.find(job.job_id)) {
        if (!known->nodelist.empty())
            row.nodelist = known->nodelist;
        if (!known->array_task_id.empty())
            row.array_job_id = known->array_job_id, row.array_task_id = known->array_task_id;
    }
    if (row.array_job_id.empty() || row.array_task_id.empty())
        row.array_job_id.clear(), row.array_task_id.clear();
    return row;
}

// The epilog outcomes of this run of the job: one older than its node's
// prolog outcome is an earlier run's (a requeued job, or a job id Slurm
// gave again after its state was reset).
std::vector<toml::table> current_epilogs(const JobRecords& job)
{
    std::vector<toml::table> current;
    for (const toml::table& epilog : job.epilogs) {
        const std::string node = text_field(epilog, "node");
        const std::int64_t time = integer_field(epilog, "time").value_or(0);
        const bool earlier = std::any_of(job.prologs.begin(), job.prologs.end(), [&](const toml::table& prolog) {
            return text_field(prolog, "node") == node && integer_field(prolog, "time").value_or(0) > time;
        });
        if (!earlier)
            current.push_back(epilog);
    }
    return current;
}

void fill_from_progress(StatusRow& row, const toml::table& r)
{
    row.dataset = text_field(r, "dataset");
    row.tier = text_field(r, "tier");
    if (const toml::array* shares = r["shares"].as_array(); shares && text_field(r, "placement") == "split")
        for (const toml::node& share : *shares)
            if (const auto bytes = share.value<std::int64_t>(); bytes && *bytes >= 0)
                row.shares.push_back(static_cast<std::uint64_t>(*bytes));
    row.nodes = std::max<std::int64_t>(integer_field(r, "nodes").value_or(0), row.nodes);
    if (const toml::array* hits = r["cache_hits"].as_array())
        for (const toml::node& node : *hits)
            if (const auto name = node.value<std::string>(); name && !name->empty())
                row.cache_hits.push_back(printable(*name));
    row.bytes_total = count_field(r, "bytes_total");
    row.bytes_done = std::min(count_field(r, "bytes_done"), row.bytes_total);
    row.files = count_field(r, "files_total");
    row.elapsed_s = seconds_field(r, "elapsed_s");
    row.bytes_per_s = seconds_field(r, "bytes_per_s");
    row.eta_s = seconds_field(r, "eta_s");
    row.updated = std::max(row.updated, integer_field(r, "time").value_or(0));
    row.state = recorded_state(r["state"].value_or(std::string("?")), row.reason);
}
}  // namespace

std::vector<StatusRow> status_rows(const JobRecords& job, const SlurmJobs& slurm)
{
    const StatusRow common = job_row(job, slurm);
    std::vector<StatusRow> rows;
    std::set<std::string> seen;
    for (const toml::table& progress : job.progress) {
        StatusRow row = common;
        fill_from_progress(row, progress);
        seen.insert(row.dataset);
        rows.push_back(std::move(row));
    }
    // Planned by the prolog, no progress yet: pending.
    for (const toml::table& outcome : job.prologs)
        if (const toml::array* planned = outcome["datasets"].as_array())
            for (const auto& entry : *planned)
                if (const toml::table* dataset = entry.as_table()) {
                    StatusRow row = common;
                    row.dataset = text_field(*dataset, "name");
                    row.tier = text_field(*dataset, "tier");
                    if (row.dataset.empty() || !seen.insert(row.dataset).second)
                        continue;
                    rows.push_back(std::move(row));
                }
    if (rows.empty())
        rows.push_back(common);

    const std::vector<toml::table> epilogs = current_epilogs(job);
    const std::string prolog_problem = outcome_problem(job.prologs, "prolog", kReadyState);
    const std::string epilog_problem = outcome_problem(epilogs, "epilog", kCleanedState);
    for (StatusRow& row : rows) {
        const bool done = row.state == StagingState::Ready || row.state == StagingState::Reused ||
                          row.state == StagingState::CacheHit;
        if (!prolog_problem.empty() && !done) {
            row.state = StagingState::Failed;
            row.reason = prolog_problem;
        } else if (!job.failures.empty()) {
            // After the data was ready a node's failure (its squashfuse
            // died) leaves the state, and says what broke since.
            if (!done)
                row.state = StagingState::Failed;
            row.reason = failure_reason(job.failures);
        }
        // A failure stays the news after the epilog: its reason is what the user needs.
        if (!epilogs.empty() && row.state != StagingState::Failed) {
            row.state = StagingState::Cleaned;
            if (!epilog_problem.empty())
                row.reason = epilog_problem;
        }
        weigh_slurm(row, slurm);
    }
    return rows;
}

bool JobSelector::matches(const StatusRow& row) const
{
    if (task.empty())
        return row.job_id == job || row.array_job_id == job;
    return row.array_job_id == job && row.array_task_id == task;
}

std::vector<JobSelector> parse_job_list(std::string_view list)
{
    std::vector<JobSelector> selectors;
    for (const std::string& item : split(list, ',')) {
        const std::size_t underscore = item.find('_');
        try {
            if (underscore == std::string::npos)
                selectors.push_back({slurm_number(item), ""});
            else
                selectors.push_back({slurm_number(item.substr(0, underscore)),
                                     std::to_string(parse_count(item.substr(underscore + 1), 0, kMaxSlurmNumber))});
        } catch (const Error&) {
            throw Error(quoted(item) + " is not a job id (123, or 123_4 for an array task)");
        }
    }
    return selectors;
}

}  // namespace dlstage
