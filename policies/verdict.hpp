// What every policy answers: may it, and why (one line).  A refusal's
// reason is what the user or admin reads; an allowance may say why too
// (a relaunch is announced in the job output).
#pragma once

#include <string>
#include <utility>

#include "lib/error.hpp"

namespace dlstage::policy {

struct Verdict {
    bool allowed = true;
    std::string reason;  // one line; always set when refused

    static Verdict allow(std::string why = "") { return {true, std::move(why)}; }
    static Verdict refuse(std::string why) { return {false, std::move(why)}; }
};

// For callers that stop at a refusal: throws Error with its reason.
inline void require(const Verdict& verdict)
{
    if (!verdict.allowed)
        throw Error(verdict.reason);
}

}  // namespace dlstage::policy
