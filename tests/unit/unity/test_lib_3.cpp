// test_lib, part 3 of 3: the unit tests of tier/, gc/ and status/, compiled as one
// translation unit (docs/testing.md, "Unit tests"); tests/check-unity holds each test
// file to one part.

#include "tests/unit/gc/test_gc_leftovers.cpp"
#include "tests/unit/status/test_job_status.cpp"
#include "tests/unit/status/test_status_query.cpp"
#include "tests/unit/tier/test_cache_entry.cpp"
#include "tests/unit/tier/test_cache_evict.cpp"
#include "tests/unit/tier/test_cache_features.cpp"
#include "tests/unit/tier/test_cache_measure.cpp"
#include "tests/unit/tier/test_cache_records.cpp"
#include "tests/unit/tier/test_kept_copies.cpp"
#include "tests/unit/tier/test_safe_fs.cpp"
#include "tests/unit/tier/test_safe_fs_remove.cpp"
