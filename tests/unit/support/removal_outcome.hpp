// A tree removal's outcome as one string, so that a test compares it whole.
#pragma once

#include <string>

#include "lib/sys/tree_remover.hpp"

namespace dlstage::test {

// "removed=N" and one line per problem.
inline std::string outcome(const RemoveResult& result)
{
    std::string text = "removed=" + std::to_string(result.removed);
    for (const std::string& problem : result.problems)
        text += "\n" + problem;
    return text;
}

}  // namespace dlstage::test
