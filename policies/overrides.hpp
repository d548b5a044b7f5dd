// Which limits a job's tier has: a tier's own keys, changed by the
// [[overrides]] tables that match the job (partition, account, Unix group,
// user).  One order, most specific first:
//   1. a table with more match keys beats one with fewer;
//   2. with as many, the one whose most specific key is more specific,
//      user > group > account > partition (a user's own table beats their
//      group's, a group's beats an account's, an account's a partition's);
//   3. with the same match keys, the later table in the file wins.
// Each key is decided on its own: a partition's max_bytes and a user's
// max_inodes both apply.  A fact not known (the partition at submit when the
// job names none) matches no table that asks for it; the node, which knows,
// decides again with the same function.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "facts/config_model.hpp"

namespace dlstage::policy {

// What is known of a job where the question is asked (job/job_identity
// gathers it at submit, on the node, and for check-config --explain).
struct JobIdentity {
    std::optional<std::string> partition;  // nothing: not known here
    std::optional<std::string> account;
    std::optional<std::string> user;
    std::vector<std::string> groups;  // the user's Unix groups, by name

    // "partition=gpu, account=(unknown), user=alice, groups=alice,users"
    std::string str() const;
};

bool matches(const Override& rule, const JobIdentity& job);

// Larger is more specific (rules 1 and 2 above).
int specificity(const Override& rule);

// The tier as this job gets it; origin names the table behind each
// overridden key.
Tier effective_tier(const Config& config, const Tier& tier, const JobIdentity& job);

// The configuration with every tier as this job gets it: what submit, the
// prolog, `dlstage stage` and the stager resolve requests against.
Config config_for_job(const Config& config, const JobIdentity& job);

// One tier key for check-config --explain: its value as written and where
// it comes from ("default", "tiers.shm", an override's label).
struct KeyValue {
    std::string key;
    std::string value;
    std::string origin;
};
std::vector<KeyValue> explain_tier(const Tier& tier);

}  // namespace dlstage::policy
