// parse_manifest (stager/manifest.hpp): any text is a manifest or a one-line
// dlstage::Error; no path it yields leaves the dataset, and what parses
// prints back to text that parses to the same.
#include "lib/error.hpp"
#include "stager/manifest.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace dlstage;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text = fuzz::text_of(data, size);
    stager::Manifest manifest;
    try {
        manifest = stager::parse_manifest(text, "fuzz.manifest");
    } catch (const Error& e) {
        fuzz::expect_one_line(e.what(), text);
        return 0;
    }
    for (const stager::Entry& e : manifest.plan.entries)
        fuzz::expect(!e.path.empty() && e.path[0] != '/' && e.path != ".." && e.path.rfind("../", 0) != 0 &&
                         e.path.find("/../") == std::string::npos,
                     "an entry's path stays inside the dataset", text);
    const std::string again = stager::manifest_text(manifest);
    fuzz::expect(stager::manifest_text(stager::parse_manifest(again, "again")) == again,
                 "a parsed manifest prints back to text that parses to the same", text);
    return 0;
}
