#pragma once
// One interface per way of writing a checkpoint (as IOR's aiori backends): POSIX file per
// process, POSIX into one shared file at rank offsets, MPI-IO collective into one shared file.
// A backend writes or reads one rank's shard in `block` pieces and times each part of it.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include <mpi.h>

namespace shakedown::storage {

struct ShardTarget {
  std::filesystem::path file;  // the shard, or the shared file
  std::uint64_t offset = 0;    // where this rank's shard starts in it
  std::uint64_t block = 0;     // bytes per write or read call
  std::uint64_t calls = 0;     // MPI-IO: collective calls every rank makes (the most blocks of
                               // any rank; a rank with fewer passes 0 bytes); 0: its own blocks
  bool fsync = true;           // fsync (MPI_File_sync) before the write counts as done
  bool direct = false;         // O_DIRECT (POSIX only)
  double slow_factor = 1;      // --inject slow: each block takes this many times as long
  int fail_errno = 0;          // --inject ioerror: the first write call fails with this errno
  std::string where;           // "rank 3 (host a, node 1)", for errors
};

// Seconds on the monotonic clock (runtime/clock.hpp's now_us / 1e6).
struct IoTimes {
  double start_s = 0, end_s = 0;                          // open called .. close returned
  double open_s = 0, io_s = 0, fsync_s = 0, close_s = 0;  // io: the write or read calls
  bool cache_dropped = false;  // posix_fadvise(DONTNEED) accepted after the write
};

class ShardBackend {
 public:
  virtual ~ShardBackend() = default;
  ShardBackend() = default;
  ShardBackend(const ShardBackend&) = delete;
  ShardBackend& operator=(const ShardBackend&) = delete;

  virtual std::string name() const = 0;  // "posix file_per_process", "mpiio shared_file", ...
  // Collective over the backend's communicator for MPI-IO; per rank for POSIX.
  virtual IoTimes write(const ShardTarget& t, std::span<const std::byte> data) = 0;
  virtual IoTimes read(const ShardTarget& t, std::span<std::byte> data) = 0;
};

// api posix|mpiio, layout file_per_process|shared_file (mpiio: shared_file only). `comm` is
// every rank of the checkpoint (MPI-IO opens collectively on it).
std::unique_ptr<ShardBackend> make_backend(const std::string& api, const std::string& layout,
                                           MPI_Comm comm);

// A buffer aligned for O_DIRECT (and page-aligned anyway).
class AlignedBuffer {
 public:
  AlignedBuffer(std::uint64_t bytes, std::uint64_t align);
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();
  std::span<std::byte> span() { return {data_, bytes_}; }
  std::span<const std::byte> span() const { return {data_, bytes_}; }

 private:
  std::byte* data_ = nullptr;
  std::uint64_t bytes_ = 0;
};

}  // namespace shakedown::storage
