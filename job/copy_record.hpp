// The record of a copy in a shared tier: the ready marker every job of its
// user reads (DLSTAGE_<NAME> comes from its path), plus what the next job
// needs to decide whether it may reuse the copy without reading the source
// (policies/shared_copy.hpp), and what `dlstage status --dataset` and the
// submit-time purge warning show.  Written by the stager, as the user, in
// the user's tier directory (.ready-NAME.toml, replaced atomically).
//
// It is the user's file: root code and `dlstage status` run by an admin
// read it as text to show, never as a reason to act.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "config/config.hpp"
#include "job/job_layout.hpp"

namespace dlstage {

struct CopyRecord {
    ReadyMarker ready;          // dataset, tier, source, path, bytes, files
    std::string identity;       // the source's identity when copied (hex)
    std::string mode;           // "copy" or "extract"
    std::uint64_t entries = 0;  // entries the copy holds (its contents file)
    std::int64_t made = 0;      // when it was staged
    std::string made_by;        // by which job
    std::uint64_t uses = 0;     // jobs that used it, the staging one included
    std::int64_t last_use = 0;
    std::string last_job;
    std::int64_t oldest = 0;     // the oldest file's purge clock at the last check (0: unknown)
    std::uint64_t repaired = 0;  // files fetched again after a purge, over its life
    // Node caches: the copy's directory's ctime (ns since the epoch) once
    // it was complete and in place.  No entry of an untouched copy has a
    // later ctime, and no user can set a ctime back: one that is later was
    // written, chmod'ed, or had entries added or removed since.  0: none.
    std::int64_t sealed_ns = 0;
    // The scan time of the manifest the copy was last made or checked from
    // (0: from a walk of the source).  Submit compares it with the manifest
    // now, to tell a copy of a source scanned again (policies/two_hop).
    std::int64_t checked_scan = 0;
    // Two-hop copies: when a job's nodes found the copy changed since its
    // mover job made or checked it (stager/copies/via_check; 0: not since).  The
    // next submission then gets a mover job, which repairs the copy and
    // clears it: the record stays, so that only what changed is fetched.
    std::int64_t found_changed = 0;
};

toml::table copy_record_table(const CopyRecord& record);

// Throws Error naming `name` when fields are missing or malformed.
CopyRecord copy_record_of(const toml::table& table, const std::string& name);

// The record at path, or nothing when there is none.  Throws Error when it
// exists but is not a regular file of a readable record, or is not the
// caller's (someone else put it in the caller's directory); never blocks on
// a fifo, never follows a symlink at its end.
std::optional<CopyRecord> read_copy_record(const std::string& path);

// What an unfinished copy (.partial-NAME) is a copy of, written when a
// staging begins and removed when the copy is published
// (.resume-NAME.toml): the next attempt (a requeued job, the next job
// after a time limit) goes on from what the partial copy holds when it
// copies the same source the same way (policies/shared_copy: may_resume).
struct ResumeRecord {
    std::string identity;  // the source's identity when the copy began
    // No identity (its walk had not ended when the copy began): the walked
    // list (.walked-NAME, plan segments one after another) says what the
    // copy copies, entry by entry.
    bool walked = false;
    std::string mode;            // "copy" or "extract"
    std::int64_t began = 0;      // when the first attempt began
    std::string began_by;        // its job
    std::uint64_t attempts = 1;  // attempts so far, this one included
};

toml::table resume_record_table(const ResumeRecord& record);
// The record at path, nothing when there is none; Error as read_copy_record.
std::optional<ResumeRecord> read_resume_record(const std::string& path);

// A job's mark that it reads a shared copy in place (.readers-NAME/JOB,
// written by the stager as the user, stager/copies/copy_readers): the copy's name
// in the tier directory (NAME, or .version-NAME-... for one made beside
// it), and the path the job was given (DLSTAGE_NAME: the copy, or its one
// file).  Each job step exports that path (spank/slurmstepd), so a later
// step reads the copy the mark keeps alive, not a newer one.
struct ReaderMark {
    std::string copy;
    std::string path;
};
std::string reader_mark_text(const ReaderMark& mark);
// Nothing when the text is not a whole mark.
std::optional<ReaderMark> reader_mark_of(const std::string& text);
// The mark `job` left in readers_dir (a path), as the user: nothing when
// there is none, or it is not the caller's or not whole.
std::optional<ReaderMark> read_reader_mark(const std::string& readers_dir, const std::string& job);

// Where a user's copy of a dataset lives in a shared tier, as status and
// submit find it: the tier path expanded for the user (no %j, no %n in a
// kept shared tier).
std::string copy_record_path(const Tier& tier, const std::string& dataset, const std::string& user);

}  // namespace dlstage
