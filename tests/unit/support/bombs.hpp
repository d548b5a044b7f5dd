// Archives that expand far past their size, and budgets to stop them, for
// the extraction tests.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policies/admission.hpp"

namespace dlstage::test {

constexpr std::uint64_t kMiB = 1ull << 20;

// Limits with plain words: "too many bytes while extracting ARCHIVE; do less".
inline policy::ExtractionBudget limits(std::optional<std::uint64_t> bytes, std::optional<std::uint64_t> entries)
{
    policy::ExtractionBudget budget;
    budget.bytes = {bytes, "too many bytes", "do less"};
    budget.entries = {entries, "too many entries", "do fewer"};
    return budget;
}

// A gzip'd tar of files named names, each `size` zero bytes: a megabyte of
// zeros compresses to about a kilobyte.
inline void write_zeros_tgz(const std::string& path, const std::vector<std::string>& names, std::uint64_t size)
{
    archive* a = archive_write_new();
    BOOST_REQUIRE(archive_write_set_format_pax_restricted(a) == ARCHIVE_OK);
    BOOST_REQUIRE(archive_write_add_filter_gzip(a) == ARCHIVE_OK);
    BOOST_REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
    const std::string zeros(kMiB, '\0');
    for (const std::string& name : names) {
        archive_entry* e = archive_entry_new();
        archive_entry_set_pathname(e, name.c_str());
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, static_cast<la_int64_t>(size));
        BOOST_REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
        for (std::uint64_t left = size; left > 0;) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, zeros.size()));
            BOOST_REQUIRE(archive_write_data(a, zeros.data(), n) == static_cast<la_ssize_t>(n));
            left -= n;
        }
        archive_entry_free(e);
    }
    BOOST_REQUIRE(archive_write_close(a) == ARCHIVE_OK);
    archive_write_free(a);
}

// "prefix0", "prefix1", ...
inline std::vector<std::string> numbered(const std::string& prefix, int count)
{
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i)
        names.push_back(prefix + std::to_string(i));
    return names;
}

}  // namespace dlstage::test
