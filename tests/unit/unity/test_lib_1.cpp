// test_lib, part 1 of 3: the unit tests of config/, job/, mover/ and facts/, compiled as one
// translation unit (docs/testing.md, "Unit tests"); tests/check-unity holds each test
// file to one part.

// First: it defines BOOST_TEST_MODULE before Boost.Test is included.
#include "tests/unit/support/unit_main.cpp"

#include "tests/unit/config/test_config.cpp"
#include "tests/unit/config/test_config_overrides.cpp"
#include "tests/unit/config/test_stage_spec.cpp"
#include "tests/unit/config/test_stager_tuning.cpp"
#include "tests/unit/facts/test_dataset_format.cpp"
#include "tests/unit/facts/test_path_template.cpp"
#include "tests/unit/job/test_job_identity.cpp"
#include "tests/unit/job/test_job_records.cpp"
#include "tests/unit/job/test_slurm_jobs.cpp"
#include "tests/unit/job/test_slurm_nodes.cpp"
#include "tests/unit/job/test_state_record.cpp"
#include "tests/unit/mover/test_mover_job.cpp"
#include "tests/unit/mover/test_mover_watch.cpp"
