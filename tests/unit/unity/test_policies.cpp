// test_policies: the unit tests of policies/, compiled as one
// translation unit (docs/testing.md, "Unit tests"); tests/check-unity holds each test
// file to one part.

// First: it defines BOOST_TEST_MODULE before Boost.Test is included.
#include "tests/unit/support/unit_main.cpp"

#include "tests/unit/policies/test_admission.cpp"
#include "tests/unit/policies/test_cache_budget.cpp"
#include "tests/unit/policies/test_cache_eviction.cpp"
#include "tests/unit/policies/test_cache_reuse.cpp"
#include "tests/unit/policies/test_cleanup.cpp"
#include "tests/unit/policies/test_gc.cpp"
#include "tests/unit/policies/test_launch_retry.cpp"
#include "tests/unit/policies/test_node_faults.cpp"
#include "tests/unit/policies/test_node_features.cpp"
#include "tests/unit/policies/test_overrides.cpp"
#include "tests/unit/policies/test_purge.cpp"
#include "tests/unit/policies/test_shared_copy.cpp"
#include "tests/unit/policies/test_slurm_states.cpp"
#include "tests/unit/policies/test_slurm_version.cpp"
#include "tests/unit/policies/test_split_placement.cpp"
#include "tests/unit/policies/test_staging_mode.cpp"
#include "tests/unit/policies/test_tier_choice.cpp"
#include "tests/unit/policies/test_tier_settings.cpp"
#include "tests/unit/policies/test_two_hop.cpp"
#include "tests/unit/policies/test_unsquashfs.cpp"
