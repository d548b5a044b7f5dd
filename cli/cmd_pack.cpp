// placeholder: being written
#include "cli/commands.hpp"
namespace dlstage::cli {
int cmd_pack(const GlobalOptions&, const std::vector<std::string>&) { return usage_error("pack: not built yet", "pack"); }
}  // namespace dlstage::cli
