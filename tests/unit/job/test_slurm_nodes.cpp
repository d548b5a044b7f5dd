#include <boost/test/unit_test.hpp>

#include "job/slurm_nodes.hpp"

using namespace dlstage;

BOOST_AUTO_TEST_SUITE(slurm_nodes)

BOOST_AUTO_TEST_CASE(scontrols_line_gives_both_feature_lists)
{
    const auto features =
        parse_node_features("NodeName=n2 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 AvailableFeatures=gpu,dls_x_u1004 "
                            "ActiveFeatures=gpu Gres=(null) NodeAddr=127.0.0.1 NodeHostName=n2 Version=22.05.8\n");
    BOOST_REQUIRE(features);
    BOOST_TEST(features->available == (std::vector<std::string>{"gpu", "dls_x_u1004"}));
    BOOST_TEST(features->active == (std::vector<std::string>{"gpu"}));
    BOOST_TEST(features->state.empty());
    BOOST_TEST(parse_node_features("NodeName=n2 State=IDLE+DRAIN AvailableFeatures=a ActiveFeatures=a")->state ==
               "IDLE+DRAIN");
}

BOOST_AUTO_TEST_CASE(null_is_no_feature_and_a_line_without_the_fields_nothing)
{
    const auto none = parse_node_features("NodeName=n1 AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null)");
    BOOST_REQUIRE(none);
    BOOST_TEST(none->available.empty());
    BOOST_TEST(none->active.empty());
    BOOST_TEST(!parse_node_features("Node n9 not found"));
    // A field's name inside another's value is not the field.
    BOOST_TEST(!parse_node_features("NodeName=n1 Comment=xAvailableFeatures=a ActiveFeatures=b"));
}

BOOST_AUTO_TEST_CASE(a_list_is_written_back_as_slurm_reads_it)
{
    BOOST_TEST(feature_list_text({"a", "b"}) == "a,b");
    BOOST_TEST(feature_list_text({}) == "");
    BOOST_TEST(parse_feature_list("a,,b") == (std::vector<std::string>{"a", "b"}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(partition_nodes)

BOOST_AUTO_TEST_CASE(sinfos_rows_give_each_node_once_with_its_state_size_and_features)
{
    const auto rows = parse_partition_nodes("n1|debug*|idle|2|4000|(null)\nn2|debug*|drained|2|4000|dls_a_u1,gpu\n"
                                            "n4|mover|mixed|8|64000|\nn2|small|drained|2|4000|dls_a_u1,gpu\n");
    BOOST_REQUIRE(rows);
    BOOST_REQUIRE(rows->size() == 3u);
    BOOST_TEST((*rows)[0].partition == "debug");
    BOOST_TEST((*rows)[0].default_partition);
    BOOST_TEST((*rows)[1].state == "drained");
    BOOST_TEST((*rows)[1].features == (std::vector<std::string>{"dls_a_u1", "gpu"}));
    BOOST_TEST(!(*rows)[2].default_partition);
    BOOST_TEST((*rows)[2].cpus == 8u);
    BOOST_TEST((*rows)[2].memory_mib == 64000u);
    BOOST_TEST((*rows)[2].features.empty());
    BOOST_TEST(parse_partition_nodes("")->empty());  // a partition Slurm does not know
    BOOST_TEST(!parse_partition_nodes("n1|debug|idle\n"));
    BOOST_TEST(!parse_partition_nodes("n4|mover|idle|2|4000+|\n"));
    BOOST_TEST(!parse_partition_nodes("sinfo: error: something\n"));
}

BOOST_AUTO_TEST_CASE(squeues_pending_jobs_give_their_preference_and_reason)
{
    const auto jobs = parse_pending_preferences(
        "24|dls_x_u1|ReqNodeNotAvail, "
        "UnavailableNodes:n2|\n25|(null)|Priority|\n26_3|dls_a_u1&dls_b_u1|BadConstraints|\n");
    BOOST_REQUIRE(jobs);
    BOOST_REQUIRE(jobs->size() == 3u);
    BOOST_TEST((*jobs)[0].prefer == "dls_x_u1");
    BOOST_TEST((*jobs)[0].reason == "ReqNodeNotAvail, UnavailableNodes:n2");
    BOOST_TEST((*jobs)[1].prefer.empty());
    BOOST_TEST((*jobs)[2].job == "26_3");
    BOOST_TEST(!parse_pending_preferences("squeue: error: Invalid field\n"));
}

BOOST_AUTO_TEST_SUITE_END()
