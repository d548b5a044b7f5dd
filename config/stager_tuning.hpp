// What a job may tune about how the stager moves its data, and the rules for
// each knob.  Users set the knobs as DLSTAGE_* variables in the job's
// environment; `dlstage stage` checks them before it launches anything and
// passes them on as dlstage-stager options, which the stager checks again
// (it can be started by hand).  One table, so both accept the same values.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace dlstage {

// Ring: the pipelined ring (stager/transfer/exchange.hpp).  Bcast: one MPI_Bcast per
// chunk, the baseline the benchmark measures.
enum class ExchangeScheme { Ring, Bcast };

struct StagerTuning {
    ExchangeScheme scheme = ExchangeScheme::Ring;
    std::uint64_t chunk_size = 4ull << 20;
    unsigned window = 16;  // chunks in flight per rank: memory = window x chunk_size
    unsigned readers = 4;  // reading threads per rank (each its own stream)
    // Source files a rank opens at once, shared out among its readers: on a
    // parallel file system every open is a metadata round trip, and chunks
    // of small files are opens more than bytes.
    unsigned opens = 32;
    unsigned writers = 4;               // writing threads per rank
    std::uint64_t read_rate_limit = 0;  // source bytes/s per rank; 0: unlimited
    double progress_interval = 5.0;     // seconds between progress lines
};

struct TuningKnob {
    std::string_view variable;  // "DLSTAGE_WINDOW"
    std::string_view option;    // "--window"
    // Parses value strictly into its field of tuning; throws Error
    // "invalid value 'V': expected ..." (the caller names the knob).
    void (*set)(std::string_view value, StagerTuning& tuning);
};

// Every knob, in the order `dlstage stage` passes them on.
const std::vector<TuningKnob>& tuning_knobs();

// The knob of a stager option, or nullptr.
const TuningKnob* find_tuning_knob(std::string_view option);

// How many files one of the tuning's readers opens at once (at least one).
unsigned opens_per_reader(const StagerTuning& tuning);

}  // namespace dlstage
