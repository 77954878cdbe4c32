#include "storage/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace shakedown::storage {

void throw_io(const std::string& call, const std::filesystem::path& path, int err,
              const std::string& where) {
  std::string hint;
  if (err == ENOSPC || err == EDQUOT) hint = ": the file system is full (or over quota)";
  if (err == EROFS) hint = ": the file system is read-only";
  if (err == EIO) hint = ": the storage reported an I/O error";
  throw IoError((where.empty() ? "" : where + ": ") + call + " " + path.string() + ": " +
                    std::strerror(err) + " (errno " + std::to_string(err) + ")" + hint,
                err);
}

File::File(const std::filesystem::path& path, int flags, const std::string& where, mode_t mode)
    : path_(path), where_(where) {
  do {
    fd_ = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) throw_io("open", path, errno, where);
}

File::File(File&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      where_(std::move(other.where_)) {}

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    where_ = std::move(other.where_);
  }
  return *this;
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

void File::pwrite_all(std::span<const std::byte> data, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n =
        ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io("write", path_, errno, where_);
    }
    if (n == 0) throw_io("write", path_, ENOSPC, where_);  // no progress: treated as full
    done += static_cast<std::size_t>(n);
  }
}

void File::pread_all(std::span<std::byte> data, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n =
        ::pread(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io("read", path_, errno, where_);
    }
    if (n == 0) {
      throw RuntimeFault((where_.empty() ? "" : where_ + ": ") + "read " + path_.string() +
                         ": the file ends at byte " + std::to_string(offset + done) + ", " +
                         std::to_string(offset + data.size()) + " expected (a truncated shard)");
    }
    done += static_cast<std::size_t>(n);
  }
}

void File::fsync() {
  if (::fsync(fd_) != 0) throw_io("fsync", path_, errno, where_);
}

bool File::drop_cache() {
  return ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED) == 0;
}

void File::close() {
  if (fd_ < 0) return;
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 && errno != EINTR) throw_io("close", path_, errno, where_);
}

void fsync_dir(const std::filesystem::path& dir, const std::string& where) {
  File d(dir, O_RDONLY | O_DIRECTORY, where);
  d.fsync();
  d.close();
}

void commit_file(const std::filesystem::path& path, const std::string& text,
                 const std::string& where) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  File f(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, where);
  f.pwrite_all(std::as_bytes(std::span(text.data(), text.size())), 0);
  f.fsync();
  f.close();
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw_io("rename", tmp, errno, where);
  fsync_dir(path.parent_path(), where);
}

std::string read_small_file(const std::filesystem::path& path, const std::string& where) {
  File f(path, O_RDONLY | O_NOFOLLOW, where);
  struct stat st {};
  if (::fstat(f.fd(), &st) != 0) throw_io("stat", path, errno, where);
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  f.pread_all(std::as_writable_bytes(std::span(text.data(), text.size())), 0);
  return text;
}

std::string fs_type_name(std::uint64_t magic) {
  switch (magic) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x01021994:
      return "tmpfs";
    case 0x858458f6:
      return "ramfs";
    case 0x9123683E:
      return "btrfs";
    case 0x794c7630:
      return "overlay";
    case 0x2fc12fc1:
      return "zfs";
    case 0x6969:
      return "nfs";
    case 0x0BD00BD0:
      return "lustre";
    case 0x47504653:
      return "gpfs";
    case 0x19830326:
      return "beegfs";
    case 0x00c36400:
      return "ceph";
    case 0xFF534D42:
      return "cifs";
    case 0xFE534D42:
      return "smb2";
    case 0x65735546:
      return "fuse";
    default:
      return "";
  }
}

namespace {

bool known_local(const std::string& type) {
  static constexpr const char* kLocal[] = {"ext2",  "ext3", "ext4", "xfs",     "btrfs", "tmpfs",
                                           "ramfs", "zfs",  "f2fs", "overlay", "vfat",  "devtmpfs"};
  return std::any_of(std::begin(kLocal), std::end(kLocal),
                     [&](const char* t) { return type == t; });
}

// Octal escapes of /proc/self/mountinfo ("\040" for a space).
std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string oct = s.substr(i + 1, 3);
      if (oct.size() == 3 &&
          std::all_of(oct.begin(), oct.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out += static_cast<char>(std::stoi(oct, nullptr, 8));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace

FsInfo fs_info(const std::filesystem::path& dir) {
  FsInfo info;
  struct statfs sf {};
  if (::statfs(dir.c_str(), &sf) == 0) {
    info.type = fs_type_name(static_cast<std::uint64_t>(sf.f_type));
    if (info.type.empty()) {
      std::ostringstream hex;
      hex << "0x" << std::hex << static_cast<std::uint64_t>(sf.f_type);
      info.type = hex.str();
    }
  }
  // The mount that holds `dir`: the longest mount point that is a prefix of its real path.
  std::error_code ec;
  const std::string real = std::filesystem::weakly_canonical(dir, ec).string();
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  std::size_t best = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, mount, options;
    fields >> id >> parent >> devno >> root >> mount >> options;
    mount = unescape(mount);
    const bool prefix = real == mount || mount == "/" ||
                        (real.size() > mount.size() && real.compare(0, mount.size(), mount) == 0 &&
                         real[mount.size()] == '/');
    if (!prefix || mount.size() < best) continue;
    const std::size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string type, source, super;
    tail >> type >> source >> super;
    best = mount.size();
    info.mount_point = mount;
    info.options = options + (super.empty() ? "" : "," + super);
    if (!type.empty()) info.type = type;
  }
  info.node_local = known_local(info.type);
#ifdef STATX_DIOALIGN
  struct statx sx {};
  if (::statx(AT_FDCWD, dir.c_str(), 0, STATX_DIOALIGN, &sx) == 0 &&
      (sx.stx_mask & STATX_DIOALIGN) != 0 && sx.stx_dio_offset_align != 0) {
    info.dio_mem_align = sx.stx_dio_mem_align;
    info.dio_offset_align = sx.stx_dio_offset_align;
  }
#endif
  if (info.dio_offset_align == 0) {
    // No DIOALIGN (older kernels; directories report none): 4 KiB, the logical block size of
    // today's devices. Not st_blksize: parallel file systems report their stripe or block size
    // there (1-16 MiB), far more than O_DIRECT needs.
    info.dio_mem_align = info.dio_offset_align = 4096;
  }
  return info;
}

bool Created::make_dir(const std::filesystem::path& p, const std::string& where) {
  if (::mkdir(p.c_str(), 0755) != 0) {
    if (errno == EEXIST) return false;
    throw_io("mkdir", p, errno, where);
  }
  entries_.push_back({p, true});
  return true;
}

std::vector<std::string> Created::remove_all(const std::filesystem::path& under) {
  std::vector<std::string> left;
  const std::string prefix = under.string();
  std::vector<Entry> keep;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    const std::string path = it->path.string();
    const bool inside = prefix.empty() || path == prefix ||
                        (path.size() > prefix.size() &&
                         path.compare(0, prefix.size(), prefix) == 0 && path[prefix.size()] == '/');
    if (!inside) {
      keep.push_back(*it);
      continue;
    }
    const int rc = it->dir ? ::rmdir(it->path.c_str()) : ::unlink(it->path.c_str());
    if (rc != 0 && errno != ENOENT) {
      left.push_back(path + ": " + std::strerror(errno));
    }
  }
  std::reverse(keep.begin(), keep.end());
  entries_ = std::move(keep);
  return left;
}

}  // namespace shakedown::storage
