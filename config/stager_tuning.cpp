#include "config/stager_tuning.hpp"

#include <algorithm>
#include <limits>

#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"

namespace dlstage {

namespace {
constexpr unsigned kMaxThreadsOrWindow = 256;

unsigned count_from_1_to_256(std::string_view value)
{
    return static_cast<unsigned>(parse_count(value, 1, kMaxThreadsOrWindow));
}

ExchangeScheme scheme_named(std::string_view value)
{
    const std::string name = trim(value);
    if (name == "ring")
        return ExchangeScheme::Ring;
    if (name == "bcast")
        return ExchangeScheme::Bcast;
    throw Error("invalid value " + quoted(value) + ": expected ring or bcast");
}
}  // namespace

const std::vector<TuningKnob>& tuning_knobs()
{
    // A chunk travels as one MPI message and window x chunk_size bytes are
    // held per rank; below 64 KiB/s a rate limit is a missing unit, not a wish
    // (a slow, gentle rate such as 200K is a wish).
    static const std::vector<TuningKnob> knobs = {
        {"DLSTAGE_CHUNK_SIZE", "--chunk-size",
         [](std::string_view v, StagerTuning& t) { t.chunk_size = parse_size(v, 4ull << 10, 1ull << 30); }},
        {"DLSTAGE_WINDOW", "--window", [](std::string_view v, StagerTuning& t) { t.window = count_from_1_to_256(v); }},
        {"DLSTAGE_READERS", "--readers",
         [](std::string_view v, StagerTuning& t) { t.readers = count_from_1_to_256(v); }},
        {"DLSTAGE_OPENS", "--opens", [](std::string_view v, StagerTuning& t) { t.opens = count_from_1_to_256(v); }},
        {"DLSTAGE_WRITERS", "--writers",
         [](std::string_view v, StagerTuning& t) { t.writers = count_from_1_to_256(v); }},
        {"DLSTAGE_RATE_LIMIT", "--rate-limit",
         [](std::string_view v, StagerTuning& t) {
             t.read_rate_limit = parse_size(v, 64ull << 10, std::numeric_limits<std::uint64_t>::max());
         }},
        {"DLSTAGE_PROGRESS", "--progress",
         [](std::string_view v, StagerTuning& t) { t.progress_interval = parse_seconds(v, 0.1, 86400); }},
        {"DLSTAGE_EXCHANGE", "--exchange", [](std::string_view v, StagerTuning& t) { t.scheme = scheme_named(v); }},
    };
    return knobs;
}

const TuningKnob* find_tuning_knob(std::string_view option)
{
    const auto& knobs = tuning_knobs();
    const auto it =
        std::find_if(knobs.begin(), knobs.end(), [&](const TuningKnob& knob) { return knob.option == option; });
    return it == knobs.end() ? nullptr : &*it;
}

unsigned opens_per_reader(const StagerTuning& tuning)
{
    const unsigned readers = std::max(1u, tuning.readers);
    return std::max(1u, (tuning.opens + readers - 1) / readers);
}

}  // namespace dlstage
