// test_spank: the unit tests of spank/, compiled as one
// translation unit (docs/testing.md, "Unit tests"); tests/check-unity holds each test
// file to one part.

// First: it defines BOOST_TEST_MODULE before Boost.Test is included.
#include "tests/unit/support/unit_main.cpp"

#include "tests/unit/spank/test_job_start.cpp"
#include "tests/unit/spank/test_plugin_args.cpp"
#include "tests/unit/spank/test_prolog_epilog.cpp"
#include "tests/unit/spank/test_submit.cpp"
