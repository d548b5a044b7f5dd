#include "stager/steps/unpack_step.hpp"

#include <algorithm>
#include <cerrno>
#include <mpi.h>
#include <sys/stat.h>
#include <vector>

#include "lib/error.hpp"
#include "lib/sys/parallel.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/tree_remover.hpp"
#include "stager/extract/extract.hpp"
#include "stager/extract/extract_budget.hpp"
#include "stager/extract/extract_parts.hpp"
#include "stager/extract/shard_shares.hpp"
#include "stager/steps/collectives.hpp"

namespace dlstage::stager {

namespace {
void make_fresh_dir(const std::string& path)
{
    if (mkdir(path.c_str(), 0755) != 0)
        throw_cannot("create", path, errno);
}

// Names the archive as the user knows it, not its node-local copy.
Error named_for_user(const Error& e, const DatasetLayout& layout, const Plan& plan)
{
    std::string message = e.what();
    const std::string local = layout.incoming_dir + "/";
    if (const std::size_t at = message.find(local); at != std::string::npos)
        message.replace(at, local.size(), plan.source_root + "/");
    return Error(message);
}

void remove_or_throw(const Fd& job_dir, const std::string& shown, const std::string& name, const char* what)
{
    const RemoveResult removed = remove_tree_at(job_dir.get(), name, shown);
    if (!removed.ok())
        throw Error(std::string("cannot ") + what + " " + shown + "/" + name + ": " + removed.problems.front());
}

// After a failed extraction, at once: what it wrote may be as large as the
// tier allows, and the archives are of no more use.  Best effort: the
// failure is what the user hears of.
void remove_after_failure(const DatasetLayout& layout, const Fd& job_dir, const std::string& shown)
{
    for (const std::string* name : {&layout.partial_dir, &layout.incoming_dir})
        remove_tree_at(job_dir.get(), *name, shown);
}

std::string shard_path(const DatasetLayout& layout, const Plan& plan, std::size_t i)
{
    return layout.incoming_dir + "/" + std::string(plan.entries.path(i));
}
}  // namespace

Unpacked unpack_here(const DatasetLayout& layout, const Fd& job_dir, const std::string& shown, const Plan& plan,
                     unsigned threads, const policy::ExtractionBudget& limits)
{
    Unpacked done;
    ExtractBudget budget(limits);
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < plan.entries.size(); ++i)
        parts.push_back(shard_path(layout, plan, i));
    const auto clear = [&] {
        remove_or_throw(job_dir, shown, layout.partial_dir, "clear");
        make_fresh_dir(layout.partial_dir);
    };
    if (unpacks_into_existing_dir(plan.format))
        make_fresh_dir(layout.partial_dir);
    try {
        done.stripped =
            extract_parts(plan.format, parts, layout.partial_dir, layout.incoming_dir, threads, clear, budget).stripped;
    } catch (const Error& e) {
        remove_after_failure(layout, job_dir, shown);
        throw named_for_user(e, layout, plan);
    }
    remove_or_throw(job_dir, shown, layout.incoming_dir, "remove");
    return done;
}

namespace {
// How a rank's own shards went.
enum ShardsState : int { kUnpacked = 0, kShareSpent = 1, kFailed = 2 };

struct MyShards {
    std::vector<std::size_t> indexes;
    std::vector<ShardOutcome> outcomes;
    std::uint64_t stripped = 0;
    ShardsState state = kUnpacked;
};

// This rank's shards into partial_dir, each thread one shard at a time,
// with this rank's share of the budget.
MyShards unpack_mine(const DatasetLayout& layout, const Plan& plan, unsigned threads,
                     const policy::ExtractionBudget& limits, const NodeContext& ctx)
{
    MyShards mine;
    mine.indexes = shards_of_rank(plan.entries.size(), ctx.rank, ctx.size);
    std::uint64_t my_bytes = 0;
    for (const std::size_t i : mine.indexes)
        my_bytes += plan.entries.file_size(i);
    ExtractBudget budget(policy::extraction_share(limits, my_bytes, plan.total_bytes()));
    mine.outcomes.resize(mine.indexes.size());
    std::vector<ExtractStats> stats(mine.indexes.size());
    try {
        for_each_index(mine.indexes.size(), threads, [&](std::size_t k) {
            stats[k] = extract_part(plan.format, shard_path(layout, plan, mine.indexes[k]), layout.partial_dir,
                                    mine.outcomes[k], budget);
        });
    } catch (const Error&) {
        mine.state = budget.spent() ? kShareSpent : kFailed;
    } catch (...) {  // no memory, no thread: rank 0 tries once more alone
        mine.state = kFailed;
    }
    for (const ExtractStats& s : stats)
        mine.stripped += s.stripped;
    return mine;
}

// Every rank's items at rank 0, rank after rank (nothing elsewhere); with
// each rank's count in counts.
template <typename T>
std::vector<T> gather_at_rank0(const std::vector<T>& mine, MPI_Datatype type, const NodeContext& ctx,
                               std::vector<int>& counts)
{
    const int count = static_cast<int>(mine.size());
    counts.assign(static_cast<std::size_t>(ctx.size), 0);
    std::vector<int> offsets(counts.size());
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Igather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, ctx.comm, &request);
    quiet_wait(request);
    std::vector<T> all;
    if (ctx.rank == 0) {
        std::size_t total = 0;
        for (std::size_t r = 0; r < counts.size(); ++r) {
            offsets[r] = static_cast<int>(total);
            total += static_cast<std::size_t>(counts[r]);
        }
        all.resize(total);
    }
    MPI_Igatherv(mine.data(), count, type, all.data(), counts.data(), offsets.data(), type, 0, ctx.comm, &request);
    quiet_wait(request);
    return all;
}

