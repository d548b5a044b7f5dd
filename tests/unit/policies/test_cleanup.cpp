#include <boost/test/unit_test.hpp>

#include "policies/cleanup.hpp"

using namespace dlstage;
using namespace dlstage::policy;

BOOST_AUTO_TEST_SUITE(cleanup)

BOOST_AUTO_TEST_CASE(job_end_removes_the_job_directory_mounts_and_all)
{
    for (const Mode mode : {Mode::Copy, Mode::Extract, Mode::Mount}) {
        const JobEndCleanup c = cleanup_at_job_end(Cleanup::JobEnd, mode);
        BOOST_TEST(c.remove_job_dir);
        BOOST_TEST(!c.detach_dataset_mount);  // removal detaches every mount first
    }
}

BOOST_AUTO_TEST_CASE(kept_data_stays_but_its_mount_goes)
{
    const Cleanup kept = Cleanup::Keep;
    BOOST_TEST(!cleanup_at_job_end(kept, Mode::Copy).remove_job_dir);
    BOOST_TEST(!cleanup_at_job_end(kept, Mode::Copy).detach_dataset_mount);
    BOOST_TEST(!cleanup_at_job_end(kept, Mode::Mount).remove_job_dir);
    BOOST_TEST(cleanup_at_job_end(kept, Mode::Mount).detach_dataset_mount);
    BOOST_TEST(cleanup_at_job_end(Cleanup::Keep, Mode::Mount).reason ==
               "the tier's cleanup is \"keep\": the data stays; its squashfs mount goes with the job");
}

// A node cache keeps its copies below <tier root>/.cache: the job
// directory, which holds only the job's markers, goes.
BOOST_AUTO_TEST_CASE(a_node_cache_removes_the_job_directory_and_keeps_the_entries)
{
    for (const Mode mode : {Mode::Copy, Mode::Extract}) {
        const JobEndCleanup c = cleanup_at_job_end(Cleanup::Cache, mode);
        BOOST_TEST(c.remove_job_dir);
        BOOST_TEST(c.reason == "the tier's cleanup is \"cache\": the job directory goes, the cache keeps the dataset");
    }
}

BOOST_AUTO_TEST_SUITE_END()
