#include <boost/test/unit_test.hpp>

#include "lib/error.hpp"
#include "spank/plugin_args.hpp"
#include "tests/unit/support/error_of.hpp"

using namespace dlstage;
using dlstage::spank::parse_plugin_args;

namespace {
std::string error_of(const std::vector<std::string>& args)
{
    return test::error_of([&] { parse_plugin_args(args); });
}
}  // namespace

BOOST_AUTO_TEST_SUITE(plugin_args)

BOOST_AUTO_TEST_CASE(config_path)
{
    BOOST_TEST(parse_plugin_args({}).config_path.empty());
    BOOST_TEST(parse_plugin_args({"config=/etc/x.toml"}).config_path == "/etc/x.toml");
    BOOST_TEST(parse_plugin_args({}).dlstage_path.find("/dlstage") != std::string::npos);
    BOOST_TEST(parse_plugin_args({"dlstage=/opt/d/bin/dlstage"}).dlstage_path == "/opt/d/bin/dlstage");
}

BOOST_AUTO_TEST_CASE(strict_key_value)
{
    BOOST_TEST(error_of({"confg=/x"}) ==
               "unknown plugstack.conf argument 'confg' (did you mean 'config'?) (known keys: config, dlstage)");
    BOOST_TEST(error_of({"/etc/x.toml"}).find("must be key=value") != std::string::npos);
    BOOST_TEST(error_of({"=x"}).find("must be key=value") != std::string::npos);
    BOOST_TEST(error_of({"config="}).find("absolute path") != std::string::npos);
    BOOST_TEST(error_of({"config=rel.toml"}).find("absolute path") != std::string::npos);
    BOOST_TEST(error_of({"dlstage=bin/dlstage"}) ==
               "plugstack.conf argument dlstage= must be an absolute path, not 'bin/dlstage'");
}

BOOST_AUTO_TEST_SUITE_END()
