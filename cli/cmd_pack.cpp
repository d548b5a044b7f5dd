// dlstage pack DIR OUT: turn a dataset directory of many small files into
// few big ones.
//
// ImageNet-like datasets hold about a million files of ~110 KB; on a
// parallel file system every file costs a metadata operation and an inode,
// both when staging and when training.  A squashfs image is one file that
// nodes mount or extract; tar shards (WebDataset style) are a few balanced
// files that readers stream.
//
// Here: the command line and what pack says; the work is in pack/.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "config/stager_tuning.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/number.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "pack/output_files.hpp"
#include "pack/pack_tree.hpp"
#include "pack/squashfs_image.hpp"
#include "pack/tar_shards.hpp"

namespace dlstage::cli {

namespace {
using namespace dlstage::pack;

void print_help()
{
    std::cout << "Usage: dlstage pack [--format squashfs|tar] [--shards N | --shard-size SIZE]\n"
                 "                    [--block-size SIZE] [--force] DIR OUT\n"
                 "Pack a dataset directory of many small files into few big files that stage\n"
                 "quickly: one squashfs image OUT (the default when OUT ends in .sqfs or\n"
                 "  .squashfs), or tar shards OUT-000000.tar, OUT-000001.tar, ... (otherwise).\n"
                 "\n"
                 "  --format squashfs|tar  the output format (default: from OUT's name)\n"
                 "  --shards N             tar: N shards (fewer if DIR holds fewer samples)\n"
                 "  --shard-size SIZE      tar: as many shards as needed so that none is larger\n"
                 "                         than SIZE (default: --shard-size 1G)\n"
                 "  --block-size SIZE      squashfs: block size, a power of two from 4K to 1M\n"
                 "                         (default 128K)\n"
                 "  --force                replace existing output\n"
                 "\n"
                 "Tar shards keep each sample (the files of a directory sharing their name up to\n"
                 "the first '.', e.g. x.jpg and x.cls) together, are balanced in size and hold\n"
                 "every class directory in even shares.  Each shard extracts on its own; all\n"
                 "shards extracted into one directory reproduce DIR.  The same DIR always gives\n"
                 "the same bytes.  Devices, fifos and sockets are refused.\n";
}

struct PackOptions {
    std::string format;            // "" = from OUT's name
    std::size_t shards = 0;        // 0: not given
    std::uint64_t shard_size = 0;  // 0: not given
    std::uint64_t block_size = 0;  // 0: not given
    bool force = false;
    bool help = false;
    std::string dir;
    std::string out;
};

// --- command line ------------------------------------------------------------

// Fills options from args; returns a usage problem, or "".
std::string parse_pack_args(const std::vector<std::string>& args, PackOptions& options)
{
    ParsedArgs parsed;
    try {
        parsed = parse_args(args, {{"help", 'h', false},
                                   {"force", 0, false},
                                   {"format", 0, true},
                                   {"shards", 0, true},
                                   {"shard-size", 0, true},
                                   {"block-size", 0, true}});
    } catch (const UsageError& e) {
        return "pack: " + std::string(e.what());
    }
    if (parsed.has("help")) {
        options.help = true;
        return "";
    }
    options.force = parsed.has("force");
    for (const auto& [name, value] : parsed.given) {
        if (value.empty() && name != "force")
            return "pack: option --" + name + " needs a value";
        try {
            if (name == "format") {
                if (value != "squashfs" && value != "tar")
                    return "pack: --format is squashfs or tar, not " + quoted(value);
                options.format = value;
            } else if (name == "shards") {
                options.shards = parse_count(value, 1, kMaxShards);
            } else if (name == "shard-size") {
                options.shard_size = parse_size(value);
                if (options.shard_size == 0)
                    return "pack: --shard-size must be more than 0";
            } else if (name == "block-size") {
                options.block_size = parse_size(value);
                const std::uint64_t b = options.block_size;
                if (b < kMinBlockSize || b > kMaxBlockSize || (b & (b - 1)) != 0)
                    return "pack: --block-size must be a power of two from 4K to 1M, not " + quoted(value);
            }
        } catch (const Error& e) {
            return "pack: --" + name + ": " + e.what();
        }
    }
    const std::vector<std::string>& operands = parsed.operands;
    if (operands.size() != 2)
        return operands.size() < 2 ? "pack needs DIR and OUT" : "pack takes only DIR and OUT";
    options.dir = operands[0];
    while (options.dir.size() > 1 && options.dir.back() == '/')
        options.dir.pop_back();  // "data/" names its files "data/x", not "data//x"
    options.out = operands[1];
    if (options.out.empty() || options.out.back() == '/')
        return "pack: OUT names a file (or, for tar, the shards' prefix), not a directory";
    return "";
}

// Options that do not fit together or do not fit the format; or "".
std::string check_combination(const PackOptions& options, PackFormat format)
{
    if (options.shards && options.shard_size)
        return "pack: give --shards or --shard-size, not both";
    if (format == PackFormat::Squashfs && (options.shards || options.shard_size))
        return "pack: --shards and --shard-size are for tar shards; " + quoted(options.out) +
               " is a squashfs image (use --format tar for shards)";
    if (format == PackFormat::Tar && options.block_size)
        return "pack: --block-size is for squashfs images";
    return "";
}

// --- packing and what it says ------------------------------------------------------

std::string percent_of(std::uint64_t part, std::uint64_t whole)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
    return buf;
}

// Now and then a line while packing, and the time and rate at the end, as
// the stager says how staging goes.  DLSTAGE_PROGRESS sets the interval
// (seconds, as for the stager; 5 by default).
class PackReport {
public:
    explicit PackReport(const PackTree& tree) : tree_(tree), start_(Clock::now()), last_(start_)
    {
        StagerTuning tuning;
        if (const char* value = std::getenv("DLSTAGE_PROGRESS"); value && *value)
            naming("DLSTAGE_PROGRESS", [&] {
                find_tuning_knob("--progress")->set(value, tuning);
                return 0;
            });
        interval_ = tuning.progress_interval;
    }

