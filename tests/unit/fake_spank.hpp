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
    std::map<std::string, std::string> env;
    std::vector<std::string> errors;
    std::vector<std::string> infos;

    spank::Context context() const override { return ctx; }
    std::optional<std::string> stage_data_option() override { return stage_data; }
    std::optional<std::uint32_t> job_id() override { return id; }
    std::optional<std::uint32_t> job_uid() override { return uid; }
    std::string getenv(const std::string& name) override
    {
        const auto it = env.find(name);
        return it == env.end() ? "" : it->second;
    }
    void error(const std::string& message) override { errors.push_back(message); }
    void info(const std::string& message) override { infos.push_back(message); }
};

}  // namespace dlstage::test
