#include <boost/test/unit_test.hpp>

#include <string>
#include <unistd.h>

#include "lib/log.hpp"
#include "lib/sys/fd.hpp"

using namespace dlstage;

namespace {
// What fn writes to stderr (a pipe in its place meanwhile).
template <typename Fn>
std::string stderr_of(Fn&& fn)
{
    int ends[2];
    BOOST_REQUIRE(pipe(ends) == 0);
    Fd read_end(ends[0]), write_end(ends[1]);
    Fd saved(dup(STDERR_FILENO));
    dup2(write_end.get(), STDERR_FILENO);
    fn();
    dup2(saved.get(), STDERR_FILENO);
    write_end.reset();
    std::string out;
    char buf[256];
    for (ssize_t n; (n = read(read_end.get(), buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<std::size_t>(n));
    return out;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(logging)

BOOST_AUTO_TEST_CASE(a_message_is_one_prefixed_printable_line)
{
    BOOST_TEST(message_line("cannot read /p/a\nb") == "dlstage: cannot read /p/a\\x0ab");
    BOOST_TEST(stderr_of([] { say("staged \x1b[2Jx"); }) == "dlstage: staged \\x1b[2Jx\n");
}

BOOST_AUTO_TEST_CASE(sayf_formats_then_says)
{
    BOOST_TEST(stderr_of([] { sayf("%s: %d of %s (%.0f%%)", "imagenet", 3, "4", 75.0); }) ==
               "dlstage: imagenet: 3 of 4 (75%)\n");
    BOOST_TEST(stderr_of([] { sayf("%s", ""); }) == "dlstage: \n");
}

BOOST_AUTO_TEST_SUITE_END()
