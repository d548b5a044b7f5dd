#include "facts/path_template.hpp"

#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"

namespace dlstage {

namespace {
bool is_known_escape(char c)
{
    return c == 'j' || c == 'u' || c == 'n' || c == '%';
}

const std::string* value_of(char escape, const TemplateValues& values)
{
    switch (escape) {
    case 'j': return &values.job_id;
    case 'u': return &values.user;
    case 'n': return &values.node;
    default: return nullptr;
    }
}

std::string escape_meaning(char escape)
{
    switch (escape) {
    case 'j': return "%j (job id)";
    case 'u': return "%u (user name)";
    case 'n': return "%n (node name)";
    default: return "%%";
    }
}

// A value is safe when it stays one path component: not empty, not "." or
// "..", no "/" and no NUL.
void check_value(char escape, const std::string& value, const std::string& root)
{
    const char* why = nullptr;
    if (value.empty())
        why = "is empty";
    else if (value == "." || value == "..")
        why = "is a relative path component";
    else if (value.find('/') != std::string::npos)
        why = "contains '/'";
    else if (value.find('\0') != std::string::npos)
        why = "contains a NUL byte";
    if (why)
        throw Error(escape_meaning(escape) + " value " + quoted(value) + " " + why +
                    " and would escape the tier root " + root);
}
}  // namespace

PathTemplate PathTemplate::parse(std::string_view text)
{
    const std::string t(text);
    if (t.empty() || t.front() != '/')
        throw Error("path template " + quoted(t) + " must be an absolute path");
    for (std::size_t i = 0; i < t.size(); ++i) {
        if (t[i] != '%')
            continue;
        if (i + 1 >= t.size() || !is_known_escape(t[i + 1]))
            throw Error("path template " + quoted(t) + " has an unknown escape " + quoted(t.substr(i, 2)) +
                        " (known: %j, %u, %n, %%)");
        ++i;
    }

    PathTemplate result;
    result.text_ = t;
    std::string root;
    bool in_root = true;
    const auto components = split(std::string_view(t).substr(1), '/');
    for (std::size_t i = 0; i < components.size(); ++i) {
        const std::string& c = components[i];
        const bool last = i + 1 == components.size();
        if (c.empty() && !last)
            throw Error("path template " + quoted(t) + " has an empty component ('//')");
        if (c == "." || c == "..")
            throw Error("path template " + quoted(t) + " must not contain '.' or '..'");
        if (c.find('%') != std::string::npos)
            in_root = false;
        if (in_root && !c.empty())
            root += "/" + c;
    }
    if (root.empty())
        throw Error("path template " + quoted(t) +
                    " needs a fixed directory before the first escape, e.g. /dev/shm/dlstage/%j");
    result.root_ = root;
    return result;
}

bool PathTemplate::uses(char escape) const
{
    for (std::size_t i = 0; i + 1 < text_.size(); ++i) {
        if (text_[i] == '%') {
            if (text_[i + 1] == escape)
                return true;
            ++i;
        }
    }
    return false;
}

std::string PathTemplate::expand(const TemplateValues& values) const
{
    std::string out;
    for (std::size_t i = 0; i < text_.size(); ++i) {
        if (text_[i] != '%') {
            out += text_[i];
            continue;
        }
        const char escape = text_[++i];
        if (escape == '%') {
            out += '%';
            continue;
        }
        const std::string& value = *value_of(escape, values);
        check_value(escape, value, root_);
        out += value;
    }
    while (out.size() > 1 && out.back() == '/')
        out.pop_back();
    // Belt and braces: whatever the escapes held, the result must sit below
    // the root.  (A component like "a%j" with a safe value cannot climb.)
    if (out != root_ && !starts_with(out, root_ + "/"))
        throw Error("path " + quoted(out) + " would leave the tier root " + root_);
    return out;
}

std::vector<std::string> PathTemplate::levels() const
{
    std::vector<std::string> out;
    const std::vector<std::string> root_parts = split(std::string_view(root_).substr(1), '/');
    const std::vector<std::string> parts = split(std::string_view(text_).substr(1), '/');
    for (std::size_t i = root_parts.size(); i < parts.size(); ++i)
        if (!parts[i].empty())  // a trailing '/'
            out.push_back(parts[i]);
    return out;
}

namespace {
// Backtracking over the escapes: %j and %u may take any length.
bool match_from(std::string_view pattern, std::string_view name, std::string_view node, std::string* job_id)
{
    if (pattern.empty())
        return name.empty();
    if (pattern[0] != '%' || pattern.size() < 2)
        return !name.empty() && name[0] == pattern[0] && match_from(pattern.substr(1), name.substr(1), node, job_id);
    const char escape = pattern[1];
    const std::string_view rest = pattern.substr(2);
    if (escape == '%')
        return !name.empty() && name[0] == '%' && match_from(rest, name.substr(1), node, job_id);
    if (escape == 'n')
        return !node.empty() && name.substr(0, node.size()) == node &&
               match_from(rest, name.substr(node.size()), node, job_id);
    for (std::size_t len = name.size(); len >= 1; --len) {
        const std::string_view value = name.substr(0, len);
        if (escape == 'j' && !is_job_id(value))
            continue;
        if (value == "." || value == "..")
            continue;
        if (match_from(rest, name.substr(len), node, job_id)) {
            if (escape == 'j' && job_id)
                *job_id = std::string(value);
            return true;
        }
    }
    return false;
}
}  // namespace

bool match_level(std::string_view pattern, std::string_view name, std::string_view node, std::string* job_id)
{
    return match_from(pattern, name, node, job_id);
}

}  // namespace dlstage
