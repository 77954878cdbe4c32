#pragma once
// POSIX file handling for the checkpoint phase: every call checked, every failure a RuntimeFault
// (exit 3) that names the call, the path and errno; the file system under a folder; the
// commit of a file (temporary name, fsync, rename, fsync of the folder: the rename is only
// durable once the folder is); and the list of what this run created, which is all that
// cleanup ever removes.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace shakedown::storage {

// A failed call on a file: exit 3, with the errno it failed with.
class IoError : public RuntimeFault {
 public:
  IoError(const std::string& message, int err) : RuntimeFault(message), err_(err) {}
  int err() const noexcept { return err_; }

 private:
  int err_;
};

// "<where>: <call> <path>: <strerror> (errno N)" as an IoError; `where` says who (rank, host).
[[noreturn]] void throw_io(const std::string& call, const std::filesystem::path& path, int err,
                           const std::string& where);

// An open file descriptor, closed once. close() reports a failed close (NFS and parallel file
// systems report write-back errors there); the destructor only closes.
class File {
 public:
  File() = default;
  File(const std::filesystem::path& path, int flags, const std::string& where, mode_t mode = 0644);
  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  int fd() const { return fd_; }
  const std::filesystem::path& path() const { return path_; }
  // All of `data` at `offset` (retries short writes and EINTR); throws on anything else.
  void pwrite_all(std::span<const std::byte> data, std::uint64_t offset);
  // All of `data` from `offset`; a file that ends early is an error (a truncated shard).
  void pread_all(std::span<std::byte> data, std::uint64_t offset);
  void fsync();
  // posix_fadvise(DONTNEED) of the whole file: true when the kernel accepted it.
  bool drop_cache();
  void close();

 private:
  int fd_ = -1;
  std::filesystem::path path_;
  std::string where_;
};

// fsync of a folder: makes the names created or renamed in it durable.
void fsync_dir(const std::filesystem::path& dir, const std::string& where);

// Writes `text` to `path` as a commit: `path`.tmp, fsync, rename, fsync of the folder. A reader
// sees the whole file or none.
void commit_file(const std::filesystem::path& path, const std::string& text,
                 const std::string& where);
// The whole of a small file (metadata); throws naming the path when it cannot be read.
std::string read_small_file(const std::filesystem::path& path, const std::string& where);

// The file system a folder is on.
struct FsInfo {
  std::string type;         // "ext4", "xfs", "tmpfs", "nfs", "lustre", "gpfs", ... or "0x<magic>"
  std::string mount_point;  // from /proc/self/mountinfo ("" when not found)
  std::string options;      // its mount options
  bool node_local = true;   // not shared between nodes (ext4, xfs, tmpfs, ...)
  std::uint64_t dio_mem_align = 0, dio_offset_align = 0;  // O_DIRECT rules (statx DIOALIGN, else
                                                          // the block size); 0: unknown
};
FsInfo fs_info(const std::filesystem::path& dir);
// The statfs magic as a name ("" when not one we know).
std::string fs_type_name(std::uint64_t magic);

// What this run created, in creation order. remove_all() removes exactly those: files with
// unlink (a symbolic link in their place is the link, never its target), folders with rmdir,
// newest first (a folder something else was put into stays). Nothing is followed.
class Created {
 public:
  void file(const std::filesystem::path& p) { entries_.push_back({p, false}); }
  // Creates `p` (not its parents) and records it; false, recording nothing, when it exists.
  bool make_dir(const std::filesystem::path& p, const std::string& where);
  // Removes what was recorded under `under` (all when empty); returns what could not be
  // removed ("path: why"), removing the rest.
  std::vector<std::string> remove_all(const std::filesystem::path& under = {});
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    std::filesystem::path path;
    bool dir;
  };
  std::vector<Entry> entries_;
};

}  // namespace shakedown::storage
