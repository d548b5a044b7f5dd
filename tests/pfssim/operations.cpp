// pfssim's FUSE operations (see operations.hpp).
#include "tests/pfssim/operations.hpp"

#include "tests/pfssim/model.hpp"
#include "tests/pfssim/read_ahead.hpp"

#include <cerrno>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

namespace pfssim {

namespace {

// The faults in force for one operation (--faults), after sleeping their
// extra latency.  The sleep holds no metadata slot and no bucket: a slow
// source slows every operation without serializing them.
FaultState faults_after_delay()
{
    FaultState f = g_faults.poll();
    if (f.extra_latency_ms > 0) {
        g_stats.fault_delays.fetch_add(1, std::memory_order_relaxed);
        sleep_until(now_ns() + int64_t(f.extra_latency_ms) * 1000000);
    }
    return f;
}

// One metadata operation: the fault delay, then wait for a slot and hold it
// for the latency.
class MetaOp {
public:
    explicit MetaOp(std::atomic<uint64_t>& counter)
    {
        std::call_once(g_read_ahead_once, set_read_ahead);
        faults_ = faults_after_delay();
        counter.fetch_add(1, std::memory_order_relaxed);
        g_stats.meta_ops.fetch_add(1, std::memory_order_relaxed);
        arrival_ = now_ns();
        done_ = g_meta.reserve(arrival_);
    }
    ~MetaOp()
    {
        sleep_until(done_);
        int64_t queued = done_ - arrival_ - g_meta.latency_ns();
        if (queued > 0)
            g_stats.meta_queue_ns.fetch_add(uint64_t(queued), std::memory_order_relaxed);
    }
    MetaOp(const MetaOp&) = delete;
    MetaOp& operator=(const MetaOp&) = delete;
    const FaultState& faults() const { return faults_; }

private:
    FaultState faults_;
    int64_t arrival_;
    int64_t done_;
};

struct FileHandle {
    int fd = -1;
    Bucket stream;
};

struct DirHandle {
    DIR* dir = nullptr;
    off_t offset = 0;
};

// Paths from libfuse start with '/'; make them relative to the backing fd.
const char* rel(const char* path)
{
    if (path == nullptr || path[0] == '\0')
        return ".";
    while (*path == '/')
        ++path;
    return *path ? path : ".";
}

int fail(int err)
{
    g_stats.errors.fetch_add(1, std::memory_order_relaxed);
    return -err;
}

// ---------------------------------------------------------- operations ----

void* op_init(fuse_conn_info* conn, fuse_config* cfg)
{
    // Each open must re-read from the "PFS": no data-cache revalidation
    // through GETATTR on every read (auto_inval_data would turn each read
    // into an extra metadata op with attr_timeout=0), no kernel_cache.
    conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
    if (conn->capable & FUSE_CAP_ASYNC_READ)
        conn->want |= FUSE_CAP_ASYNC_READ;
    // The kernel's default of 12 background (readahead) requests, congested
    // at 9, starves some streams once ~5 readers each keep two reads in
    // flight: they lose their readahead and get a smaller share.
    conn->max_background = 128;
    conn->congestion_threshold = 96;
    if (g_cfg.max_read && (conn->max_read == 0 || conn->max_read > g_cfg.max_read))
        conn->max_read = g_cfg.max_read;
    cfg->use_ino = 1;
    cfg->nullpath_ok = 1;
    cfg->entry_timeout = g_cfg.entry_timeout;
    cfg->attr_timeout = g_cfg.attr_timeout;
    cfg->negative_timeout = g_cfg.entry_timeout;
    cfg->kernel_cache = 0;
    cfg->auto_cache = 0;
    cfg->direct_io = 0;
    return nullptr;
}

int op_getattr(const char* path, struct stat* st, fuse_file_info* fi)
{
    MetaOp m(g_stats.getattrs);
    int r;
    if (fi != nullptr && fi->fh != 0) {
        // The kernel passes a handle only for open regular files (fstat).
        r = fstat(reinterpret_cast<FileHandle*>(fi->fh)->fd, st);
    } else {
        r = fstatat(g_root_fd, rel(path), st, AT_SYMLINK_NOFOLLOW);
    }
    return r == 0 ? 0 : fail(errno);
}

int op_readlink(const char* path, char* buf, size_t size)
{
    MetaOp m(g_stats.readlinks);
    if (size == 0)
        return -EINVAL;
    ssize_t n = readlinkat(g_root_fd, rel(path), buf, size - 1);
    if (n < 0)
        return fail(errno);
    buf[n] = '\0';
    return 0;
}

int op_open(const char* path, fuse_file_info* fi)
{
    MetaOp m(g_stats.opens);
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
        g_stats.erofs.fetch_add(1, std::memory_order_relaxed);
        return -EROFS;
    }
    if (m.faults().open_errno != 0) {
        // After the metadata latency, as a real server's refusal would be.
        g_stats.fault_opens.fetch_add(1, std::memory_order_relaxed);
        return -m.faults().open_errno;
    }
    int fd = openat(g_root_fd, rel(path), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return fail(errno);
    auto* h = new FileHandle;
    h->fd = fd;
    h->stream.configure(g_cfg.stream_bandwidth_mbps * 1e6, g_cfg.burst_bytes);
    fi->fh = reinterpret_cast<uint64_t>(h);
    fi->keep_cache = 0;  // invalidate this inode's page cache on every open
    // Default: no direct_io, so MAP_SHARED mmap works (sbcast mmaps its
    // source; with direct_io the kernel refuses it with ENODEV).  The price
    // is that concurrent readers of one file share page-cache pages.
    fi->direct_io = g_cfg.direct_io ? 1 : 0;
    atomic_max(g_stats.open_handles_max, ++g_stats.open_handles);
    return 0;
}

int op_read(const char*, char* buf, size_t size, off_t off, fuse_file_info* fi)
{
    auto* h = reinterpret_cast<FileHandle*>(fi->fh);
    g_stats.read_calls.fetch_add(1, std::memory_order_relaxed);
    g_stats.bytes_requested.fetch_add(size, std::memory_order_relaxed);
    atomic_max(g_stats.read_req_max, uint64_t(size));
    FaultState f = faults_after_delay();
    if (f.read_errno != 0) {
        // Costs no bandwidth: nothing was delivered.
        g_stats.fault_reads.fetch_add(1, std::memory_order_relaxed);
        return -f.read_errno;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = pread(h->fd, buf + got, size - got, off + off_t(got));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (got == 0)
                return fail(errno);
            break;
        }
        if (n == 0)
            break;
        got += size_t(n);
    }
    if (got > 0) {
        // Pay for the bytes actually delivered: first this stream's own
        // bucket, then (once the stream may go) the shared one.
        int64_t t0 = now_ns();
        int64_t ready = h->stream.reserve(t0, int64_t(got));
        sleep_until(ready);
        int64_t t1 = std::max(ready, now_ns());
        ready = g_global_bucket.reserve(t1, int64_t(got));
        sleep_until(ready);
        g_stats.read_throttle_ns.fetch_add(uint64_t(std::max<int64_t>(0, now_ns() - t0)), std::memory_order_relaxed);
        g_stats.bytes_read.fetch_add(got, std::memory_order_relaxed);
    }
    return int(got);
}

int op_release(const char*, fuse_file_info* fi)
{
    auto* h = reinterpret_cast<FileHandle*>(fi->fh);
    if (h) {
        close(h->fd);
        delete h;
        --g_stats.open_handles;
        g_stats.releases.fetch_add(1, std::memory_order_relaxed);
    }
    return 0;
}

int op_opendir(const char* path, fuse_file_info* fi)
{
    MetaOp m(g_stats.opendirs);
    int fd = openat(g_root_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return fail(errno);
    DIR* d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return fail(e);
    }
    auto* h = new DirHandle;
    h->dir = d;
    fi->fh = reinterpret_cast<uint64_t>(h);
    return 0;
}

int op_readdir(const char*, void* buf, fuse_fill_dir_t filler, off_t offset, fuse_file_info* fi, fuse_readdir_flags)
{
    MetaOp m(g_stats.readdirs);
    auto* h = reinterpret_cast<DirHandle*>(fi->fh);
    if (offset != h->offset) {
        seekdir(h->dir, offset);
        h->offset = offset;
    }
    for (;;) {
        errno = 0;
        dirent* e = readdir(h->dir);
        if (!e) {
            if (errno)
                return fail(errno);
            break;
        }
        struct stat st;
        std::memset(&st, 0, sizeof st);
        st.st_ino = e->d_ino;
        st.st_mode = mode_t(e->d_type) << 12;
        off_t next = telldir(h->dir);
        if (filler(buf, e->d_name, &st, next, fuse_fill_dir_flags(0))) {
            // The buffer is full and e did not go in: back to just before
            // it, so that the next call starts with it.  (Without this a
            // large directory lost one entry per full buffer.)
            seekdir(h->dir, h->offset);
            break;
        }
        h->offset = next;
    }
    return 0;
}

int op_releasedir(const char*, fuse_file_info* fi)
{
    auto* h = reinterpret_cast<DirHandle*>(fi->fh);
    if (h) {
        closedir(h->dir);
        delete h;
    }
    return 0;
}

int op_statfs(const char*, struct statvfs* sv)
{
    return fstatvfs(g_root_fd, sv) == 0 ? 0 : fail(errno);
}

int op_access(const char* path, int mask)
{
    // Only reached without default_permissions; we always set it, but be
    // correct anyway.
    if (mask & W_OK) {
        g_stats.erofs.fetch_add(1, std::memory_order_relaxed);
        return -EROFS;
    }
    return faccessat(g_root_fd, rel(path), mask, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

int erofs()
{
    g_stats.erofs.fetch_add(1, std::memory_order_relaxed);
    return -EROFS;
}
int op_mknod(const char*, mode_t, dev_t)
{
    return erofs();
}
int op_mkdir(const char*, mode_t)
{
    return erofs();
}
int op_unlink(const char*)
{
    return erofs();
}
int op_rmdir(const char*)
{
    return erofs();
}
int op_symlink(const char*, const char*)
{
    return erofs();
}
int op_rename(const char*, const char*, unsigned int)
{
    return erofs();
}
int op_link(const char*, const char*)
{
    return erofs();
}
int op_chmod(const char*, mode_t, fuse_file_info*)
{
    return erofs();
}
int op_chown(const char*, uid_t, gid_t, fuse_file_info*)
{
    return erofs();
}
int op_truncate(const char*, off_t, fuse_file_info*)
{
    return erofs();
}
int op_write(const char*, const char*, size_t, off_t, fuse_file_info*)
{
    return erofs();
}
int op_create(const char*, mode_t, fuse_file_info*)
{
    return erofs();
}
int op_utimens(const char*, const timespec*, fuse_file_info*)
{
    return erofs();
}
int op_setxattr(const char*, const char*, const char*, size_t, int)
{
    return erofs();
}
int op_removexattr(const char*, const char*)
{
    return erofs();
}
int op_fallocate(const char*, int, off_t, off_t, fuse_file_info*)
{
    return erofs();
}


}  // namespace

fuse_operations make_ops()
{
    fuse_operations ops;
    std::memset(&ops, 0, sizeof ops);
    ops.init = op_init;
    ops.getattr = op_getattr;
    ops.readlink = op_readlink;
    ops.open = op_open;
    ops.read = op_read;
    ops.release = op_release;
    ops.opendir = op_opendir;
    ops.readdir = op_readdir;
    ops.releasedir = op_releasedir;
    ops.statfs = op_statfs;
    ops.access = op_access;
    ops.mknod = op_mknod;
    ops.mkdir = op_mkdir;
    ops.unlink = op_unlink;
    ops.rmdir = op_rmdir;
    ops.symlink = op_symlink;
    ops.rename = op_rename;
    ops.link = op_link;
    ops.chmod = op_chmod;
    ops.chown = op_chown;
    ops.truncate = op_truncate;
    ops.write = op_write;
    ops.create = op_create;
    ops.utimens = op_utimens;
    ops.setxattr = op_setxattr;
    ops.removexattr = op_removexattr;
    ops.fallocate = op_fallocate;
    return ops;
}

}  // namespace pfssim
