// What extraction has written into one destination so far, against the
// limits policy::extraction_budget decided.  Shared by the threads that
// extract shards into the same directory: each adds what it is about to
// write and throws instead of writing when that would pass a limit.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "policies/admission.hpp"

namespace dlstage::stager {

class ExtractBudget {
public:
    ExtractBudget() = default;  // no limits
    explicit ExtractBudget(policy::ExtractionBudget limits) : limits_(std::move(limits)) {}
    ExtractBudget(const ExtractBudget&) = delete;
    ExtractBudget& operator=(const ExtractBudget&) = delete;

    // Counts n more file bytes or entries from archive; throws Error with the
    // limit's reason, counting nothing, if that would pass the limit.
    void add_bytes(std::uint64_t n, const std::string& archive) { add(bytes_, n, limits_.bytes, archive); }
    void add_entries(std::uint64_t n, const std::string& archive) { add(entries_, n, limits_.entries, archive); }

    // Throws as add_* would for this much more, counting nothing: for an
    // image whose expanded size is known before it is unpacked.
    void check_room(std::uint64_t bytes, std::uint64_t entries, const std::string& archive) const;

    // Back to nothing written: the destination was emptied to start over.
    void restart();

    std::uint64_t bytes() const { return bytes_; }
    std::uint64_t entries() const { return entries_; }
    // An add_* was refused: the error thrown was a limit's, not the archive's.
    bool spent() const { return spent_; }

private:
    void add(std::atomic<std::uint64_t>& used, std::uint64_t n, const policy::ExtractionLimit& limit,
             const std::string& archive);

    policy::ExtractionBudget limits_;
    std::atomic<std::uint64_t> bytes_{0};
    std::atomic<std::uint64_t> entries_{0};
    std::atomic<bool> spent_{false};
};

}  // namespace dlstage::stager
