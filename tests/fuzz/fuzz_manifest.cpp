// parse_manifest (dataset/manifest.hpp): any text is a manifest or a one-line
// dlstage::Error; no path it yields leaves the dataset, and what parses
// prints back to text that parses to the same.
#include "dataset/manifest.hpp"
#include "lib/error.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace dlstage;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text = fuzz::text_of(data, size);
    Manifest manifest;
    try {
        manifest = parse_manifest(text, "fuzz.manifest");
    } catch (const Error& e) {
        fuzz::expect_one_line(e.what(), text);
        return 0;
    }
    for (std::size_t i = 0; i < manifest.entries.size(); ++i) {
        const Entry e = manifest.entries[i];
        fuzz::expect(!e.path.empty() && e.path[0] != '/' && e.path != ".." && e.path.rfind("../", 0) != 0 &&
                         e.path.find("/../") == std::string::npos,
                     "an entry's path stays inside the dataset", text);
    }
    const std::string again = manifest_text(manifest);
    fuzz::expect(manifest_text(parse_manifest(again, "again")) == again,
                 "a parsed manifest prints back to text that parses to the same", text);
    return 0;
}
