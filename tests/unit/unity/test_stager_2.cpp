// test_stager, part 2 of 2: the unit tests of stager/: the plan, the source and the kept copy's checks, compiled as one
// translation unit (docs/testing.md, "Unit tests"); tests/check-unity holds each test
// file to one part.

#include "tests/unit/stager/copies/test_copy_check.cpp"
#include "tests/unit/stager/copies/test_copy_check_shares.cpp"
#include "tests/unit/stager/copies/test_copy_lock.cpp"
#include "tests/unit/stager/copies/test_copy_readers.cpp"
#include "tests/unit/stager/copies/test_piece_log.cpp"
#include "tests/unit/stager/plan/test_manifest_scan.cpp"
#include "tests/unit/stager/plan/test_plan.cpp"
#include "tests/unit/stager/plan/test_plan_segments.cpp"
#include "tests/unit/stager/plan/test_source_check.cpp"
#include "tests/unit/stager/plan/test_split_share.cpp"
#include "tests/unit/stager/transfer/test_io_activity.cpp"
#include "tests/unit/stager/transfer/test_source_reader.cpp"
