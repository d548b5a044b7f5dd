#include <boost/test/unit_test.hpp>

#include <string>

#include "config/stager_tuning.hpp"
#include "lib/error.hpp"
#include "tests/unit/support/error_of.hpp"

using namespace dlstage;
using dlstage::test::error_of;

BOOST_AUTO_TEST_SUITE(stager_tuning)

namespace {
std::string knob_error(std::string_view option, std::string_view value)
{
    StagerTuning tuning;
    return error_of([&] { find_tuning_knob(option)->set(value, tuning); });
}
}  // namespace

BOOST_AUTO_TEST_CASE(every_knob_has_a_variable_and_an_option)
{
    BOOST_TEST(tuning_knobs().size() == 8u);
    for (const TuningKnob& knob : tuning_knobs()) {
        BOOST_TEST(knob.variable.substr(0, 8) == "DLSTAGE_");
        BOOST_TEST(find_tuning_knob(knob.option) == &knob);
    }
    BOOST_TEST(!find_tuning_knob("--config"));
}

BOOST_AUTO_TEST_CASE(knobs_set_their_field_from_valid_values)
{
    StagerTuning tuning;
    const auto set = [&](std::string_view option, std::string_view value) {
        find_tuning_knob(option)->set(value, tuning);
    };
    set("--chunk-size", "8M");
    set("--window", "32");
    set("--readers", "2");
    set("--writers", "3");
    set("--opens", "48");
    set("--rate-limit", "200M");
    set("--progress", "0.5");
    set("--exchange", "bcast");
    BOOST_TEST(tuning.chunk_size == 8ull << 20);
    BOOST_TEST(tuning.window == 32u);
    BOOST_TEST(tuning.readers == 2u);
    BOOST_TEST(tuning.writers == 3u);
    BOOST_TEST(tuning.opens == 48u);
    BOOST_TEST(tuning.read_rate_limit == 200ull << 20);
    BOOST_TEST(tuning.progress_interval == 0.5);
    BOOST_TEST((tuning.scheme == ExchangeScheme::Bcast));
}

BOOST_AUTO_TEST_CASE(knobs_refuse_malformed_and_out_of_range_values)
{
    BOOST_TEST(knob_error("--window", "4x") == "invalid value '4x': expected a whole number from 1 to 256");
    BOOST_TEST(knob_error("--readers", "0") == "invalid value '0': expected a whole number from 1 to 256");
    BOOST_TEST(knob_error("--opens", "0") == "invalid value '0': expected a whole number from 1 to 256");
    BOOST_TEST(knob_error("--writers", "-1") == "invalid value '-1': expected a whole number from 1 to 256");
    BOOST_TEST(knob_error("--chunk-size", "1K") == "invalid size '1K': expected a size from 4.0 KiB to 1.0 GiB");
    BOOST_TEST(knob_error("--chunk-size", "2G") == "invalid size '2G': expected a size from 4.0 KiB to 1.0 GiB");
    BOOST_TEST(knob_error("--chunk-size", "4Mx").find("unknown unit 'Mx'") != std::string::npos);
    BOOST_TEST(knob_error("--rate-limit", "200") == "invalid size '200': expected a size of at least 64.0 KiB");
    BOOST_TEST(knob_error("--progress", "1e1") ==
               "invalid value '1e1': expected a number of seconds from 0.1 to 86400");
    BOOST_TEST(knob_error("--exchange", "rings") == "invalid value 'rings': expected ring or bcast");
}

BOOST_AUTO_TEST_CASE(opens_are_shared_out_among_the_readers)
{
    StagerTuning tuning;
    BOOST_TEST(opens_per_reader(tuning) == tuning.opens / tuning.readers);
    tuning.readers = 3;
    tuning.opens = 16;
    BOOST_TEST(opens_per_reader(tuning) == 6u);  // rounded up: at least the opens asked for
    tuning.opens = 1;
    BOOST_TEST(opens_per_reader(tuning) == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
