#include "stager/steps/phase_times.hpp"

#include <cstdio>

namespace dlstage::stager {

namespace {
constexpr std::array<const char*, kPhaseCount> kNames = {"plan",     "check",  "prepare", "skeleton",
                                                         "transfer", "finish", "extract", "publish"};
}

void PhaseTimes::start()
{
    seconds_ = {};
    last_ = std::chrono::steady_clock::now();
}

void PhaseTimes::lap(Phase phase)
{
    const auto now = std::chrono::steady_clock::now();
    seconds_[static_cast<std::size_t>(phase)] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
}

PhaseTimes& stage_phases()
{
    static PhaseTimes times;
    return times;
}

std::string phases_text(const PhaseSeconds& seconds)
{
    std::string text;
    for (std::size_t i = 0; i < kPhaseCount; ++i) {
        char part[64];
        std::snprintf(part, sizeof part, "%s%s %.2f s", i == 0 ? "" : ", ", kNames[i], seconds[i]);
        text += part;
    }
    return text;
}

}  // namespace dlstage::stager
