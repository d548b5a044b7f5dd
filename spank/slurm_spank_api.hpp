// SpankApi backed by the real spank_* calls.  Only plugin.cpp and this
// file see <slurm/spank.h>.
#pragma once

#include <stdint.h>  // spank.h needs the fixed-width types first

// spank.h has no extern "C" guard of its own: without this its callback
// prototypes get C++ linkage and clash with our extern "C" definitions.
extern "C" {
#include <slurm/slurm.h>  // SLURM_BATCH_SCRIPT
#include <slurm/spank.h>
}

#include "spank/spank_api.hpp"

namespace dlstage::spank {

// The --stage-data option, registered in every context.
struct spank_option* stage_data_option_entry();

// What the option callback saw in this process (client side).
void remember_stage_data(const char* value);

class SlurmSpankApi final : public SpankApi {
public:
    explicit SlurmSpankApi(spank_t handle) : handle_(handle) {}

    Context context() const override;
    std::optional<std::string> stage_data_option() override;
    std::optional<std::uint32_t> job_id() override;
    std::optional<std::uint32_t> job_uid() override;
    std::optional<std::uint32_t> job_gid() override;
    std::optional<std::uint32_t> job_nnodes() override;
    bool is_batch_step() override;
    std::string getenv(const std::string& name) override;
    std::vector<std::string> job_env() override;
    bool setenv(const std::string& name, const std::string& value) override;
    bool unsetenv(const std::string& name) override;
    std::optional<std::string> client_option(const std::string& name) override;
    bool set_client_option(const std::string& name, const std::string& value) override;
    bool job_control_setenv(const std::string& name, const std::string& value) override;
    int run(const std::vector<std::string>& argv, const std::vector<std::string>& env) override;
    bool start(const std::vector<std::string>& argv) override;
    void error(const std::string& message) override;
    void info(const std::string& message) override;
    void verbose(const std::string& message) override;
    void print(const std::string& text) override;
    void end_client(int status) override;

private:
    spank_t handle_;
};

}  // namespace dlstage::spank
