// How a prolog's or an epilog's time (site.prolog_epilog_timeout) is shared
// among its node cache steps, so that every step at its bound at once still
// ends within it: a job array pinned to a node that evicts huge entries
// must not make other users' prologs end "did not finish".  Facts in
// (the time), shares out; spank/prolog_epilog keeps one deadline for the
// sum and gives each step its share or what is left, whichever is less.
#pragma once

namespace dlstage::policy {

struct CacheBudget {
    double measure = 0;     // every user's directory measured, without the lock
    double probe = 0;       // the job's sources sized as its user, all of them
    double lock_wait = 0;   // waiting for the node's cache lock, once
    double under_lock = 0;  // under it: the use recorded, measuring again, evicting

    double total() const { return measure + probe + lock_wait + under_lock; }
};

// The shares of `prolog_seconds`: their sum leaves the rest of the prolog
// (its directories and records) and the bounded child's reaping (a fifth
// of its time, at most 2 s: lib/sys/bounded) their time, and a waiter for
// the lock outlasts any one holder's time under it (a prolog's, an
// epilog's or gc's, which holds it as long at most).
CacheBudget cache_budget(double prolog_seconds);

}  // namespace dlstage::policy
