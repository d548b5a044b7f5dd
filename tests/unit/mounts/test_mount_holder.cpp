// mounts/: what can be checked without Slurm or FUSE: which datasets are
// mounted, the holder step's command line, and counting the nodes that
// reported.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "config/config.hpp"
#include "launch/job_step.hpp"
#include "mounts/holder_step.hpp"
#include "mounts/mount_holder.hpp"

using namespace dlstage;
using namespace dlstage::mounts;

namespace {
using Lines = std::vector<std::string>;

Config catalog()
{
    Config config = parse_config(R"(
[site]
default_tier = "shm"
launcher = "srun --mpi=pmix"
[tiers.shm]
path = "/dev/shm/dlstage/%j"
[datasets.imagenet]
source = "/p/data/imagenet"
tiers = ["shm"]
[datasets.cifar]
source = "/p/data/cifar.sqfs"
tiers = ["shm"]
mode = "mount"
)",
                                 "t.toml");
    return config;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(mounts)

BOOST_AUTO_TEST_CASE(only_the_datasets_in_mode_mount_are_held)
{
    const Config config = catalog();
    const std::vector<StageItem> items = mount_items(config, "imagenet,cifar");
    BOOST_TEST(items.size() == 1u);
    BOOST_TEST(items.at(0).dataset.name == "cifar");
    BOOST_TEST(mount_items(config, "imagenet").empty());
}

BOOST_AUTO_TEST_CASE(the_holder_step_is_no_mpi_program_and_shares_the_job)
{
    const Config config = catalog();
    const Lines argv = holder_command(config, "/etc/dlstage/dlstage.toml", "7", "2", "cifar");
    const Lines expected = {"srun",
                            "--mpi=none",
                            "--jobid=7",
                            "--nodes=2",
                            "--ntasks=2",
                            "--kill-on-bad-exit=0",
                            "--job-name=dlstage-mount",
                            "--overlap",
                            "--input=none",
                            launch::sibling_program("dlstage"),
                            "--config",
                            "/etc/dlstage/dlstage.toml",
                            "hold-mounts",
                            "--job",
                            "7",
                            "cifar"};
    BOOST_TEST(argv == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(each_node_reports_on_a_line_of_its_own)
{
    BOOST_TEST(count_mounted_lines("") == 0u);
    BOOST_TEST(count_mounted_lines("dlstage-mounted n1\nnoise\ndlstage-mounted n2\n") == 2u);
    BOOST_TEST(count_mounted_lines("dlstage-mounted n1\nx dlstage-mounted n2\ndlstage-mount") == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
