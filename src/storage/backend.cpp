#include "storage/backend.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

#include "core/error.hpp"
#include "runtime/clock.hpp"
#include "storage/files.hpp"

namespace shakedown::storage {

namespace {

double now_s() {
  return now_us() * 1e-6;
}

// --inject slow: a block (or the fsync) took `took` seconds; sleep so it takes `factor` times as
// long (a sleep, so a rank sharing cores with others takes no CPU from them).
void slow_down(double factor, double took) {
  if (factor > 1) std::this_thread::sleep_for(std::chrono::duration<double>((factor - 1) * took));
}

// Calls `io(at, n)` for each block of a `size`-byte shard (at: its offset in the shard), each
// slowed by --inject slow. Collective (MPI-IO): every rank makes max(its blocks, t.calls) calls,
// passing 0 bytes once its shard is done, and a rank whose call failed goes on with empty calls
// so that the others are not left waiting in a collective; its first failure is thrown after
// the last call.
template <class Io>
void for_each_block(const ShardTarget& t, std::uint64_t size, bool collective, Io&& io) {
  const std::uint64_t own = (size + t.block - 1) / t.block;
  const std::uint64_t calls = collective ? std::max(own, t.calls) : own;
  std::exception_ptr failed;
  for (std::uint64_t c = 0; c < calls; ++c) {
    const std::uint64_t at = std::min<std::uint64_t>(c * t.block, size);
    const std::uint64_t n = failed ? 0 : std::min<std::uint64_t>(t.block, size - at);
    const double b0 = now_s();
    try {
      io(at, n);
    } catch (...) {
      if (!collective) throw;
      if (!failed) failed = std::current_exception();
    }
    slow_down(t.slow_factor, now_s() - b0);
  }
  if (failed) std::rethrow_exception(failed);
}

// After the timed close: this rank's range out of the page cache, so the restore reads storage.
// True when the kernel accepted it (only written-back pages go: the write was fsynced).
bool drop_cache(const ShardTarget& t, std::uint64_t bytes) {
  // Without fsync the pages are still dirty, and POSIX_FADV_DONTNEED leaves dirty pages where
  // they are (it answers 0 all the same): the restore may read memory, and the file says so.
  if (!t.fsync) return false;
  try {
    File f(t.file, O_RDONLY | O_NOFOLLOW, t.where);
    return ::posix_fadvise(f.fd(), static_cast<off_t>(t.offset), static_cast<off_t>(bytes),
                           POSIX_FADV_DONTNEED) == 0;
  } catch (const RuntimeFault&) {
    return false;
  }
}

class PosixBackend final : public ShardBackend {
 public:
  explicit PosixBackend(bool shared) : shared_(shared) {}
  std::string name() const override {
    return shared_ ? "posix shared_file" : "posix file_per_process";
  }

  IoTimes write(const ShardTarget& t, std::span<const std::byte> data) override {
    IoTimes out;
    int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | (shared_ ? 0 : O_TRUNC);
    if (t.direct) flags |= O_DIRECT;
    out.start_s = now_s();
    File f = open_checked(t, flags);
    double at = now_s();
    out.open_s = at - out.start_s;
    for_each_block(t, data.size(), false, [&](std::uint64_t done, std::uint64_t n) {
      if (t.fail_errno != 0 && done == 0) throw_io("write", t.file, t.fail_errno, t.where);
      f.pwrite_all(data.subspan(done, n), t.offset + done);
    });
    double next = now_s();
    out.io_s = next - at;
    at = next;
    if (t.fsync) f.fsync();
    next = now_s();
    slow_down(t.slow_factor, next - at);
    next = now_s();
    out.fsync_s = next - at;
    at = now_s();
    f.close();
    out.end_s = now_s();
    out.close_s = out.end_s - at;
    out.cache_dropped = drop_cache(t, data.size());
    return out;
  }

  IoTimes read(const ShardTarget& t, std::span<std::byte> data) override {
    IoTimes out;
    int flags = O_RDONLY | O_NOFOLLOW;
    if (t.direct) flags |= O_DIRECT;
    out.start_s = now_s();
    File f = open_checked(t, flags);
    double at = now_s();
    out.open_s = at - out.start_s;
    for_each_block(t, data.size(), false, [&](std::uint64_t done, std::uint64_t n) {
      f.pread_all(data.subspan(done, n), t.offset + done);
    });
    const double next = now_s();
    out.io_s = next - at;
    f.close();
    out.end_s = now_s();
    out.close_s = out.end_s - next;
    return out;
  }

 private:
  static File open_checked(const ShardTarget& t, int flags) {
    try {
      return File(t.file, flags, t.where);
    } catch (const IoError& e) {
      if (t.direct && e.err() == EINVAL) {
        throw UsageError(t.file.parent_path().string() +
                         " does not support O_DIRECT (open gave EINVAL): set "
                         "checkpoint.direct_io: false for this file system");
      }
      throw;
    }
  }

