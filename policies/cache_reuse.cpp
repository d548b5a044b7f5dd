#include "policies/cache_reuse.hpp"

namespace dlstage::policy {

namespace {
// "2 entries missing, 1 entries changed since it was cached", ...
std::string miss_counts(const CacheHitFacts& f)
{
    std::string text;
    const auto add = [&](std::uint64_t n, const char* what) {
        if (n == 0)
            return;
        text += (text.empty() ? "" : ", ") + std::to_string(n) + " " + what;
    };
    add(f.missing - f.foreign, "entries missing");
    add(f.foreign, "entries not yours");
    add(f.changed, "entries changed since it was cached");
    add(f.wrong_size - f.changed, "files of another size");
    return text;
}
}  // namespace

Verdict cache_entry_usable(const CacheHitFacts& f)
{
    if (!f.record_problem.empty())
        return Verdict::refuse("its record is unreadable (" + f.record_problem + ")");
    if (!f.has_record)
        return Verdict::refuse("not in the node cache");
    if (!f.same_source)
        return Verdict::refuse("the source changed since it was cached");
    if (!f.sealed)
        return Verdict::refuse("its entry has no seal");
    if (!f.listed)
        return Verdict::refuse("its list of contents is missing or unreadable");
    if (!f.present)
        return Verdict::refuse("its entry is gone");
    if (!f.yours)
        return Verdict::refuse("its entry is not yours");
    if (!f.top_unchanged)
        return Verdict::refuse("entries were added, removed or renamed since it was cached");
    if (f.missing + f.wrong_size > 0)
        return Verdict::refuse(miss_counts(f));
    return Verdict::allow("every entry is there, yours, and unchanged since it was cached");
}

}  // namespace dlstage::policy
