#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "facts/path_template.hpp"
#include "lib/error.hpp"
#include "tests/unit/support/error_of.hpp"

using namespace dlstage;

namespace {
const TemplateValues kValues{"1234", "alice", "n7"};

std::string message_of(const std::string& text, const TemplateValues& values)
{
    return test::error_of([&] { PathTemplate::parse(text).expand(values); });
}
}  // namespace

BOOST_AUTO_TEST_SUITE(path_template)

BOOST_AUTO_TEST_CASE(expands_every_escape)
{
    const auto t = PathTemplate::parse("/dev/shm/dlstage/%u/%j-%n/100%%");
    BOOST_TEST(t.root() == "/dev/shm/dlstage");
    BOOST_TEST(t.expand(kValues) == "/dev/shm/dlstage/alice/1234-n7/100%");
    BOOST_TEST(t.uses('j'));
    BOOST_TEST(t.uses('n'));
    BOOST_TEST(!PathTemplate::parse("/a/%%j").uses('j'));
}

BOOST_AUTO_TEST_CASE(template_without_escapes_is_its_own_root)
{
    const auto t = PathTemplate::parse("/local/cache/");
    BOOST_TEST(t.root() == "/local/cache");
    BOOST_TEST(t.expand(kValues) == "/local/cache");
}

BOOST_AUTO_TEST_CASE(bad_templates_are_refused)
{
    for (const char* bad : {"", "relative/%j", "/%j", "/a/%x", "/a/%", "/a/../%j", "/a/./%j", "/a//b/%j"}) {
        BOOST_TEST_CONTEXT(bad)
        {
            BOOST_CHECK_THROW(PathTemplate::parse(bad), Error);
        }
    }
}

BOOST_AUTO_TEST_CASE(values_that_would_escape_the_root_are_refused)
{
    const std::string t = "/dev/shm/dlstage/%u/%j";
    BOOST_TEST(message_of(t, {"1", "..", "n"}).find("%u (user name) value '..'") != std::string::npos);
    BOOST_TEST(message_of(t, {"1", "a/b", "n"}).find("contains '/'") != std::string::npos);
    BOOST_TEST(message_of(t, {"", "alice", "n"}).find("%j (job id) value '' is empty") != std::string::npos);
    BOOST_TEST(message_of(t, {".", "alice", "n"}).find("escape the tier root /dev/shm/dlstage") != std::string::npos);
    BOOST_TEST(message_of(t, {"1", std::string("a\0b", 3), "n"}).find("NUL") != std::string::npos);
    // Escapes the template does not use need no value.
    BOOST_TEST(PathTemplate::parse("/x/%j").expand({"5", "", ""}) == "/x/5");
}

BOOST_AUTO_TEST_CASE(levels_below_the_root_are_the_patterns_gc_matches)
{
    BOOST_TEST(PathTemplate::parse("/dev/shm/dlstage/%j").levels() == std::vector<std::string>{"%j"});
    BOOST_TEST((PathTemplate::parse("/local/dl/%u/job-%j/").levels() == std::vector<std::string>{"%u", "job-%j"}));
}

BOOST_AUTO_TEST_CASE(a_level_matches_what_it_expands_to_and_nothing_else)
{
    std::string job;
    BOOST_TEST(match_level("%j", "123", "n1", &job));
    BOOST_TEST(job == "123");
    for (const char* not_a_job : {"0123", "12a", "", "123.removing-n1", ".partial-x", "123 "})
        BOOST_TEST(!match_level("%j", not_a_job, "n1", nullptr), not_a_job);
    BOOST_TEST(match_level("job-%j-%n", "job-77-n2", "n2", &job));
    BOOST_TEST(job == "77");
    BOOST_TEST(!match_level("job-%j-%n", "job-77-n3", "n2", nullptr));  // another node's
    BOOST_TEST(match_level("%u", "alice", "n1", nullptr));
    BOOST_TEST(!match_level("%u", "..", "n1", nullptr));
    BOOST_TEST(match_level("%%%j", "%9", "n1", &job));
    BOOST_TEST(job == "9");
    BOOST_TEST(match_level("%u-%j", "a-b-12", "n1", &job));  // backtracks over the user's '-'
    BOOST_TEST(job == "12");
}

BOOST_AUTO_TEST_SUITE_END()
