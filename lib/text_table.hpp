// Plain-text tables for listings (the command's catalog and status, the
// plugin's --stage-data=help): columns aligned, two spaces apart, the last
// one not padded.
#pragma once

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

namespace dlstage {

inline void print_aligned(std::ostream& out, const std::vector<std::vector<std::string>>& rows)
{
    std::vector<std::size_t> width;
    for (const auto& row : rows) {
        width.resize(std::max(width.size(), row.size()), 0);
        for (std::size_t c = 0; c < row.size(); ++c)
            width[c] = std::max(width[c], row[c].size());
    }
    for (const auto& row : rows) {
        std::string line;
        for (std::size_t c = 0; c < row.size(); ++c)
            line += c + 1 < row.size() ? row[c] + std::string(width[c] - row[c].size() + 2, ' ') : row[c];
        line.erase(line.find_last_not_of(' ') + 1);  // an empty last column leaves no trailing blanks
        out << line << "\n";
    }
}

}  // namespace dlstage
