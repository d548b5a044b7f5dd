#include <boost/test/unit_test.hpp>

#include <cerrno>

#include "policies/node_faults.hpp"

using namespace dlstage::policy;

BOOST_AUTO_TEST_SUITE(node_faults)

BOOST_AUTO_TEST_CASE(what_users_can_cause_fails_the_job_only)
{
    for (const int err : {ENOSPC, EDQUOT, EMLINK, EMFILE, ENFILE, ENOMEM, ENAMETOOLONG, 0, EINVAL, EEXIST})
        BOOST_TEST((blame_for_tier_error(TierPlace::Inside, err).blame == Blame::Job), "errno " << err);
    BOOST_TEST(blame_for_tier_error(TierPlace::Inside, ENOSPC).reason ==
               "the tier is full (no space or no inodes left)");
    BOOST_TEST(blame_for_tier_error(TierPlace::Inside, EINVAL).reason == "unexpected error (Invalid argument)");
}

BOOST_AUTO_TEST_CASE(what_only_the_node_can_cause_drains)
{
    for (const int err : {EROFS, EIO, EUCLEAN, EACCES, EPERM, ESTALE, ENODEV, ENXIO})
        BOOST_TEST((blame_for_tier_error(TierPlace::Inside, err).blame == Blame::Node), "errno " << err);
    BOOST_TEST(blame_for_tier_error(TierPlace::Inside, EROFS).reason == "the tier's file system is read-only");
}

BOOST_AUTO_TEST_CASE(anything_above_the_tier_root_is_the_nodes)
{
    // The admin's directory holding the tier root: e.g. /local not mounted.
    for (const int err : {ENOENT, ENOSPC, EACCES})
        BOOST_TEST((blame_for_tier_error(TierPlace::Parent, err).blame == Blame::Node), "errno " << err);
}

BOOST_AUTO_TEST_SUITE_END()
