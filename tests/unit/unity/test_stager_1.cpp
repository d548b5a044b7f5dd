// test_stager, part 1 of 2: the unit tests of stager/: extraction, compiled as one
// translation unit (docs/testing.md, "Unit tests"); tests/check-unity holds each test
// file to one part.

// First: it defines BOOST_TEST_MODULE before Boost.Test is included.
#include "tests/unit/support/unit_main.cpp"

#include "tests/unit/stager/extract/test_extract_parts.cpp"
#include "tests/unit/stager/extract/test_extract_squashfs.cpp"
#include "tests/unit/stager/extract/test_extract_tar.cpp"
#include "tests/unit/stager/extract/test_parallel_extract.cpp"
#include "tests/unit/stager/extract/test_shard_shares.cpp"
#include "tests/unit/stager/extract/test_squashfs_listing.cpp"
#include "tests/unit/stager/steps/test_phase_times.cpp"
#include "tests/unit/stager/transfer/test_own_chunks.cpp"