// Every rank's name hashes at rank 0, which says whether any repeats.
bool names_overlap(const MyShards& mine, const NodeContext& ctx)
{
    std::vector<int> counts;
    std::vector<std::uint64_t> all = gather_at_rank0(name_hashes(mine.outcomes), MPI_UINT64_T, ctx, counts);
    const bool overlap = ctx.rank == 0 && any_repeated(std::move(all));
    return reduce_over_ranks(ctx.comm, overlap ? 1 : 0, MPI_MAX) != 0;
}

// Every rank's directories' times at rank 0, applied there in shard order:
// a directory several shards hold gets the last one's, as with tar -x.
void restore_times_in_shard_order(const DatasetLayout& layout, const MyShards& mine, const NodeContext& ctx)
{
    const std::string packed = pack_directory_times(mine.indexes, mine.outcomes);
    std::vector<int> sizes;
    const std::vector<char> all =
        gather_at_rank0(std::vector<char>(packed.begin(), packed.end()), MPI_BYTE, ctx, sizes);
    if (ctx.rank != 0)
        return;
    std::vector<std::pair<std::size_t, ShardOutcome>> shards;
    std::size_t at = 0;
    for (const int n : sizes) {  // each rank's block on its own
        for (auto& shard : unpack_directory_times(std::string(all.data() + at, static_cast<std::size_t>(n))))
            shards.push_back(std::move(shard));
        at += static_cast<std::size_t>(n);
    }
    std::stable_sort(shards.begin(), shards.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [index, outcome] : shards)
        restore_directory_times(layout.partial_dir, outcome);
}
}  // namespace

Unpacked unpack_over_ranks(const DatasetLayout& layout, const Fd& job_dir, const std::string& shown, const Plan& plan,
                           unsigned threads, const policy::ExtractionBudget& limits, const NodeContext& ctx)
{
    if (!extracts_part_by_part(plan.format) || plan.entries.size() < 2 || ctx.size < 2) {
        Unpacked done;
        if (ctx.rank == 0)
            done = unpack_here(layout, job_dir, shown, plan, threads, limits);
        quiet_barrier(ctx.comm);
        return done;
    }
    if (ctx.rank == 0)
        make_fresh_dir(layout.partial_dir);
    quiet_barrier(ctx.comm);
    MyShards mine = unpack_mine(layout, plan, threads, limits, ctx);
    const auto worst = static_cast<int>(reduce_over_ranks(ctx.comm, static_cast<std::uint64_t>(mine.state), MPI_MAX));
    // Whatever went wrong in parallel (a rank past its part of the budget,
    // a bad archive, or an error only the concurrency made: a shard's
    // read-only directory another shard writes into), and shards that
    // overlap: rank 0 clears the copy and unpacks every shard again, in
    // order, with the whole budget.  What fails then fails as `tar -x` of
    // each shard in turn would, naming the archive, and unpack_here clears up.
    Unpacked done;
    if (worst != kUnpacked || names_overlap(mine, ctx)) {
        if (ctx.rank == 0) {
            remove_or_throw(job_dir, shown, layout.partial_dir, "clear");
            done = unpack_here(layout, job_dir, shown, plan, 1, limits);
        }
        quiet_barrier(ctx.comm);
        return done;
    }
    try {
        restore_times_in_shard_order(layout, mine, ctx);
        if (ctx.rank == 0)
            remove_or_throw(job_dir, shown, layout.incoming_dir, "remove");
    } catch (const Error&) {
        remove_after_failure(layout, job_dir, shown);  // rank 0 alone throws here
        throw;
    }
    done.stripped = reduce_over_ranks(ctx.comm, mine.stripped, MPI_SUM);
    done.ranks = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(ctx.size), plan.entries.size()));
    quiet_barrier(ctx.comm);
    return done;
}

}  // namespace dlstage::stager
