// Who is to blame when root code cannot prepare a job's directory: the
// node (slurmd drains it, so no more jobs land on a node that cannot take
// any) or the job (it fails with the reason; the node stays in service).
//
// Users can fill a tier's blocks or inodes, exceed a quota or leave odd
// files behind; none of that may take a node out of service.  Only what
// no user can cause drains: a tier whose parent directory is missing (a
// file system not mounted), a read-only or failing file system.
#pragma once

#include <string>

namespace dlstage::policy {

enum class Blame { Node, Job };

// Where in the tier the error happened.
enum class TierPlace {
    Parent,  // the directory holding the tier root: the admin's, e.g. /local
    Inside,  // the tier root or anything below it
};

struct FaultVerdict {
    Blame blame = Blame::Job;
    std::string reason;  // one line: what the errno means here
};

// err: the errno of the failed call.
FaultVerdict blame_for_tier_error(TierPlace place, int err);

}  // namespace dlstage::policy
