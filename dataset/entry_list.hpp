// The entries of a dataset (files, directories, symlinks below its root),
// held compactly: a plan of 1.28 M files is kept by every rank of the
// stager, and a manifest is read into one at rank 0.  One fixed-size record
// per entry (40 bytes) and every path and symlink target in one arena: no
// string object, no allocation per entry.  The stager's plan and the
// manifest (dataset/manifest) share it, so the plugin, which links no stager
// code, reads manifests too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dlstage {

enum class EntryType : std::uint8_t { File = 1, Dir = 2, Symlink = 3 };

// One entry as a value: what code that wants strings reads (a copy made on
// each access; loops over many entries use EntryList's accessors instead).
struct Entry {
    EntryType type = EntryType::File;
    std::string path;        // relative to the source root (and to the destination)
    std::uint32_t mode = 0;  // permission bits only
    std::int64_t mtime_sec = 0;
    std::uint32_t mtime_nsec = 0;
    std::uint64_t size = 0;  // files
    std::string target;      // symlinks
};

class EntryList {
public:
    // How entries are kept, exposed for the plan's wire format (the same
    // binary at both ends).  A symlink's target follows its path in the
    // arena, and its length is kept in `size` (a symlink has no data).
    struct Record {
        std::uint64_t path_at = 0;  // offset of the path in the arena
        std::uint64_t size = 0;     // file: bytes; symlink: target length
        std::int64_t mtime_sec = 0;
        std::uint32_t mtime_nsec = 0;
        std::uint16_t path_len = 0;  // a path below the root is shorter than PATH_MAX
        std::uint16_t mode = 0;      // permission bits only (07777)
        EntryType type = EntryType::File;
    };

    // Throws Error when a path or target is too long (PATH_MAX) or the path
    // is empty.
    void add(EntryType type, std::string_view path, std::uint32_t mode, std::int64_t mtime_sec,
             std::uint32_t mtime_nsec, std::uint64_t size, std::string_view target = {});
    void add(const Entry& e) { add(e.type, e.path, e.mode, e.mtime_sec, e.mtime_nsec, e.size, e.target); }

    std::size_t size() const { return records_.size(); }
    bool empty() const { return records_.empty(); }
    Entry operator[](std::size_t i) const;
    Entry front() const { return (*this)[0]; }

    // Without copies, for loops over every entry.
    EntryType type(std::size_t i) const { return records_[i].type; }
    std::uint64_t file_size(std::size_t i) const { return type(i) == EntryType::File ? records_[i].size : 0; }
    std::string_view path(std::size_t i) const { return {arena_.data() + records_[i].path_at, records_[i].path_len}; }
    std::string_view target(std::size_t i) const;
    const Record& record(std::size_t i) const { return records_[i]; }

    // Bytewise by path, as std::string compares: a parent before its
    // children, and the same tree always in the same order.
    void sort_by_path();

    std::uint64_t total_file_bytes() const;
    std::uint64_t non_dir_count() const;  // files and symlinks

    // The two blocks the entries are made of, for the plan's wire format;
    // adopt() takes blocks received and checks them (throws Error).
    const std::vector<Record>& records() const { return records_; }
    const std::string& arena() const { return arena_; }
    static EntryList adopt(std::vector<Record> records, std::string arena);

    class Iterator {
    public:
        Iterator(const EntryList& list, std::size_t i) : list_(&list), i_(i) {}
        Entry operator*() const { return (*list_)[i_]; }
        Iterator& operator++()
        {
            ++i_;
            return *this;
        }
        bool operator!=(const Iterator& other) const { return i_ != other.i_; }

    private:
        const EntryList* list_;
        std::size_t i_;
    };
    Iterator begin() const { return {*this, 0}; }
    Iterator end() const { return {*this, size()}; }

private:
    std::vector<Record> records_;
    std::string arena_;
};

}  // namespace dlstage
