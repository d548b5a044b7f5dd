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

BOOST_AUTO_TEST_CASE(sinfos_lines_give_each_nodes_active_features)
{
    const auto by_node = parse_sinfo_features("n1|(null)\nn2|gpu,dls_x_u1004\nn2|gpu,dls_x_u1004\n");
    BOOST_REQUIRE(by_node);
    BOOST_TEST(by_node->size() == 2u);
    BOOST_TEST(by_node->at("n1").empty());
    BOOST_TEST(by_node->at("n2") == (std::vector<std::string>{"gpu", "dls_x_u1004"}));
    BOOST_TEST(!parse_sinfo_features("n1 gpu\n"));
}

BOOST_AUTO_TEST_SUITE_END()
