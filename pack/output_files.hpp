// Where `dlstage pack` reads and writes: checking DIR and OUT, and output
// files under temporary names until they are complete.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace dlstage::pack {

// The names in a directory, sorted, without "." and "..".
std::vector<std::string> sorted_names(const std::string& dir_path);

enum class PackFormat { Squashfs, Tar };

// The output format: the one asked for ("squashfs" or "tar"; "" for none),
// else what OUT's name says: a squashfs image for .sqfs or .squashfs, tar
// shards otherwise.
PackFormat pack_format(const std::string& asked, const std::string& out);

// What already stands at OUT: for squashfs OUT itself, for tar the shards
// OUT-NNNNNN.tar (returned: the tar writer removes those it does not
// replace).  Throws Error "X exists; use --force to replace it" unless force.
std::vector<std::string> check_existing_output(PackFormat format, const std::string& out, bool force);

// DIR must be a directory.
void check_input_dir(const std::string& dir);

// OUT's directory must exist, and OUT must not land inside DIR, where the
// next pack of DIR would take it in.
void check_output_place(const std::string& dir, const std::string& out);

std::string temporary_name(const std::string& path);
std::uint64_t file_size(const std::string& path);
void rename_into_place(const std::string& from, const std::string& to);

// The child (mksquashfs) to stop when a signal ends the pack; 0: none.
void set_child_to_stop(pid_t pid);

// Output files under temporary names: whatever stops the pack (an error,
// Ctrl-C, scancel) removes them, so no half-written file is left, and the
// final names only ever hold complete output.
class Temporaries {
public:
    explicit Temporaries(std::vector<std::string> paths);
    ~Temporaries();
    Temporaries(const Temporaries&) = delete;
    Temporaries& operator=(const Temporaries&) = delete;

    const std::string& operator[](std::size_t i) const { return paths_[i]; }

private:
    std::vector<std::string> paths_;
};

}  // namespace dlstage::pack
