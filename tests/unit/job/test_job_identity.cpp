// charge_memory: staged bytes on tiers in node memory against the job's
// memory per node (policies/admission fits_in_memory), and where that
// memory comes from (job/job_identity).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>

#include "config/config.hpp"
#include "config/stage_spec.hpp"
#include "job/job_identity.hpp"
#include "policies/admission.hpp"

using namespace dlstage;
using dlstage::policy::fits_in_memory;
using dlstage::policy::JobMemory;

namespace {
const std::uint64_t GiB = 1ull << 30;

const Config& identity_config()
{
    static const Config c = parse_config(R"(
[tiers.shm]
path = "/dev/shm/dlstage/%j"
[tiers.ssd]
path = "/local/dlstage/%j"
[datasets.imagenet]
source = "/p/imagenet"
tiers = ["shm", "ssd"]
[datasets.coco]
source = "/p/coco"
tiers = ["shm"]
)",
                                         "t.toml");
    return c;
}

std::map<std::string, SourceFacts> sizes(std::map<std::string, std::uint64_t> bytes)
{
    std::map<std::string, SourceFacts> facts;
    for (const auto& [name, b] : bytes)
        facts[name].bytes = b;
    return facts;
}

JobMemory mem(std::uint64_t gib)
{
    return {gib * GiB, "--mem=" + std::to_string(gib) + "G per node"};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(host_lists)

BOOST_AUTO_TEST_CASE(a_slurm_host_list_names_its_nodes_in_order)
{
    using Names = std::vector<std::string>;
    BOOST_TEST(expand_host_list("n1").value() == Names({"n1"}), boost::test_tools::per_element());
    BOOST_TEST(expand_host_list("n[1-3]").value() == Names({"n1", "n2", "n3"}), boost::test_tools::per_element());
    BOOST_TEST(expand_host_list("n[1-2],m5,x[08-10,07]").value() ==
                   Names({"n1", "n2", "m5", "x08", "x09", "x10", "x07"}),
               boost::test_tools::per_element());
    BOOST_TEST(expand_host_list("r[1-2]x[1-2]").value() == Names({"r1x1", "r1x2", "r2x1", "r2x2"}),
               boost::test_tools::per_element());
    BOOST_TEST(expand_host_list("node[001-100]")->size() == 100u);
    for (const char* bad :
         {"", "n[3-1]", "n[1-", "n[a]", "n1,,n2", "n[1-2],m[x]", "n]1[", "n[[1]]", "a1,b[1-2", "n1,["})
        BOOST_TEST(!expand_host_list(bad).has_value(), bad);
    // Never more than asked for, however the ranges multiply.
    BOOST_TEST(!expand_host_list("a[0-4294967295]b[0-4294967295]").has_value());
    BOOST_TEST(!expand_host_list("n[1-11]", 10).has_value());
    BOOST_TEST(expand_host_list("n[1-10]", 10)->size() == 10u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(memory)

BOOST_AUTO_TEST_CASE(a_dataset_larger_than_the_memory_is_refused_with_the_fix)
{
    const auto items = resolve_stage_data(identity_config(), "imagenet:shm");
    const auto verdict = fits_in_memory(identity_config(), items, sizes({{"imagenet", 150 * GiB}}), mem(64));
    BOOST_TEST(!verdict.allowed);
    BOOST_TEST(verdict.reason ==
               "imagenet (150.0 GiB) does not fit in the job's memory on tier 'shm' (--mem=64G per node; /dev/shm "
               "pages count against it): ask for --mem=169G or stage to 'ssd'");
}

BOOST_AUTO_TEST_CASE(what_fits_passes_and_the_sum_counts)
{
    const auto both = resolve_stage_data(identity_config(), "imagenet:shm,coco");
    BOOST_TEST(
        fits_in_memory(identity_config(), both, sizes({{"imagenet", 40 * GiB}, {"coco", 24 * GiB}}), mem(64)).allowed);
    const auto verdict =
        fits_in_memory(identity_config(), both, sizes({{"imagenet", 40 * GiB}, {"coco", 24 * GiB + 1}}), mem(64));
    BOOST_TEST(!verdict.allowed);
    BOOST_TEST(verdict.reason.find("imagenet (40.0 GiB) and coco (24.0 GiB) do not fit") == 0);
}

BOOST_AUTO_TEST_CASE(uncharged_tiers_unknown_sizes_and_unknown_memory_pass)
{
    BOOST_TEST(fits_in_memory(identity_config(), resolve_stage_data(identity_config(), "imagenet:ssd"),
                              sizes({{"imagenet", 150 * GiB}}), mem(64))
                   .allowed);
    BOOST_TEST(
        fits_in_memory(identity_config(), resolve_stage_data(identity_config(), "imagenet:shm"), {}, mem(64)).allowed);
    BOOST_TEST(fits_in_memory(identity_config(), resolve_stage_data(identity_config(), "imagenet:shm"),
                              sizes({{"imagenet", 150 * GiB}}), JobMemory{})
                   .allowed);
}

BOOST_AUTO_TEST_CASE(no_other_tier_no_suggestion)
{
    const auto verdict = fits_in_memory(identity_config(), resolve_stage_data(identity_config(), "coco"),
                                        sizes({{"coco", 2 * GiB}}), mem(1));
    BOOST_TEST(verdict.reason ==
               "coco (2.0 GiB) does not fit in the job's memory on tier 'shm' (--mem=1G per node; /dev/shm pages "
               "count against it): ask for --mem=3G");
}

BOOST_AUTO_TEST_CASE(memory_from_slurms_job_variables)
{
    const auto from = [](std::map<std::string, std::string> vars) {
        return memory_from_slurm([&](const std::string& name) { return vars.count(name) ? vars[name] : ""; });
    };
    const JobMemory node = from({{"SLURM_MEM_PER_NODE", "65536"}});
    BOOST_TEST(*node.per_node == 64 * GiB);
    BOOST_TEST(node.asked == "--mem=64G per node");
    const JobMemory cpu = from({{"SLURM_MEM_PER_CPU", "2048"}, {"SLURM_JOB_CPUS_PER_NODE", "4(x2),3"}});
    BOOST_TEST(*cpu.per_node == 6 * GiB);
    BOOST_TEST(cpu.asked == "--mem-per-cpu=2G x 3 CPUs = 6G per node");
    BOOST_TEST(!from({{"SLURM_MEM_PER_NODE", "0"}}).per_node);  // all of the node
    BOOST_TEST(!from({{"SLURM_MEM_PER_CPU", "2048"}}).per_node);
    BOOST_TEST(!from({{"SLURM_MEM_PER_NODE", "64G"}}).per_node);
    BOOST_TEST(!from({}).per_node);
}

BOOST_AUTO_TEST_CASE(memory_from_the_mem_option)
{
    BOOST_TEST(*memory_from_option(std::string("64G")).per_node == 64 * GiB);
    BOOST_TEST(memory_from_option(std::string("64G")).asked == "--mem=64G per node");
    BOOST_TEST(*memory_from_option(std::string("4000")).per_node == 4000ull << 20);
    BOOST_TEST(memory_from_option(std::string("4000")).asked == "--mem=4000M per node");
    BOOST_TEST(!memory_from_option(std::string("0")).per_node);
    BOOST_TEST(!memory_from_option(std::nullopt).per_node);
    BOOST_TEST(!memory_from_option(std::string("lots")).per_node);
}

BOOST_AUTO_TEST_CASE(identity_from_slurm_trusts_one_partition)
{
    const auto from = [](std::map<std::string, std::string> vars) {
        return identity_from_slurm([&](const std::string& name) { return vars.count(name) ? vars[name] : ""; },
                                   "nobody-here-xyz");
    };
    const auto job = from({{"SLURM_JOB_PARTITION", "gpu"}, {"SLURM_JOB_ACCOUNT", "proj1"}});
    BOOST_TEST(*job.partition == "gpu");
    BOOST_TEST(*job.account == "proj1");
    BOOST_TEST(*job.user == "nobody-here-xyz");
    BOOST_TEST(job.groups.empty());
    BOOST_TEST(!from({{"SLURM_JOB_PARTITION", "gpu,cpu"}}).partition);
    BOOST_TEST(!from({}).account);
}

BOOST_AUTO_TEST_CASE(the_groups_of_root)
{
    const auto groups = unix_groups("root");
    BOOST_TEST((std::find(groups.begin(), groups.end(), "root") != groups.end()));
    BOOST_TEST(unix_groups("nobody-here-xyz").empty());
}

BOOST_AUTO_TEST_SUITE_END()
