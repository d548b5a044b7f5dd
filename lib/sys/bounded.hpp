// Root code that must end in time, whatever a user left on the node.
//
// The prolog and epilog touch directories users control.  A stat into a
// FUSE mount whose server is stopped, or a hung network file system,
// blocks a process until the server answers; if that process is slurmd's
// job script, Slurm drains the node once PrologEpilogTimeout passes.  So
// that work runs in a child process with a time limit: on time out the
// child is killed (FUSE waits end on SIGKILL) and the caller logs what was
// left, instead of hanging.
//
// A child stuck in such a wait survives even SIGKILL until the server
// answers, which a hostile user's server never does.  So the child keeps
// no descriptor of its parent's but its result pipe (its standard ones
// point at /dev/null): whatever lock or pipe the caller holds, a stuck
// child holds none of it, and the caller's own callers are not kept
// waiting for an end of file.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace dlstage {

struct BoundedOutcome {
    enum class Status { Done, TimedOut, Failed };
    Status status = Status::Done;
    std::string output;   // Done: what the work returned
    std::string problem;  // TimedOut / Failed: one line
    // run_bounded_parts: the parts the work sent that arrived whole, in
    // order, whatever the status (a part is sent once it is final).
    std::vector<std::string> parts;
};

// Runs work() in a forked child and returns its result, or TimedOut after
// `seconds` (the child is then killed).  An exception in the child, or the
// child dying, is Failed with its reason.  The child never returns into the
// caller's code: it leaves with _exit, so no destructors or atexit handlers
// of the parent's objects run twice.  Logging must happen in the caller:
// the child may have inherited a lock another thread held at fork.  work()
// must open what it uses itself: descriptors the caller opened are closed
// in the child.
BoundedOutcome run_bounded(double seconds, const std::function<std::string()>& work);

// As run_bounded, but work() may send parts of its answer as it goes
// (`send`), so that what it finished counts when its time runs out before
// all of it does: root measuring a user's directory keeps the entries
// measured whole.
using SendPart = std::function<void(const std::string&)>;
BoundedOutcome run_bounded_parts(double seconds, const std::function<std::string(const SendPart& send)>& work);

}  // namespace dlstage
