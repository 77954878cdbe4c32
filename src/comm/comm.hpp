#pragma once
// One communication interface, two backends (docs/architecture.md): MpiComm (host memory, any MPI
// communicator) and NcclComm (device memory, own stream). The collectives phase is written once
// against this interface; the backend is chosen once.
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>

#include "comm/collectives.hpp"
#include "comm/dtype.hpp"
#include "comm/pattern.hpp"
#include "core/error.hpp"

namespace shakedown {

enum class MemoryKind { kHost, kDevice };

// Owns memory of the backend's kind; each backend's subclass allocates in its constructor and
// frees in its destructor. Not copyable.
class Buffer {
 public:
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 protected:
  explicit Buffer(std::size_t bytes) : bytes_(bytes) {}
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

class Comm {
 public:
  virtual ~Comm() = default;

  virtual std::string backend() const = 0;  // "mpi" | "nccl"
  virtual MemoryKind memory() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Throws OutOfMemory when the memory is not there.
  virtual std::unique_ptr<Buffer> allocate(std::size_t bytes) = 0;

  // "" when this backend can run `kind` on `dtype` with `op`, else why not (e.g. "MPI has no
  // fp8 type", "NCCL < 2.24"): the sweep records it as unsupported, never skips silently.
  virtual std::string unsupported(CollectiveKind kind, DType dtype, ReduceOp op) const = 0;
  // "" when `kind` can run in place here, else why not (NCCL: no in-place send/recv patterns).
  virtual std::string unsupported_in_place(CollectiveKind /*kind*/) const { return ""; }

  // In-place runs use one buffer of max(send, recv) elements. The input starts at
  // in_place_send_offset and the output at in_place_recv_offset (elements): as nccl-tests,
  // all_gather's input sits at rank*unit of the output, reduce_scatter's output at rank*unit of
  // the input. MPI's reduce_scatter leaves its in-place result at 0 instead (MpiComm overrides).
  virtual std::uint64_t in_place_send_offset(CollectiveKind kind, std::uint64_t unit) const {
    return kind == CollectiveKind::kAllGather ? static_cast<std::uint64_t>(rank()) * unit : 0;
  }
  virtual std::uint64_t in_place_recv_offset(CollectiveKind kind, std::uint64_t unit) const {
    return kind == CollectiveKind::kReduceScatter ? static_cast<std::uint64_t>(rank()) * unit : 0;
  }

  // The collective as nccl-tests runs it; in place when `send` is the in-place input position
  // of the buffer `recv` belongs to (see the offsets above). Counts are CollectiveCounts::unit.
  // Enqueues on NCCL; synchronize() waits.
  virtual void run(CollectiveKind kind, const void* send, void* recv, std::uint64_t unit,
                   DType dtype, ReduceOp op, int root) = 0;
  virtual void synchronize() = 0;
  virtual void barrier() = 0;
  // Best effort teardown after a timeout (ncclCommAbort); MPI has nothing finer than MPI_Abort.
  virtual void abort() = 0;
  // A collective was started and not yet seen finished (the watchdog aborts these first: tearing
  // down an idle communicator frees device memory, which waits behind a hung kernel).
  virtual bool in_flight() const { return false; }

  // Pattern fill and check of this rank's buffers (host code for MPI, kernels for NCCL). The
  // input (counts.send elements) / output (counts.recv elements) start `offset` elements into
  // the buffer (non-zero for in-place runs).
  virtual void fill(Buffer& buffer, std::uint64_t offset, CollectiveKind kind,
                    const CollectiveCounts& counts, const PatternSpec& spec) = 0;
  virtual VerifyResult verify(const Buffer& buffer, std::uint64_t offset, CollectiveKind kind,
                              const CollectiveCounts& counts, const PatternSpec& spec) = 0;
  // Flips one element of `output` (for --inject corrupt): the verify that follows must see it.
  virtual void corrupt(Buffer& output, std::uint64_t index, DType dtype) = 0;
};

// Aborts every communicator of `comms` (null entries skipped), those with a collective in flight
// first: aborting an idle one frees device memory, which waits behind the hung kernel. For a
// watchdog timeout.
inline void abort_busy_first(std::initializer_list<Comm*> comms) {
  for (bool busy : {true, false}) {
    for (Comm* c : comms) {
      if (c != nullptr && c->in_flight() == busy) c->abort();
    }
  }
}

}  // namespace shakedown
