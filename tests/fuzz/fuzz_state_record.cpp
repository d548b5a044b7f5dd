// parse_record (job/state_record.hpp): any text is a table or a one-line
// dlstage::Error; nothing else escapes, and reading its fields is defined
// behaviour whatever they hold.
#include "job/job_layout.hpp"
#include "job/record_field.hpp"
#include "job/state_record.hpp"
#include "lib/error.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace dlstage;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text = fuzz::text_of(data, size);
    toml::table record;
    try {
        record = parse_record(text, "fuzz.toml");
    } catch (const Error& e) {
        fuzz::expect_one_line(e.what(), text);
        return 0;
    }
    // The fields the step reads from a ready marker, and dlstage status from
    // progress records, as they read them.
    try {
        const ReadyMarker marker = ready_marker_of(record, "fuzz.toml");
        fuzz::expect(!marker.path.empty(), "a ready marker has a path", text);
    } catch (const Error& e) {
        fuzz::expect_one_line(e.what(), text);
    }
    for (const char* key : {"nodes", "bytes_total", "bytes_done", "files_total", "time"})
        (void)integer_field(record, key);
    for (const char* key : {"elapsed_s", "bytes_per_s", "eta_s"})
        (void)record[key].value_or(0.0);
    return 0;
}
