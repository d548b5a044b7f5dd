#include "spank/plugin_args.hpp"

#include "lib/error.hpp"
#include "lib/strings.hpp"

#ifndef DLSTAGE_BINDIR
#define DLSTAGE_BINDIR "/usr/bin"
#endif

namespace dlstage::spank {

std::string PluginArgs::default_dlstage_path()
{
    return std::string(DLSTAGE_BINDIR) + "/dlstage";
}

PluginArgs parse_plugin_args(const std::vector<std::string>& args)
{
    static const std::vector<std::string> known = {"config", "dlstage"};
    PluginArgs parsed;
    for (const std::string& arg : args) {
        const std::size_t eq = arg.find('=');
        if (eq == std::string::npos || eq == 0)
            throw Error("plugstack.conf argument " + quoted(arg) +
                        " must be key=value (known keys: " + join(known, ", ") + ")");
        const std::string key = arg.substr(0, eq);
        const std::string value = arg.substr(eq + 1);
        if (key != "config" && key != "dlstage")
            throw Error("unknown plugstack.conf argument " + quoted(key) + did_you_mean(key, known) +
                        " (known keys: " + join(known, ", ") + ")");
        if (value.empty() || value.front() != '/')
            throw Error("plugstack.conf argument " + key + "= must be an absolute path, not " + quoted(value));
        (key == "config" ? parsed.config_path : parsed.dlstage_path) = value;
    }
    return parsed;
}

}  // namespace dlstage::spank
