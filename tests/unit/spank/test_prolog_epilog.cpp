#include <boost/test/unit_test.hpp>

#include <chrono>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/job_layout.hpp"
#include "job/state_record.hpp"
#include "lib/sys/mount_table.hpp"
#include "spank/prolog_epilog.hpp"
#include "spank/source_facts_env.hpp"
#include "tests/unit/support/in_child.hpp"
#include "tests/unit/support/spank_node.hpp"
#include "tests/unit/support/stopped_fuse.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;

namespace {
using test::Node;

std::string status_of(const toml::table& record)
{
    return record["status"].value_or(std::string());
}
}  // namespace

BOOST_AUTO_TEST_SUITE(prolog_epilog)

BOOST_AUTO_TEST_CASE(prolog_prepares_a_private_directory_and_records_it)
{
    Node node;
    node.api.stage_data = "imagenet";
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    struct stat st {};
    BOOST_TEST(lstat(node.job_dir().c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 07777) == 0700u);
    BOOST_TEST(st.st_uid == getuid());
    const toml::table record = node.record("prolog");
    BOOST_TEST(status_of(record) == "ready");
    BOOST_TEST(record["stage_data"].value_or(std::string()) == "imagenet");
    BOOST_TEST(record["user"].value_or(std::string()) == "alice");
    BOOST_TEST(record["datasets"][0]["directory"].value_or(std::string()) == node.job_dir());
    BOOST_TEST(record["datasets"][0]["env"].value_or(std::string()) == "DLSTAGE_IMAGENET");
    // The user's own corner of the state directory, for progress records.
    const std::string user_dir = job_user_dir(node.dir / "state", "42");
    BOOST_TEST(lstat(user_dir.c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 07777) == 0700u);
    BOOST_TEST(st.st_uid == getuid());
    BOOST_TEST(progress_record_path(node.dir / "state", "42", "imagenet") == user_dir + "/progress-imagenet.toml");
}

BOOST_AUTO_TEST_CASE(prolog_without_option_does_nothing)
{
    Node node;
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    struct stat st {};
    BOOST_TEST(stat((node.dir / "state").c_str(), &st) != 0);
    BOOST_TEST(stat((node.dir / "tier/alice").c_str(), &st) != 0);
}

BOOST_AUTO_TEST_CASE(request_refused_by_a_changed_config_never_drains)
{
    Node node("");  // the catalog lost the dataset since submit
    node.api.stage_data = "imagenet";
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    const toml::table record = node.record("prolog");
    BOOST_TEST(status_of(record) == "failed");
    BOOST_TEST(record["message"].value_or(std::string()).find("unknown dataset 'imagenet'") == 0u);
    BOOST_TEST(node.api.errors.size() == 1u);
}

