// The seam between the plugin's logic and Slurm's SPANK calls.
//
// plugin.cpp hands the context files a SpankApi backed by the real spank_*
// functions (slurm_spank_api.cpp); unit tests hand them a fake.  The
// context code therefore never includes <slurm/spank.h>.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dlstage::spank {

enum class Context { Local, Remote, Allocator, Slurmd, JobScript, Unknown };

class SpankApi {
public:
    virtual ~SpankApi() = default;

    virtual Context context() const = 0;

    // The value of --stage-data, or nothing when the job did not ask.
    virtual std::optional<std::string> stage_data_option() = 0;

    virtual std::optional<std::uint32_t> job_id() = 0;
    virtual std::optional<std::uint32_t> job_uid() = 0;

    // In job_script context the job's facts come from the process
    // environment (SLURMD_NODENAME, SLURM_JOB_USER); "" when unset.
    virtual std::string getenv(const std::string& name) = 0;

    // Logging; the "dlstage: " prefix is added here.  In the client this
    // is what the user reads; in slurmd it goes to the slurmd log.
    virtual void error(const std::string& message) = 0;
    virtual void info(const std::string& message) = 0;
};

}  // namespace dlstage::spank
