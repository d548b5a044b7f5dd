// What a walk down a tier does with a level it does not trust: the one
// word tier/tier_walk (which acts on it) and tier/safe_fs (whose callers
// choose it) share, below both.
#pragma once

namespace dlstage {

// The prolog moves such a level aside and makes its own; the others (a
// state_dir is the admin's, not to be moved) refuse it.
enum class Untrusted { MoveAside, Refuse };

}  // namespace dlstage
