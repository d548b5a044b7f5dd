#include <boost/test/unit_test.hpp>

#include <string>

#include "policies/slurm_version.hpp"
#include "tests/unit/support/files.hpp"

using namespace dlstage::policy;
using dlstage::test::content_of;
using dlstage::test::source_path;

BOOST_AUTO_TEST_SUITE(slurm_version)

BOOST_AUTO_TEST_CASE(the_build_number_reads_as_slurm_writes_it)
{
    BOOST_TEST(version_text(0x160508) == "22.05.8");
    BOOST_TEST(version_text(0x170b01) == "23.11.1");
    BOOST_TEST(release_of("22.05.8").major == 22u);
    BOOST_TEST(release_of("22.05.8").minor == 5u);
    BOOST_TEST(release_of("garbage").major == 0u);
}

BOOST_AUTO_TEST_CASE(only_the_release_it_was_built_for_loads_it)
{
    BOOST_TEST(plugin_fits_slurm("22.05.8", "22.05.11").allowed);  // a micro release changes no ABI
    const Verdict other = plugin_fits_slurm("22.05.8", "23.02.1");
    BOOST_TEST(!other.allowed);
    BOOST_TEST(other.reason ==
               "dlstage.so was built for Slurm 22.05.8 but is loaded into Slurm 23.02.1: rebuild and reinstall "
               "dlstage against Slurm 23.02.1 (see spank-dlstage(8), Slurm versions)");
    // The docs show this very line (the admin guide: as sbatch prints it).
    BOOST_TEST(
        content_of(source_path("docs/admin-guide.md")).find("\nsbatch: error: dlstage: " + other.reason + "\n") !=
        std::string::npos);
    BOOST_TEST(content_of(source_path("man/spank-dlstage.8")).find("\ndlstage: " + other.reason + "\n") !=
               std::string::npos);
    BOOST_TEST(!plugin_fits_slurm("22.05.8", "21.08.8").allowed);
    BOOST_TEST(plugin_fits_slurm("22.05.8", "").allowed);  // nothing said: Slurm's own plugin_version check stands
}

BOOST_AUTO_TEST_CASE(client_options_only_where_they_were_checked)
{
    BOOST_TEST(client_options_checked({22, 5}));
    BOOST_TEST(!client_options_checked({23, 2}));
    BOOST_TEST(!client_options_checked({20, 11}));
}

BOOST_AUTO_TEST_SUITE_END()
