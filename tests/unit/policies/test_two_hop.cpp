#include <boost/test/unit_test.hpp>

#include "policies/two_hop.hpp"

using namespace dlstage;
using namespace dlstage::policy;

namespace {
Dataset far(const std::string& source, Mode mode = Mode::Copy)
{
    Dataset d;
    d.name = "in21k";
    d.source = source;
    d.mode = mode;
    d.reach = Reach::Mover;
    d.via = "scratch";
    d.tiers = {"shm", "scratch"};
    return d;
}

MoverSettings mover_on(const std::string& partition)
{
    MoverSettings m;
    m.partition = partition;
    return m;
}

ViaCopyFacts good_copy()
{
    ViaCopyFacts f;
    f.has_record = f.same_mode = f.in_place = f.immutable = true;
    f.now = 1000;
    f.purge_date = 5000;
    return f;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(two_hop)

BOOST_AUTO_TEST_CASE(only_the_mover_partition_reads_a_far_source)
{
    const Dataset d = far("/p/largedata/in21k");
    BOOST_TEST(!reads_source_here(d, std::string("gpu"), mover_on("xfer")));
    BOOST_TEST(!reads_source_here(d, std::nullopt, mover_on("xfer")));  // the default partition is not the mover's
    BOOST_TEST(reads_source_here(d, std::string("xfer"), mover_on("xfer")));
    BOOST_TEST(!reads_source_here(d, std::string("xfer"), MoverSettings{}));
    Dataset near = d;
    near.reach = Reach::Compute;
    BOOST_TEST(reads_source_here(near, std::string("gpu"), mover_on("xfer")));
}

BOOST_AUTO_TEST_CASE(hop_two_stages_from_the_copy_as_the_copy_holds_it)
{
    const Dataset tree = second_hop(far("/p/largedata/in21k"), "/scratch/alice/in21k");
    BOOST_TEST(tree.source == "/scratch/alice/in21k");
    BOOST_TEST(!tree.from_catalog);  // its manifest describes the source, not the copy
    BOOST_TEST(to_string(tree.reach) == "compute");

    const Dataset extracted = second_hop(far("/p/largedata/shards/s-*.tar", Mode::Extract), "/scratch/alice/in21k");
    BOOST_TEST(extracted.source == "/scratch/alice/in21k");
    BOOST_TEST((extracted.format == Format::Dir));
    BOOST_TEST((extracted.mode == Mode::Copy));

    const Dataset shards = second_hop(far("/p/largedata/shards/s-*.tar"), "/scratch/alice/in21k");
    BOOST_TEST(shards.source == "/scratch/alice/in21k/s-*.tar");
    BOOST_TEST((shards.format == Format::Tar));

    const Dataset image = second_hop(far("/p/largedata/in21k.sqfs", Mode::Mount), "/scratch/alice/in21k/in21k.sqfs");
    BOOST_TEST(image.source == "/scratch/alice/in21k/in21k.sqfs");
    BOOST_TEST((image.format == Format::Squashfs));
    BOOST_TEST((image.mode == Mode::Mount));
}

BOOST_AUTO_TEST_CASE(a_copy_serves_without_a_mover_only_when_whole_current_and_unpurged)
{
    BOOST_TEST(via_copy_usable(good_copy(), "scratch").allowed);

    ViaCopyFacts none;
    BOOST_TEST(via_copy_usable(none, "scratch").reason == "there is no complete copy in scratch yet");
    ViaCopyFacts gone = good_copy();
    gone.in_place = false;
    BOOST_TEST(!via_copy_usable(gone, "scratch").allowed);
    ViaCopyFacts other_mode = good_copy();
    other_mode.same_mode = false;
    BOOST_TEST(via_copy_usable(other_mode, "scratch").reason == "the copy in scratch was made in another mode");

    ViaCopyFacts rescanned = good_copy();
    rescanned.manifest_scanned = 900;
    rescanned.checked_scan = 800;
    BOOST_TEST(via_copy_usable(rescanned, "scratch").reason ==
               "the source was scanned again since the copy in scratch was checked");
    rescanned.checked_scan = 900;
    BOOST_TEST(via_copy_usable(rescanned, "scratch").allowed);

    ViaCopyFacts purged = good_copy();
    purged.purge_date = 1000;
    BOOST_TEST(via_copy_usable(purged, "scratch").reason ==
               "the site's purge may have taken files of the copy in scratch");

    ViaCopyFacts written = good_copy();
    written.found_changed = true;
    BOOST_TEST(via_copy_usable(written, "scratch").reason ==
               "a job found the copy in scratch changed since its mover job made it");

    // Never stale: a source the site does not vouch for is checked by a
    // mover job, whatever the copy looks like.
    ViaCopyFacts mutable_source = good_copy();
    mutable_source.immutable = false;
    BOOST_TEST(via_copy_usable(mutable_source, "scratch").reason ==
               "the source may have changed since the copy in scratch was made");
}

BOOST_AUTO_TEST_CASE(the_job_waits_for_every_mover_and_what_the_user_asked)
{
    std::string merged;
    BOOST_TEST(dependency_with_movers({"7"}, std::nullopt, merged).allowed);
    BOOST_TEST(merged == "afterok:7");
    BOOST_TEST(dependency_with_movers({"7", "9"}, std::string("afterany:3"), merged).allowed);
    BOOST_TEST(merged == "afterok:7:9,afterany:3");
    const Verdict any = dependency_with_movers({"7"}, std::string("afterok:3?afterok:4"), merged);
    BOOST_TEST(!any.allowed);
    BOOST_TEST(any.reason.find("join them with ','") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_running_mover_is_shared_only_for_an_immutable_dataset)
{
    Dataset d = far("/p/largedata/in21k");
    BOOST_TEST(may_share_mover(d, "PENDING"));
    BOOST_TEST(!may_share_mover(d, "RUNNING"));
    BOOST_TEST(!may_share_mover(d, "CONFIGURING"));
    d.immutable = true;
    BOOST_TEST(may_share_mover(d, "RUNNING"));
}

BOOST_AUTO_TEST_CASE(no_node_cache_for_a_far_dataset_yet)
{
    Tier cache;
    cache.name = "cache";
    cache.cleanup = Cleanup::Cache;
    BOOST_TEST(!hop_supported(far("/p/x"), cache).allowed);
    Tier shm;
    shm.name = "shm";
    BOOST_TEST(hop_supported(far("/p/x"), shm).allowed);
}


BOOST_AUTO_TEST_CASE(a_mover_that_ends_without_a_copy_ends_its_waiters_a_held_one_holds_them)
{
    BOOST_TEST((mover_fate("COMPLETED", "None").kind == MoverFate::Kind::Copied));
    for (const char* live : {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "SUSPENDED"}) {
        const MoverFate fate = mover_fate(live, "Priority");
        BOOST_TEST((fate.kind == MoverFate::Kind::Waits));
        BOOST_TEST(!fate.held);
    }
    const MoverFate held = mover_fate("PENDING", "JobHeldAdmin");
    BOOST_TEST((held.kind == MoverFate::Kind::Waits));
    BOOST_TEST(held.held);
    BOOST_TEST(held.reason == "JobHeldAdmin");
    BOOST_TEST(mover_fate("PENDING", "JobHeldUser").held);
    BOOST_TEST(!mover_fate("RUNNING", "JobHeldUser").held);
    const auto ended = [](const char* state) {
        const MoverFate fate = mover_fate(state, "None");
        BOOST_TEST((fate.kind == MoverFate::Kind::Ended));
        return fate.reason;
    };
    BOOST_TEST(ended("CANCELLED") == "it was cancelled");
    BOOST_TEST(ended("TIMEOUT") == "it reached its time limit");
    BOOST_TEST(ended("NODE_FAIL") == "its node failed");
    BOOST_TEST(ended("FAILED") == "it failed");
    BOOST_TEST(ended("PREEMPTED") == "it was preempted");
    BOOST_TEST(mover_fate("SPECIAL_EXIT", "None").held);
    BOOST_TEST((mover_fate("", "").kind == MoverFate::Kind::Gone));
}

BOOST_AUTO_TEST_CASE(a_mover_requeues_itself_before_its_limit_only_when_its_copy_moved_on)
{
    BOOST_TEST(requeue_margin(60) == 10);  // at least 10 s
    BOOST_TEST(requeue_margin(300) == 30);
    BOOST_TEST(requeue_margin(36000) == 60);  // at most a minute
    const auto at = [](std::int64_t limit, std::int64_t left, bool progressed) {
        return mover_at_limit({limit, left, progressed});
    };
    BOOST_TEST((at(600, 61, true) == AtLimit::Wait));
    BOOST_TEST((at(600, 60, true) == AtLimit::Requeue));
    BOOST_TEST((at(600, 0, true) == AtLimit::Requeue));
    BOOST_TEST((at(600, -5, true) == AtLimit::Requeue));  // past it, not yet ended
    BOOST_TEST((at(600, 30, false) == AtLimit::RunOut));
    BOOST_TEST((at(600, 90, false) == AtLimit::Wait));
    BOOST_TEST((at(0, 0, true) == AtLimit::Wait));  // no limit
    // Cancelled while it copies: its end time is now, and it ends.
    BOOST_TEST((mover_at_limit({600, 0, true, false}) == AtLimit::Wait));
    BOOST_TEST((mover_at_limit({600, 0, false, false}) == AtLimit::Wait));
    // Looks again at the margin's start, every 10 s at most meanwhile.
    BOOST_TEST(next_look({600, 500, true}) == 10);
    BOOST_TEST(next_look({600, 65, true}) == 5);
    BOOST_TEST(next_look({600, 60, true}) == 1);
    BOOST_TEST(next_look({0, 0, false}) == 10);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(mover_nodes)

namespace {
MoverSettings mover_asking(int cpus, const std::string& memory, int nodes = 1)
{
    MoverSettings mover;
    mover.partition = "mover";
    mover.cpus_per_task = cpus;
    mover.memory = memory;
    mover.nodes = nodes;
    return mover;
}

const std::vector<PartitionNode> kTestNodes = {{"n4", 2, 4000}, {"n5", 2, 3000}};
}  // namespace

BOOST_AUTO_TEST_CASE(a_node_fits_when_it_has_the_cpus_and_the_memory_sbatch_mem_asks)
{
    BOOST_TEST(node_fits_mover(mover_asking(2, "1G"), 2, 4000));
    BOOST_TEST(!node_fits_mover(mover_asking(4, "1G"), 2, 4000));
    BOOST_TEST(!node_fits_mover(mover_asking(2, "4G"), 2, 4000));   // 4096 MiB
    BOOST_TEST(node_fits_mover(mover_asking(2, "4000"), 2, 4000));  // MiB without a unit
    BOOST_TEST(node_fits_mover(mover_asking(2, "4096000K"), 2, 4000));
    BOOST_TEST(!node_fits_mover(mover_asking(2, "1T"), 2, 4000));
    BOOST_TEST(node_fits_mover(mover_asking(2, ""), 2, 1));  // the partition's default
}

BOOST_AUTO_TEST_CASE(the_refusal_names_the_setting_no_node_gives_and_what_the_nodes_have)
{
    BOOST_TEST(mover_fits_nodes(mover_asking(1, "1G"), kTestNodes).allowed);
    BOOST_TEST(mover_fits_nodes(mover_asking(2, "8G"), kTestNodes).reason ==
               "[mover] memory = \"8G\" (8192 MiB) is more than any node of partition 'mover' has (at most 4000 MiB, "
               "on n4): set it to 4000M or less");
    BOOST_TEST(mover_fits_nodes(mover_asking(4, "1G"), kTestNodes).reason ==
               "[mover] cpus_per_task = 4 is more than any node of partition 'mover' has (at most 2 CPUs, on n4): set "
               "it to 2 or less");
    const std::string both = mover_fits_nodes(mover_asking(4, "8G"), kTestNodes).reason;
    BOOST_TEST(both.find("cpus_per_task = 4 ") != std::string::npos);
    BOOST_TEST(both.find("; [mover] memory = \"8G\"") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(too_few_nodes_that_give_both_and_an_unknown_partition_are_refused)
{
    BOOST_TEST(mover_fits_nodes(mover_asking(2, "3500M", 2), kTestNodes).reason ==
               "[mover] nodes = 2 but only 1 of the nodes of partition 'mover' (n4) give cpus_per_task = 2 and memory "
               "= \"3500M\": lower nodes, or what each node is asked for");
    BOOST_TEST(mover_fits_nodes(mover_asking(2, "1G", 2), kTestNodes).allowed);
    BOOST_TEST(mover_fits_nodes(mover_asking(2, "1G"), {}).reason ==
               "[mover] partition = 'mover': Slurm knows no node in it: name a partition sinfo lists");
}

BOOST_AUTO_TEST_SUITE_END()