  bool shared_;
};

// MPI-IO errors: the library's own text, the call and the file.
void mpiio_check(int rc, const char* call, const ShardTarget& t) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  int cls = 0;
  MPI_Error_class(rc, &cls);
  std::string hint;
  if (cls == MPI_ERR_NO_SPACE || cls == MPI_ERR_QUOTA) hint = ": the file system is full";
  throw RuntimeFault((t.where.empty() ? "" : t.where + ": ") + call + " " + t.file.string() + ": " +
                     std::string(text, static_cast<std::size_t>(len)) + hint);
}

// MPI-IO's collective end of a write or read: sync (writes) and close happen on every rank even
// after a failure (they are collective too); the first failure is thrown afterwards.
void finish_collective(MPI_File& fh, const ShardTarget& t, bool sync, std::exception_ptr failed,
                       IoTimes& out) {
  double at = now_s();
  if (sync) {
    const int rc = MPI_File_sync(fh);
    try {
      if (!failed) mpiio_check(rc, "MPI_File_sync", t);
    } catch (...) {
      failed = std::current_exception();
    }
    slow_down(t.slow_factor, now_s() - at);
    out.fsync_s = now_s() - at;
  }
  at = now_s();
  const int rc = MPI_File_close(&fh);
  out.end_s = now_s();
  out.close_s = out.end_s - at;
  if (failed) std::rethrow_exception(failed);
  mpiio_check(rc, "MPI_File_close", t);
}

class MpiioBackend final : public ShardBackend {
 public:
  explicit MpiioBackend(MPI_Comm comm) : comm_(comm) {}
  std::string name() const override { return "mpiio shared_file"; }

  IoTimes write(const ShardTarget& t, std::span<const std::byte> data) override {
    IoTimes out;
    out.start_s = now_s();
    MPI_File fh = MPI_FILE_NULL;
    mpiio_check(
        MPI_File_open(comm_, t.file.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh),
        "MPI_File_open", t);
    double at = now_s();
    out.open_s = at - out.start_s;
    std::exception_ptr failed;
    try {
      for_each_block(t, data.size(), true, [&](std::uint64_t done, std::uint64_t n) {
        // --inject ioerror: the call is made (it is collective), with nothing to write.
        const bool fail = t.fail_errno != 0 && done == 0 && n > 0;
        MPI_Status st;
        mpiio_check(
            MPI_File_write_at_all(fh, static_cast<MPI_Offset>(t.offset + done), data.data() + done,
                                  fail ? 0 : static_cast<int>(n), MPI_BYTE, &st),
            "MPI_File_write_at_all", t);
        if (fail) throw_io("MPI_File_write_at_all", t.file, t.fail_errno, t.where);
      });
    } catch (...) {
      failed = std::current_exception();
    }
    out.io_s = now_s() - at;
    finish_collective(fh, t, t.fsync, failed, out);
    out.cache_dropped = drop_cache(t, data.size());
    return out;
  }

  IoTimes read(const ShardTarget& t, std::span<std::byte> data) override {
    IoTimes out;
    out.start_s = now_s();
    MPI_File fh = MPI_FILE_NULL;
    mpiio_check(MPI_File_open(comm_, t.file.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
                "MPI_File_open", t);
    double at = now_s();
    out.open_s = at - out.start_s;
    std::exception_ptr failed;
    try {
      for_each_block(t, data.size(), true, [&](std::uint64_t done, std::uint64_t n) {
        MPI_Status st;
        mpiio_check(MPI_File_read_at_all(fh, static_cast<MPI_Offset>(t.offset + done),
                                         data.data() + done, static_cast<int>(n), MPI_BYTE, &st),
                    "MPI_File_read_at_all", t);
        int got = 0;
        MPI_Get_count(&st, MPI_BYTE, &got);
        if (static_cast<std::uint64_t>(got) != n) {
          throw RuntimeFault((t.where.empty() ? "" : t.where + ": ") + "MPI_File_read_at_all " +
                             t.file.string() + ": " + std::to_string(got) + " of " +
                             std::to_string(n) + " bytes at " + std::to_string(t.offset + done) +
                             " (a truncated checkpoint)");
        }
      });
    } catch (...) {
      failed = std::current_exception();
    }
    out.io_s = now_s() - at;
    finish_collective(fh, t, false, failed, out);
    return out;
  }

 private:
  MPI_Comm comm_;
};

}  // namespace

std::unique_ptr<ShardBackend> make_backend(const std::string& api, const std::string& layout,
                                           MPI_Comm comm) {
  if (api == "mpiio") {
    if (layout != "shared_file") {
      throw UsageError(
          "checkpoint.api mpiio writes one shared file: set checkpoint.layout: "
          "shared_file (or checkpoint.api: posix for file_per_process)");
    }
    return std::make_unique<MpiioBackend>(comm);
  }
  if (api != "posix") throw UsageError("checkpoint.api: \"" + api + "\" is not posix or mpiio");
  return std::make_unique<PosixBackend>(layout == "shared_file");
}

AlignedBuffer::AlignedBuffer(std::uint64_t bytes, std::uint64_t align) : bytes_(bytes) {
  const std::uint64_t a = std::max<std::uint64_t>(align, 4096);
  const std::uint64_t rounded = (bytes + a - 1) / a * a;
  data_ = static_cast<std::byte*>(std::aligned_alloc(a, std::max<std::uint64_t>(rounded, a)));
  if (data_ == nullptr) {
    throw OutOfMemory("cannot allocate " + std::to_string(bytes) + " bytes for a checkpoint shard");
  }
  // Touched now, so no timed read pays the page faults of a fresh buffer.
  std::memset(data_, 0, bytes);
}

AlignedBuffer::~AlignedBuffer() {
  std::free(data_);
}

}  // namespace shakedown::storage
