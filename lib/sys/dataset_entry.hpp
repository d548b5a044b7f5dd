// What an entry a walk found may be in a dataset, for walks that keep their
// own compact record of it (the stager's plan) instead of walk_dataset's
// WalkedEntry: a symlink is an entry of its own (its target read, never
// followed); a file must be readable by the caller; a device, fifo or
// socket is refused.  walk_dataset applies it too.
#pragma once

#include <string>

#include "lib/sys/dataset_walk.hpp"

namespace dlstage {

// The symlink's target for a symlink, "" for anything else it accepts.
// Throws Error "cannot read PATH: ..." or naming what the entry is.
std::string check_dataset_entry(const FoundEntry& found, const std::string& root);

}  // namespace dlstage
