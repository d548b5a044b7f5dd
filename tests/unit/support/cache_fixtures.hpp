// A node cache for the tier/cache_* unit tests: a temporary tier whose
// user directory belongs to "nobody" (the measuring child becomes that
// user, as the prolog's does), a state_dir, and what the tests read back.
#pragma once

#include <chrono>
#include <pwd.h>
#include <set>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.hpp"
#include "tests/unit/support/safe_fs_fixtures.hpp"
#include "tier/cache_entry.hpp"
#include "tier/cache_measure.hpp"

namespace dlstage::test {

// <tmp>/tier/.cache/nobody/ as the prolog makes it, and a state_dir.
struct Cache {
    test::TempDir tmp;
    std::string root = tmp / "tier";
    std::string state = tmp / "state";
    const passwd* nobody = ::getpwnam("nobody");
    std::string user_dir = root + "/.cache/nobody";
    dlstage::Tier tier;

    Cache()
    {
        BOOST_REQUIRE(nobody);
        BOOST_REQUIRE(::chmod(tmp.path().c_str(), 0755) == 0);  // nobody walks down from here
        test::make_dir(root);
        test::make_dir(root + "/.cache");
        test::make_dir(user_dir, 0700);
        test::make_dir(state);
        give(user_dir);
        tier.name = "cache";
        tier.path = PathTemplate::parse(root + "/%j");
        tier.cleanup = Cleanup::Cache;
    }

    void give(const std::string& path) const
    {
        BOOST_REQUIRE(::chown(path.c_str(), nobody->pw_uid, nobody->pw_gid) == 0);
    }

    // A dataset's copy: a directory holding one file.
    void entry(const std::string& name) const
    {
        test::make_dir(user_dir + "/" + name);
        test::make_file(user_dir + "/" + name + "/f", std::string(5000, 'x'));
        give(user_dir + "/" + name);
        give(user_dir + "/" + name + "/f");
    }

    // The user's whole directory, not listed in time; their jobs here use
    // `kept`.
    NodeCacheEntry unlisted(std::set<std::string> kept = {}) const
    {
        NodeCacheEntry e = owned("");
        e.unlisted = true;
        e.measured = false;
        e.owner_uses = std::make_shared<OwnerUses>(OwnerUses{{}, std::move(kept)});
        return e;
    }

    NodeCacheEntry owned(const std::string& dataset) const
    {
        return entry_owned_by("nobody", nobody->pw_uid, nobody->pw_gid, dataset);
    }
};

// "DATASET FILES" per entry, then "problem: LINE" per problem.
inline std::string listing(const FoundCacheEntries& found)
{
    std::string text;
    for (const NodeCacheEntry& e : found.entries)
        text += e.dataset + " " + std::to_string(e.files) + (e.bytes >= (1u << 20) ? " large" : "") + "\n";
    for (const std::string& problem : found.problems)
        text += "problem: " + problem + "\n";
    return text;
}

inline double seconds_since(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace dlstage::test