BOOST_AUTO_TEST_CASE(hostile_user_name_cannot_escape_the_tier)
{
    Node node;
    node.api.stage_data = "imagenet";
    node.api.env["SLURM_JOB_USER"] = "..";
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    const toml::table record = node.record("prolog");
    BOOST_TEST(status_of(record) == "failed");
    BOOST_TEST(record["message"].value_or(std::string()).find("escape the tier root") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_planted_symlink_is_moved_aside_and_the_job_goes_on)
{
    Node node;
    node.api.stage_data = "imagenet";
    mkdir((node.dir / "tier/alice").c_str(), 0755);
    mkdir((node.dir / "elsewhere").c_str(), 0755);
    BOOST_REQUIRE(symlink((node.dir / "elsewhere").c_str(), node.job_dir().c_str()) == 0);
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    BOOST_TEST(status_of(node.record("prolog")) == "ready");
    struct stat st {};
    BOOST_TEST((lstat(node.job_dir().c_str(), &st) == 0 && S_ISDIR(st.st_mode)));
    BOOST_REQUIRE(node.api.errors.size() == 1u);  // the move is logged, with the new name
    BOOST_TEST(node.api.errors[0].find("job 42 on n2: " + node.job_dir() + " is a symlink; moved it aside to " +
                                       node.job_dir() + ".untrusted-") == 0u);
}

BOOST_AUTO_TEST_CASE(a_missing_tier_parent_is_a_node_fault_and_drains)
{
    Node node;
    node.api.stage_data = "imagenet";
    node.args.config_path =
        node.dir.write("gone.toml", "[site]\nstate_dir = \"" + node.dir / "state" + "\"\n[tiers.shm]\npath = \"" +
                                        node.dir / "unmounted/tier/%j" +
                                        "\"\n[datasets.imagenet]\nsource = \"/p/imagenet\"\n"
                                        "tiers = [\"shm\"]\n");
    BOOST_TEST(spank::job_prolog(node.api, node.args) == -1);
    BOOST_TEST(status_of(node.record("prolog")) == "broken");
    BOOST_TEST(node.record("prolog")["message"].value_or(std::string()).find("a node fault") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_squatted_tier_root_is_replaced_and_never_drains)
{
    Node node;
    node.api.stage_data = "imagenet";
    chmod((node.dir / "tier").c_str(), 0777);
    mkdir((node.dir / "tier/alice").c_str(), 0777);
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    BOOST_TEST(status_of(node.record("prolog")) == "ready");
    struct stat st {};
    BOOST_REQUIRE(lstat((node.dir / "tier").c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 07777) == 0755u);
    BOOST_REQUIRE(lstat((node.dir / "tier/alice").c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 07777) == 0755u);
    BOOST_TEST(node.api.errors.size() == 1u);
}

BOOST_AUTO_TEST_CASE(submit_time_facts_are_checked_against_free_space)
{
    Node node;
    node.api.stage_data = "imagenet";
    SourceFacts huge;
    huge.bytes = 1ull << 62;  // no test machine has 4 EiB free
    node.api.env["SPANK_DLSTAGE_FACTS"] = spank::encode_facts({{"imagenet", huge}});
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    BOOST_TEST(status_of(node.record("prolog")) == "failed");
    BOOST_TEST(node.record("prolog")["message"].value_or(std::string()).find("free on n2") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(broken_config_is_logged_not_fatal)
{
    Node node;
    node.api.stage_data = "imagenet";
    node.args.config_path = node.dir / "missing.toml";
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    BOOST_TEST(spank::job_epilog(node.api, node.args) == 0);
    BOOST_TEST(node.api.errors.size() == 2u);
    BOOST_TEST(node.api.errors[0].find("cannot read configuration file") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_config_others_can_write_is_refused_by_root_code)
{
    Node node;
    node.api.stage_data = "imagenet";
    chmod(node.args.config_path.c_str(), 0666);
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    BOOST_TEST(spank::job_epilog(node.api, node.args) == 0);
    BOOST_REQUIRE(node.api.errors.size() == 2u);
    BOOST_TEST(node.api.errors[0].find("refusing the site configuration: configuration file '" + node.args.config_path +
                                       "' is writable by group or others (mode 0666)") != std::string::npos);
    struct stat st {};
    BOOST_TEST(stat((node.dir / "state").c_str(), &st) != 0);  // nothing done at all
    BOOST_TEST(stat((node.dir / "tier/alice").c_str(), &st) != 0);
}

BOOST_AUTO_TEST_CASE(node_records_are_root_only_and_the_user_gets_the_outcome)
{
    Node node;
    node.api.stage_data = "imagenet";
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    struct stat st {};
    BOOST_REQUIRE(lstat(node_record_path(node.dir / "state", "42", "n2", "prolog").c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 07777) == 0600u);
    const std::string outcome = job_user_dir(node.dir / "state", "42") + "/" + prolog_outcome_name("n2");
    BOOST_REQUIRE(lstat(outcome.c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 07777) == 0644u);
    BOOST_TEST(read_record(outcome)["status"].value_or(std::string()) == "ready");
    // What `dlstage status` shows before the stager's first record: the planned datasets.
    BOOST_TEST(read_record(outcome)["datasets"][0]["name"].value_or(std::string()) == "imagenet");
    BOOST_TEST(read_record(outcome)["time"].value_or(std::int64_t{0}) > 0);
    // The epilog's outcome too, for the job's user (`dlstage status`: cleaned).
    BOOST_TEST(spank::job_epilog(node.api, node.args) == 0);
    const std::string epilog = job_user_dir(node.dir / "state", "42") + "/" + epilog_outcome_name("n2");
    BOOST_REQUIRE(lstat(epilog.c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 07777) == 0644u);
    BOOST_TEST(read_record(epilog)["status"].value_or(std::string()) == "cleaned");
}

BOOST_AUTO_TEST_CASE(a_full_tier_fails_the_job_and_never_drains)
{
    if (test::cannot_mount())
        return;
    Node node;
    node.api.stage_data = "imagenet";
    const std::string text = test::in_mount_namespace([&] {
        // A tier with no inode left for the job's directory.
        if (mount("tmpfs", (node.dir / "tier").c_str(), "tmpfs", 0, "size=1m,nr_inodes=16,mode=0755") != 0)
            return std::string("skip: mount tmpfs");
        mkdir((node.dir / "tier/alice").c_str(), 0755);
        for (int i = 0; i < 32; ++i)  // what a user can do to a shared tmpfs
            close(open((node.dir / "tier/filler" + std::to_string(i)).c_str(), O_WRONLY | O_CREAT, 0644));
        const int rc = spank::job_prolog(node.api, node.args);
        return std::to_string(rc) + " " + status_of(node.record("prolog")) + " " +
               node.record("prolog")["message"].value_or(std::string());
    });
    if (test::skipped(text))
        return;
    BOOST_TEST(text == "0 failed cannot create " + node.job_dir() +
                           ": No space left on device (the tier is full (no space or no inodes left))");
}

BOOST_AUTO_TEST_CASE(epilog_removes_the_job_directory_and_is_idempotent)
{
    Node node;
    node.api.stage_data = "imagenet";
    BOOST_REQUIRE(spank::job_prolog(node.api, node.args) == 0);
    mkdir((node.job_dir() + "/imagenet").c_str(), 0755);
    node.dir.write("tier/alice/42/imagenet/a.jpg", "x");
    node.dir.write("outside.txt", "keep");
    BOOST_REQUIRE(symlink((node.dir / "outside.txt").c_str(), (node.job_dir() + "/imagenet/link").c_str()) == 0);
    BOOST_TEST(spank::job_epilog(node.api, node.args) == 0);
    struct stat st {};
    BOOST_TEST(lstat(node.job_dir().c_str(), &st) != 0);
    BOOST_TEST(stat((node.dir / "outside.txt").c_str(), &st) == 0);
    const toml::table record = node.record("epilog");
    BOOST_TEST(status_of(record) == "cleaned");
    BOOST_TEST(record["removed"].value_or(0) == 4);
    BOOST_TEST(spank::job_epilog(node.api, node.args) == 0);  // again: nothing left, still fine
    BOOST_TEST(status_of(node.record("epilog")) == "cleaned");
}

BOOST_AUTO_TEST_CASE(a_fuse_mount_on_a_squatted_tier_root_is_detached_and_never_drains)
{
    if (test::cannot_mount())
        return;
    Node node;
    node.api.stage_data = "imagenet";
    mkdir((node.dir / "content").c_str(), 0755);
    // A FUSE file system on the tier root, its server stopped: any stat
    // of it would hang, and a refusing one would answer EACCES or EIO.
    const std::string text =
        test::with_stopped_fuse(node.dir / "content", node.dir / "image.sqfs", node.dir / "tier", [&] {
            const int rc = spank::job_prolog(node.api, node.args);
            struct stat st {};
            return std::to_string(rc) + " " + status_of(node.record("prolog")) +
                   (lstat(node.job_dir().c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? " made" : " missing") +
                   (MountTable::current().at(node.dir / "tier").has_value() ? " mounted" : " detached");
        });
    if (test::skipped(text))
        return;
    BOOST_TEST(text == "0 ready made detached");
}

BOOST_AUTO_TEST_CASE(epilog_detaches_a_stopped_fuse_mount_and_removes_the_job_dir_in_time)
{
    if (test::cannot_mount())
        return;
    Node node;
    node.api.stage_data = "imagenet";
    BOOST_REQUIRE(spank::job_prolog(node.api, node.args) == 0);
    mkdir((node.job_dir() + "/mnt").c_str(), 0755);
    mkdir((node.dir / "content").c_str(), 0755);
    node.dir.write("content/file", "data");
    const std::string text =
        test::with_stopped_fuse(node.dir / "content", node.dir / "image.sqfs", node.job_dir() + "/mnt", [&] {
            const auto start = std::chrono::steady_clock::now();
            const int rc = spank::job_epilog(node.api, node.args);
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            struct stat st {};
            return std::to_string(rc) + " " + status_of(node.record("epilog")) +
                   " unmounted=" + std::to_string(node.record("epilog")["unmounted"].value_or(0)) +
                   (lstat(node.job_dir().c_str(), &st) == 0 ? " left" : " removed") +
                   (seconds < 5 ? " quick" : " slow");
        });
    if (test::skipped(text))
        return;
    BOOST_TEST(text == "0 cleaned unmounted=1 removed quick");
}

BOOST_AUTO_TEST_CASE(epilog_stuck_on_a_hung_file_system_gives_up_in_time_and_never_drains)
{
    if (test::cannot_mount())
        return;
    Node node;
    node.api.stage_data = "imagenet";
    // The tier lies on a file system whose server is stopped, as a hung
    // network file system would be: every lookup there blocks.
    mkdir((node.dir / "content").c_str(), 0755);
    mkdir((node.dir / "content/tier").c_str(), 0755);
    mkdir((node.dir / "hung").c_str(), 0755);
    node.args.config_path = node.dir.write("hung.toml", "[site]\nstate_dir = \"" + node.dir / "state" +
                                                            "\"\nprolog_epilog_timeout = 1\n[tiers.shm]\npath = \"" +
                                                            node.dir / "hung/tier/%j" +
                                                            "\"\n[datasets.imagenet]\nsource = \"/p/imagenet\"\n"
                                                            "tiers = [\"shm\"]\n");
    const std::string text =
        test::with_stopped_fuse(node.dir / "content", node.dir / "image.sqfs", node.dir / "hung", [&] {
            const auto start = std::chrono::steady_clock::now();
            const int rc = spank::job_epilog(node.api, node.args);
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            return std::to_string(rc) + (seconds < 8 ? " in time: " : " too slow: ") +
                   (node.api.errors.empty() ? "" : node.api.errors.front());
        });
    if (test::skipped(text))
        return;
    BOOST_TEST(text == "0 in time: job 42 on n2: the epilog did not finish within 1 s (a hung mount or file system?); "
                       "what it left undone stays on the node for 'dlstage gc'; the node stays in service");
    // and the record says so, for status and gc
    BOOST_TEST(status_of(node.record("epilog")) == "unfinished");
    BOOST_TEST(node.record("epilog")["message"].value_or(std::string()) == "the epilog did not finish within 1 s");
}

BOOST_AUTO_TEST_CASE(epilog_keeps_data_of_keep_tiers)
{
    Node node("[datasets.imagenet]\nsource = \"/p/imagenet\"\ntiers = [\"keep\"]\n[tiers.keep]\npath = "
              "\"/never/used/%j\"\ncleanup = \"keep\"\n");
    node.api.stage_data = "imagenet";
    BOOST_TEST(spank::job_epilog(node.api, node.args) == 0);
    BOOST_TEST(node.record("epilog")["removed"].value_or(-1) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
