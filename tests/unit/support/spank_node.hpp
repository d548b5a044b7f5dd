// A node for the plugin's context code: a tier and a state directory in a
// temporary directory, a trusted config naming them, and a fake SPANK seam.
// The job belongs to the caller, so the tests pass as root and as an
// ordinary user.
#pragma once

#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include <toml++/toml.h>

#include "job/state_record.hpp"
#include "spank/plugin_args.hpp"
#include "tests/unit/support/fake_spank.hpp"
#include "tests/unit/support/tmpdir.hpp"

namespace dlstage::test {

struct Node {
    test::TempDir dir;
    spank::PluginArgs args;
    test::FakeSpank api;

    explicit Node(const std::string& datasets = "[datasets.imagenet]\nsource = \"/p/imagenet\"\ntiers = [\"shm\"]\n")
    {
        api.ctx = spank::Context::JobScript;
        api.uid = getuid();
        api.gid = getgid();
        api.env = {{"SLURMD_NODENAME", "n2"}, {"SLURM_JOB_USER", "alice"}};
        mkdir((dir / "tier").c_str(), 0755);
        args.config_path = dir.write("dlstage.toml", "[site]\nstate_dir = \"" + dir / "state" + R"("
[tiers.shm]
path = ")" + dir / "tier/%u/%j" + R"("
)" + datasets);
        args.dlstage_path = "/opt/dlstage/bin/dlstage";
    }

    std::string job_dir() const { return dir / "tier/alice/42"; }
    toml::table record(const char* event) const
    {
        return read_record(node_record_path(dir / "state", "42", "n2", event));
    }
};

}  // namespace dlstage::test
