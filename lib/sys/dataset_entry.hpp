// What an entry a walk found may be in a dataset, for walks that keep their
// own compact record of it (the stager's plan) instead of walk_dataset's
// WalkedEntry: a symlink is an entry of its own (its target read, never
// followed); a file must be readable by the caller; a device, fifo or
// socket is refused.  walk_dataset applies it too.
#pragma once

#include <string>
#include <sys/stat.h>
#include <sys/types.h>
#include <vector>

#include "lib/sys/dataset_walk.hpp"

namespace dlstage {

// Who the calling process is when the kernel checks a permission: its
// effective uid and gid and its supplementary groups.
struct Caller {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;

    static Caller current();
};

// Whether an entry's permission bits alone let caller read it, as the
// kernel applies them: the owner's bits for its owner, the group's for a
// member of its group, the others' for everyone else.  A yes can still be
// refused by an ACL entry or a security module; a no can still be allowed
// by an ACL or a capability.
bool mode_lets_read(const struct stat& st, const Caller& caller);

// The symlink's target for a symlink, "" for anything else it accepts.
// Throws Error "cannot read PATH: ..." or naming what the entry is.
//
// Whether a file is readable is asked of the kernel (faccessat), unless
// trusted_reader is given and the file's mode lets that caller read it:
// the stager's plan of a million files saves a system call per file
// (about a quarter of its walk's CPU on a virtual machine), and its reads
// report the rare ACL that says no.
// dlstage pack always asks: mksquashfs stores an unreadable file as an
// empty one.
std::string check_dataset_entry(const FoundEntry& found, const std::string& root,
                                const Caller* trusted_reader = nullptr);

}  // namespace dlstage
