// A SpankApi for unit tests: the facts a context would get from Slurm,
// and the messages the plugin would have logged.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "spank/spank_api.hpp"

namespace dlstage::test {

class FakeSpank final : public spank::SpankApi {
public:
    spank::Context ctx = spank::Context::Allocator;
    std::optional<std::string> stage_data;
    std::optional<std::uint32_t> id = 42;
    std::optional<std::uint32_t> uid = 1000;
    std::optional<std::uint32_t> gid = 1000;
    std::optional<std::uint32_t> nnodes = 3;
    bool batch_step = false;
    std::map<std::string, std::string> env;  // getenv(); setenv() writes here too
    std::map<std::string, std::string> control_env;
    std::map<std::string, std::string> client_options;  // client_option()
    std::vector<std::string> errors;
    std::vector<std::string> infos;
    std::vector<std::string> verboses;
    struct Run {
        std::vector<std::string> argv;
        std::vector<std::string> env;
    };
    std::vector<Run> runs;
    int run_status = 0;
    std::vector<std::vector<std::string>> started;  // start(): commands started beside the client

    spank::Context context() const override { return ctx; }
    std::optional<std::string> stage_data_option() override { return stage_data; }
    std::optional<std::uint32_t> job_id() override { return id; }
    std::optional<std::uint32_t> job_uid() override { return uid; }
    std::optional<std::uint32_t> job_gid() override { return gid; }
    std::optional<std::uint32_t> job_nnodes() override { return nnodes; }
    bool is_batch_step() override { return batch_step; }
    std::vector<std::string> job_env() override
    {
        std::vector<std::string> out;
        for (const auto& [k, v] : env)
            out.push_back(k + "=" + v);
        return out;
    }
    bool setenv(const std::string& name, const std::string& value) override
    {
        env[name] = value;
        return true;
    }
    bool unsetenv(const std::string& name) override
    {
        env.erase(name);
        return true;
    }
    bool job_control_setenv(const std::string& name, const std::string& value) override
    {
        control_env[name] = value;
        return true;
    }
    int run(const std::vector<std::string>& argv, const std::vector<std::string>& run_env) override
    {
        runs.push_back({argv, run_env});
        return run_status;
    }
    bool start(const std::vector<std::string>& argv) override
    {
        started.push_back(argv);
        return true;
    }
    std::string getenv(const std::string& name) override
    {
        const auto it = env.find(name);
        return it == env.end() ? "" : it->second;
    }
    std::optional<std::string> client_option(const std::string& name) override
    {
        const auto it = client_options.find(name);
        return it == client_options.end() ? std::nullopt : std::optional<std::string>(it->second);
    }
    bool set_client_option(const std::string& name, const std::string& value) override
    {
        client_options[name] = value;
        return true;
    }
    void error(const std::string& message) override { errors.push_back(message); }
    void info(const std::string& message) override { infos.push_back(message); }
    void verbose(const std::string& message) override { verboses.push_back(message); }
    std::string printed;
    std::optional<int> ended;  // end_client's status
    void print(const std::string& text) override { printed += text; }
    void end_client(int status) override { ended = status; }
};

}  // namespace dlstage::test
