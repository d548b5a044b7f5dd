// stager/copies/copy_readers: which copy a record names, where a new copy goes,
// the readers' marks with Slurm's answer (squeue stand-ins on PATH), and
// which earlier copies the sweep removes.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/sys/fd.hpp"
#include "stager/copies/copy_readers.hpp"
#include "tests/unit/support/files.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::stager;

namespace {
// The layouts of dataset "mutable" in a tier directory `dir`.
struct Layouts {
    DatasetLayout layout, here;
    explicit Layouts(const std::string& dir)
    {
        here.tier_dir = ".";
        here.dataset_dir = "mutable";
        here.readers_dir = ".readers-mutable";
        here.version_prefix = ".version-mutable-";
        layout = here;
        layout.tier_dir = dir;
        layout.dataset_dir = dir + "/mutable";
        layout.readers_dir = dir + "/.readers-mutable";
        layout.version_prefix = dir + "/.version-mutable-";
    }
};

CopyRecord record_at(const std::string& path)
{
    CopyRecord record;
    record.ready.path = path;
    return record;
}

// PATH led to a directory whose squeue is this script, for one scope.
struct SqueueSaying {
    test::TempDir dir;
    std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
    explicit SqueueSaying(const std::string& script)
    {
        const std::string program = dir.write("squeue", "#!/bin/sh\n" + script + "\n");
        ::chmod(program.c_str(), 0755);
        ::setenv("PATH", (dir.path() + ":" + old_path).c_str(), 1);
    }
    ~SqueueSaying() { ::setenv("PATH", old_path.c_str(), 1); }
};

bool exists(const std::string& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(copy_readers)

BOOST_AUTO_TEST_CASE(the_record_names_the_copy_itself_or_one_made_beside_it)
{
    const Layouts l("/p/scratch/alice");
    BOOST_TEST(copy_in_record(record_at("/p/scratch/alice/mutable"), l.layout, l.here) == "mutable");
    BOOST_TEST(copy_in_record(record_at("/p/scratch/alice/.version-mutable-42-1700000000"), l.layout, l.here) ==
               ".version-mutable-42-1700000000");
    BOOST_TEST(copy_in_record(record_at("/p/scratch/alice/.version-mutable-42-1700000000/one.bin"), l.layout, l.here) ==
               ".version-mutable-42-1700000000");
    // Anything else a record says counts as the copy under its own name.
    for (const char* other :
         {"/elsewhere/mutable", "/p/scratch/alice/.version-mutable-x", "/p/scratch/alice/.version-mutable-",
          "/p/scratch/alice/.version-other-4", "/p/scratch/alice/../bob/mutable"})
        BOOST_TEST(copy_in_record(record_at(other), l.layout, l.here) == "mutable", other);
    BOOST_TEST(with_copy_at(l.layout, ".version-mutable-7").dataset_dir == "/p/scratch/alice/.version-mutable-7");
    BOOST_TEST(with_copy_at(l.here, ".version-mutable-7").dataset_dir == ".version-mutable-7");
}

BOOST_AUTO_TEST_CASE(a_new_copy_goes_beside_one_a_running_job_reads)
{
    const Layouts l("/p/scratch/alice");
    CopyReaders readers;
    BOOST_TEST(place_for_new_copy(l.here, readers, "50", 1700000000) == "mutable");
    readers.live[".version-mutable-40-1600000000"] = 1;  // an older copy's reader: the name is free
    BOOST_TEST(place_for_new_copy(l.here, readers, "50", 1700000000) == "mutable");
    readers.live["mutable"] = 2;
    BOOST_TEST(place_for_new_copy(l.here, readers, "50", 1700000000) == ".version-mutable-50-1700000000");
    // Requeued, the job makes a copy of another name than its first run's.
    BOOST_TEST(place_for_new_copy(l.here, readers, "50", 1700000090) == ".version-mutable-50-1700000090");
    CopyReaders unknown;
    unknown.known = false;
    BOOST_TEST(place_for_new_copy(l.here, unknown, "50", 1700000000) == ".version-mutable-50-1700000000");
}

BOOST_AUTO_TEST_CASE(readers_are_the_marks_of_jobs_slurm_says_run)
{
    test::TempDir dir;
    const Layouts l(dir.path());
    const Fd tier(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
    add_reader(tier.get(), l.layout, l.here, "41", {"mutable", dir / "mutable"});
    add_reader(tier.get(), l.layout, l.here, "42", {".version-mutable-40-1", dir / ".version-mutable-40-1"});
    add_reader(tier.get(), l.layout, l.here, "43", {"mutable", dir / "mutable"});
    BOOST_TEST(test::content_of(dir / ".readers-mutable/42") ==
               ".version-mutable-40-1\n" + dir / ".version-mutable-40-1" + "\n");
    const auto mark = read_reader_mark(dir / ".readers-mutable", "42");
    BOOST_REQUIRE(mark);
    BOOST_TEST(mark->path == dir / ".version-mutable-40-1");
    BOOST_TEST(!read_reader_mark(dir / ".readers-mutable", "44"));
    {
        // Nothing to decide, few marks: Slurm is not asked.
        SqueueSaying squeue("exit 1");
        const CopyReaders readers = look_at_readers(tier.get(), l.here, "43", false);
        BOOST_TEST(readers.known);
        BOOST_TEST(readers.live.empty());
    }
    {
        SqueueSaying squeue("echo '41|RUNNING|None'; echo '42|COMPLETED|None'");
        const CopyReaders readers = look_at_readers(tier.get(), l.here, "43", true);  // 43: this job
        BOOST_TEST(readers.known);
        BOOST_TEST(readers.live_of("mutable") == 1u);
        BOOST_TEST(readers.live_of(".version-mutable-40-1") == 0u);
        BOOST_TEST(readers.ended == std::vector<std::string>{"42"});
    }
    {
        SqueueSaying squeue("echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1");
        const CopyReaders readers = look_at_readers(tier.get(), l.here, "43", true);
        BOOST_TEST(!readers.known);  // every mark counts as a running reader
        BOOST_TEST(readers.live_of("mutable") == 1u);
        BOOST_TEST(readers.live_of(".version-mutable-40-1") == 1u);
    }
}

BOOST_AUTO_TEST_CASE(the_sweep_removes_earlier_copies_no_running_job_reads)
{
    test::TempDir dir;
    const Layouts l(dir.path());
    const Fd tier(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
    for (const char* copy : {"mutable", ".version-mutable-40-1", ".version-mutable-50-2", ".version-other-3"}) {
        ::mkdir((dir / copy).c_str(), 0700);
        dir.write(std::string(copy) + "/f.bin", "x");
    }
    add_reader(tier.get(), l.layout, l.here, "42", {"mutable", dir / "mutable"});
    StageItem item;
    item.dataset.name = "mutable";
    CopyReaders unknown;
    unknown.known = false;
    sweep_old_copies(tier.get(), item, l.layout, l.here, ".version-mutable-50-2", unknown);
    BOOST_TEST(exists(dir / "mutable"));  // Slurm did not answer: nothing goes
    CopyReaders readers;
    BOOST_TEST(other_copies_exist(tier.get(), l.here, ".version-mutable-50-2"));
    readers.live[".version-mutable-40-1"] = 1;
    readers.ended = {"42"};
    sweep_old_copies(tier.get(), item, l.layout, l.here, ".version-mutable-50-2", readers);
    BOOST_TEST(!exists(dir / "mutable"));
    BOOST_TEST(!exists(dir / ".readers-mutable/42"));
    BOOST_TEST(exists(dir / ".version-mutable-40-1/f.bin"));  // still read
    BOOST_TEST(exists(dir / ".version-mutable-50-2/f.bin"));  // the current one
    BOOST_TEST(exists(dir / ".version-other-3/f.bin"));       // another dataset's name
}

BOOST_AUTO_TEST_SUITE_END()
