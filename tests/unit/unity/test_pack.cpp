// test_pack: the unit tests of pack/, compiled as one
// translation unit (docs/testing.md, "Unit tests"); tests/check-unity holds each test
// file to one part.

// First: it defines BOOST_TEST_MODULE before Boost.Test is included.
#include "tests/unit/support/unit_main.cpp"

#include "tests/unit/pack/test_shard_layout.cpp"
