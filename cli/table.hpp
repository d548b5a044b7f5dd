// The commands' tables are lib/text_table.hpp's (the plugin prints one too).
#pragma once

#include "lib/text_table.hpp"

namespace dlstage::cli {
using dlstage::print_aligned;
}  // namespace dlstage::cli
