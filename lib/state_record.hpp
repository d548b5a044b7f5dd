// State records: small TOML files that the prolog, the stager and the
// epilog write about a job, and `dlstage status` reads (roadmap).  Each is
// written whole or not at all: a temporary file in the same directory,
// fsync, rename.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

namespace dlstage {

// <state_dir>/jobs/<job_id>
std::string job_state_dir(const std::string& state_dir, const std::string& job_id);

// <state_dir>/jobs/<job_id>/<node>.<event>.toml, e.g. n1.prolog.toml
std::string node_record_path(const std::string& state_dir, const std::string& job_id, const std::string& node,
                             const std::string& event);

// <state_dir>/jobs/<job_id>/user: made by the prolog for the job's user,
// where the stager (running as that user) writes what it is doing.
std::string job_user_dir(const std::string& state_dir, const std::string& job_id);

// <job user dir>/progress-<dataset>.toml
std::string progress_record_path(const std::string& state_dir, const std::string& job_id, const std::string& dataset);

// <job user dir>/failure-<node>.toml: why staging failed on a node, for
// when the launcher lost the stager's last words.
std::string failure_record_path(const std::string& state_dir, const std::string& job_id, const std::string& node);

// Which records of a job's user dir: progress-<dataset>.toml, failure-<node>.toml.
enum class UserRecord { Progress, Failure };

// The paths of this kind of record in the job's user dir, sorted; none if
// the dir is missing or not readable by the caller.
std::vector<std::string> user_record_paths(const std::string& state_dir, const std::string& job_id, UserRecord kind);

// Creates missing parent directories (mode 0755) and replaces the file
// atomically.  Throws Error naming the path.
void write_record(const std::string& path, const toml::table& record);

// Throws Error "cannot read state record PATH: ..." if the file cannot be
// read or parsed.
toml::table read_record(const std::string& path);

// A record's text, parsed; name is for messages.  Throws Error as read_record.
toml::table parse_record(std::string_view text, const std::string& name);

}  // namespace dlstage
