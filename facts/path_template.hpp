// Tier path templates: "/dev/shm/dlstage/%j" with %j (job id), %u (user
// name), %n (node name) and %% (a literal %).
//
// Expansion happens here and nowhere else, because it guards root code: a
// value that would make the path leave the tier root (empty, ".", "..", a
// "/" inside it) is refused rather than sanitised.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dlstage {

struct TemplateValues {
    std::string job_id;
    std::string user;
    std::string node;
};

class PathTemplate {
public:
    PathTemplate() = default;

    // Checks the template itself: absolute, only known % escapes, no "." or
    // ".." components, and a fixed root of at least one directory below "/"
    // before the first component that holds an escape.  Throws Error.
    static PathTemplate parse(std::string_view text);

    const std::string& text() const { return text_; }

    // The fixed directory the expanded paths live under ("/dev/shm/dlstage"
    // for "/dev/shm/dlstage/%j"): the deepest directory root code may touch.
    const std::string& root() const { return root_; }

    bool uses(char escape) const;  // uses('j'): does it contain %j?

    // The path for these values.  Throws Error naming the escape whose value
    // would leave the root.  Only the escapes used must be non-empty.
    std::string expand(const TemplateValues& values) const;

    // The components below root(), each the pattern of one directory level
    // ({"%j"} for "/dev/shm/dlstage/%j"): how `dlstage gc` finds the
    // directories a template made without knowing the values.
    std::vector<std::string> levels() const;

private:
    std::string text_;
    std::string root_;
};

// Whether `name`, one directory entry, is what `pattern` (one of levels())
// expands to for some values: %j a job id as Slurm writes it, %u any
// name, %n exactly `node`, %% a '%', anything else itself.  The job id
// it holds goes to *job_id when the pattern has %j (and job_id is given).
bool match_level(std::string_view pattern, std::string_view name, std::string_view node, std::string* job_id);

}  // namespace dlstage
