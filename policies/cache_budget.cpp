#include "policies/cache_budget.hpp"

namespace dlstage::policy {

CacheBudget cache_budget(double prolog_seconds)
{
    // 75% in all: with the reaping's 20% at most, 5% or more is left for
    // the job's directories and the records.
    CacheBudget budget;
    budget.measure = 0.20 * prolog_seconds;
    budget.probe = 0.10 * prolog_seconds;
    budget.lock_wait = 0.25 * prolog_seconds;
    budget.under_lock = 0.20 * prolog_seconds;
    return budget;
}

}  // namespace dlstage::policy
