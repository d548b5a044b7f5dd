#include "policies/node_faults.hpp"

#include <cerrno>
#include <cstring>

namespace dlstage::policy {

FaultVerdict blame_for_tier_error(TierPlace place, int err)
{
    if (place == TierPlace::Parent)
        return {Blame::Node, "the tier's parent directory is unusable on this node (is its file system mounted?)"};
    switch (err) {
    // What a user can bring about: a full tier, a quota, a crowded
    // directory, a busy node.  The job fails; the node is fine.
    case ENOSPC: return {Blame::Job, "the tier is full (no space or no inodes left)"};
    case EDQUOT: return {Blame::Job, "a disk quota is exceeded on the tier"};
    case EMLINK: return {Blame::Job, "the tier directory holds too many entries"};
    case EMFILE:
    case ENFILE: return {Blame::Job, "too many open files on the node right now"};
    case ENOMEM: return {Blame::Job, "the node is out of memory right now"};
    case ENAMETOOLONG: return {Blame::Job, "the job's path in the tier is too long"};
    // What only the node or its admins can cause.
    case EROFS: return {Blame::Node, "the tier's file system is read-only"};
    case EIO:
    case EUCLEAN: return {Blame::Node, "the tier's file system reports I/O errors or corruption"};
    case EACCES:
    case EPERM:
        return {Blame::Node, "root is denied access to the tier (root squash, immutable bit, security module?)"};
    case ESTALE:
    case ENODEV:
    case ENXIO: return {Blame::Node, "the tier's file system is gone or stale"};
    default:
        // Unknown: a user must never be able to drain a node, so the job
        // carries it; the log says which errno it was.
        return {Blame::Job, std::string("unexpected error (") + std::strerror(err) + ")"};
    }
}

}  // namespace dlstage::policy
