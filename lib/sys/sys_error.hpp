// The one form of a failed system call's message: "cannot ACTION THING:
// REASON", e.g. "cannot read /p/x/a.tar: Permission denied".  A path as
// THING goes as shown_path() shows it: plain, quoted only when it holds
// control bytes.
#pragma once

#include <string>

namespace dlstage {

// "cannot ACTION THING: strerror(err)" ("cannot ACTION: ..." when thing is
// empty).  Pass errno in directly: the text is made after it is read.
std::string cannot(const std::string& action, const std::string& thing, int err);

// Throws dlstage::Error with cannot(action, thing, err).
[[noreturn]] void throw_cannot(const std::string& action, const std::string& thing, int err);

}  // namespace dlstage