    void tar(std::uint64_t bytes, std::uint64_t files)
    {
        if (!due())
            return;
        const double elapsed = seconds();
        std::string line = "pack: " + format_size(bytes) + " of " + format_size(tree_.file_bytes);
        if (tree_.file_bytes)
            line += " (" + percent_of(bytes, tree_.file_bytes) + ")";
        line += ", " + std::to_string(files) + " of " + std::to_string(tree_.files) + " files, " +
                format_rate(bytes, elapsed);
        if (bytes > 0 && tree_.file_bytes > bytes) {
            char eta[32];
            std::snprintf(eta, sizeof eta, ", ETA %.0f s",
                          static_cast<double>(tree_.file_bytes - bytes) / (static_cast<double>(bytes) / elapsed));
            line += eta;
        }
        say(line);
    }

    void image(std::uint64_t image_bytes)
    {
        if (!due())
            return;
        char line[128];
        std::snprintf(line, sizeof line, "pack: mksquashfs: image %s so far, %.0f s", format_size(image_bytes).c_str(),
                      seconds());
        say(line);
    }

    // " in 12.3 s (0.31 GB/s)": the input's bytes over the whole time.
    std::string summary() const
    {
        char text[64];
        std::snprintf(text, sizeof text, " in %.1f s (%s)", seconds(),
                      format_rate(tree_.file_bytes, seconds()).c_str());
        return text;
    }

private:
    using Clock = std::chrono::steady_clock;
    double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
    bool due()
    {
        const auto now = Clock::now();
        if (std::chrono::duration<double>(now - last_).count() < interval_)
            return false;
        last_ = now;
        return true;
    }

    const PackTree& tree_;
    Clock::time_point start_, last_;
    double interval_ = 5.0;
};

int pack_squashfs(const PackOptions& options, const PackTree& tree)
{
    PackReport report(tree);
    const SquashfsImage image = make_squashfs_image(options.dir, options.out,
                                                    options.block_size ? options.block_size : kDefaultBlockSize, tree,
                                                    [&](std::uint64_t bytes) { report.image(bytes); });
    for (const std::string& line : image.messages)
        say("mksquashfs: " + line);
    say("packed " + std::to_string(tree.files) + " files (" + format_size(tree.file_bytes) + ") into " + options.out +
        " (" + format_size(image.bytes) +
        (tree.file_bytes ? ", " + percent_of(image.bytes, tree.file_bytes) + " of the input" : "") + ")" +
        report.summary());
    return kExitOk;
}

void say_fewer_shards(const PackOptions& options, const ShardLayout& layout)
{
    if (options.shards && layout.shards.size() < options.shards)
        say(quoted(options.dir) + " holds only " + std::to_string(layout.sample_count) +
            (layout.sample_count == 1 ? " sample" : " samples") + ": writing " + std::to_string(layout.shards.size()) +
            (layout.shards.size() == 1 ? " shard" : " shards") + " instead of " + std::to_string(options.shards));
}

int pack_tar(const PackOptions& options, const PackTree& tree, const std::vector<std::string>& old_shards)
{
    const ShardLayout layout =
        shard_layout_for(tree, options.shards, options.shard_size ? options.shard_size : kDefaultShardSize);
    say_fewer_shards(options, layout);
    PackReport report(tree);
    const TarShards shards =
        write_tar_shards(options.dir, options.out, tree, layout, old_shards,
                         [&](std::uint64_t bytes, std::uint64_t files) { report.tar(bytes, files); });
    const std::size_t count = shards.paths.size();
    say("packed " + std::to_string(tree.files) + " files (" + format_size(tree.file_bytes) + ") into " +
        std::to_string(count) + (count == 1 ? " shard of " : " shards of ") + format_size(shards.smallest) +
        (shards.smallest == shards.largest ? "" : ".." + format_size(shards.largest)) + report.summary());
    return kExitOk;
}
}  // namespace

int cmd_pack(const GlobalOptions&, const std::vector<std::string>& args)
{
    PackOptions options;
    if (const std::string problem = parse_pack_args(args, options); !problem.empty())
        return usage_error(problem, "pack");
    if (options.help) {
        print_help();
        return kExitOk;
    }
    const PackFormat format = pack_format(options.format, options.out);
    if (const std::string problem = check_combination(options, format); !problem.empty())
        return usage_error(problem, "pack");

    check_input_dir(options.dir);
    check_output_place(options.dir, options.out);
    const std::vector<std::string> old_shards = check_existing_output(format, options.out, options.force);
    const PackTree tree = read_pack_tree(options.dir);
    return format == PackFormat::Squashfs ? pack_squashfs(options, tree) : pack_tar(options, tree, old_shards);
}

}  // namespace dlstage::cli
