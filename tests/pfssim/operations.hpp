// pfssim's FUSE operations: read-only, every metadata operation through
// the metadata slots, every read through the token buckets (model.hpp).
#pragma once

// libfuse 3.12 or newer; every pfssim file includes libfuse through here.
#define FUSE_USE_VERSION 312
#include <fuse.h>

namespace pfssim {

fuse_operations make_ops();

}  // namespace pfssim
