#include "stager/extract/extract_budget.hpp"

#include "lib/error.hpp"

namespace dlstage::stager {

namespace {
bool passes(std::uint64_t used, std::uint64_t n, const policy::ExtractionLimit& limit)
{
    return limit.most && (used > *limit.most || n > *limit.most - used);
}
}  // namespace

void ExtractBudget::add(std::atomic<std::uint64_t>& used, std::uint64_t n, const policy::ExtractionLimit& limit,
                        const std::string& archive)
{
    // A compare-and-swap loop rather than fetch_add: the count never passes
    // the limit, so every thread that would pass it is refused, and it
    // cannot wrap around.
    std::uint64_t now = used.load();
    do {
        if (passes(now, n, limit)) {
            spent_ = true;
            throw Error(limit.reason(archive));
        }
    } while (!used.compare_exchange_weak(now, now + n));
}

void ExtractBudget::check_room(std::uint64_t bytes, std::uint64_t entries, const std::string& archive) const
{
    if (passes(bytes_, bytes, limits_.bytes))
        throw Error(limits_.bytes.reason(archive));
    if (passes(entries_, entries, limits_.entries))
        throw Error(limits_.entries.reason(archive));
}

void ExtractBudget::restart()
{
    bytes_ = 0;
    entries_ = 0;
    spent_ = false;
}

}  // namespace dlstage::stager
