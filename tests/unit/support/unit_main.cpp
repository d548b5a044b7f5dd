// The Boost.Test entry point shared by the unit test programs.
#define BOOST_TEST_MODULE dlstage unit tests
#include <boost/test/unit_test.hpp>
