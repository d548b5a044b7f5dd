// What `dlstage gc` was asked, and what one part of it (a tier, a node
// cache, or the records) did: lines for stdout and stderr, and counts.  A
// part runs in a bounded child and sends its outcome back as TOML text.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include <toml++/toml.h>

namespace dlstage {

struct GcRequest {
    bool dry_run = false;
    bool verbose = false;  // also say what is kept and why
    std::string node;      // this node's name in Slurm
    std::string tier;      // only this tier (records are then left alone); empty: all
};

struct GcOutcome {
    toml::array out;
    toml::array err;
    std::int64_t removed = 0;
    std::int64_t kept = 0;
    std::int64_t problems = 0;
    // A node cache's part: the node features of the entries it found whole
    // and kept, and of those it evicted (tier/cache_features); whether it
    // found every entry (else its features may only be added).
    toml::array features;
    toml::array features_gone;
    bool features_known = false;

    std::string text() const
    {
        std::ostringstream o;
        o << toml::table{{"out", out},
                         {"err", err},
                         {"removed", removed},
                         {"kept", kept},
                         {"problems", problems},
                         {"features", features},
                         {"features_gone", features_gone},
                         {"features_known", features_known}};
        return o.str();
    }
};

}  // namespace dlstage
