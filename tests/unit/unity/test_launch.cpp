// test_launch: the unit tests of launch/, compiled as one
// translation unit (docs/testing.md, "Unit tests"); tests/check-unity holds each test
// file to one part.

// First: it defines BOOST_TEST_MODULE before Boost.Test is included.
#include "tests/unit/support/unit_main.cpp"

#include "tests/unit/launch/test_launch.cpp"
