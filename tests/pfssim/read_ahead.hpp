// The mount's kernel readahead (--read-ahead-kb): found before the FUSE
// loop starts, set on the first request after INIT.
#pragma once

#include <mutex>

namespace pfssim {

// Finds our mount's backing device (/sys/class/bdi/MAJ:MIN) in
// /proc/self/mountinfo; call after mounting, before the loop runs.
void find_bdi();

// Sets the mount's read_ahead_kb; called once, through g_read_ahead_once.
void set_read_ahead();
extern std::once_flag g_read_ahead_once;

}  // namespace pfssim
