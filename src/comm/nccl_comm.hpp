#pragma once
// The NCCL backend (docs/architecture.md "Layers"): device buffers, one NCCL communicator and its
// own non-blocking CUDA stream per scope; scopes (node, rail) come from ncclCommSplit of the world
// communicator. Fill and verify run as kernels on that stream.
// Only built with CUDA; nccl.h and the CUDA headers stay out of this header.
#if SHAKEDOWN_HAVE_CUDA

#include <mpi.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "comm/comm.hpp"

struct ncclComm;     // ncclComm_t is `struct ncclComm*` (nccl.h)
struct CUstream_st;  // cudaStream_t is `struct CUstream_st*` (driver_types.h)

namespace shakedown {

class NcclComm : public Comm {
 public:
  // ncclCommSplit's "not in any group" colour (NCCL_SPLIT_NOCOLOR).
  static constexpr int kNoColor = -1;

  // Collective over `comm`: every rank binds CUDA device `device`, rank 0 makes the unique id and
  // broadcasts it, then all create the NCCL communicator (blocking init: a hang there is the
  // watchdog's to report, as for any MPI step). A rank that cannot use its device makes every
  // rank throw, naming it, before anyone enters NCCL.
  static std::unique_ptr<NcclComm> create(MPI_Comm comm, int device);
  // One rank, no MPI (ncclCommInitAll on one device): for tests and single-GPU checks.
  static std::unique_ptr<NcclComm> create_single(int device);
  // "2.28.9" from the library actually loaded (ncclGetVersion), not the header.
  static std::string version();

  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  // Collective over this communicator (every rank calls it): the ranks with the same `color` form
  // a new communicator, ordered by `key` (ties by rank), on the same device with its own stream.
  // kNoColor: this rank joins none and gets nullptr. Intra-node scope:
  // split(node_index, local_rank); one rail: split(local_rank, node_index).
  std::unique_ptr<NcclComm> split(int color, int key);

  std::string backend() const override { return "nccl"; }
  MemoryKind memory() const override { return MemoryKind::kDevice; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const { return device_; }
  // The communicator's stream as a cudaStream_t, for timing with CUDA events.
  void* stream() const;

  std::unique_ptr<Buffer> allocate(std::size_t bytes) override;
  std::string unsupported(CollectiveKind kind, DType dtype, ReduceOp op) const override;
  std::string unsupported_in_place(CollectiveKind kind) const override {
    const bool p2p = kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kSendRecv;
    return p2p && size() > 1 ? "NCCL defines in-place only for collectives, not for grouped "
                               "send/recv (all_to_all, send_recv)"
                             : "";
  }

  void run(CollectiveKind kind, const void* send, void* recv, std::uint64_t unit, DType dtype,
           ReduceOp op, int root) override;
  // Waits for the stream; polls ncclCommGetAsyncError meanwhile, so a failed peer or link ends
  // the wait with an error instead of a hang.
  void synchronize() override;
  void barrier() override;
  // Thread-safe: the watchdog's thread calls it while the main thread may be in a collective.
  void abort() override;
  // Throws, naming this rank and GPU, when an operation in flight failed (a peer, the network);
  // for callers that wait on streams of their own which depend on this communicator's.
  void check_async() const;
  // A collective or barrier was enqueued and synchronize() has not seen it finish.
  bool in_flight() const override { return in_flight_->load(); }

  void fill(Buffer& buffer, std::uint64_t offset, CollectiveKind kind,
            const CollectiveCounts& counts, const PatternSpec& spec) override;
  VerifyResult verify(const Buffer& buffer, std::uint64_t offset, CollectiveKind kind,
                      const CollectiveCounts& counts, const PatternSpec& spec) override;
  void corrupt(Buffer& output, std::uint64_t index, DType dtype) override;

 private:
  struct StreamDeleter {
    void operator()(CUstream_st* stream) const noexcept;
  };
  using StreamHandle = std::unique_ptr<CUstream_st, StreamDeleter>;

  // Takes ownership of `comm`: destroyed with this object, or aborted instead when this object
  // dies during exception unwinding (ncclCommDestroy would wait for peers that may be gone).
  NcclComm(ncclComm* comm, int device);
  ncclComm* live() const;  // the communicator; throws once abort() ran (call_mutex_ held)
  // Polls ncclCommGetAsyncError until the last call left ncclInProgress; the lock is taken per
  // poll only, so abort() can come in between. Throws when it failed or was aborted.
  void wait_ready(const char* what) const;
  [[noreturn]] void throw_async(int state, const char* what) const;
  // The NCCL calls of one collective (call_mutex_ held).
  void enqueue(CollectiveKind kind, const void* send, void* recv, std::uint64_t unit, DType dtype,
               ReduceOp op, int root);
  void bind() const;          // makes device_ current for this thread (kernels launch there)
  std::string where() const;  // "NCCL rank r/n on GPU d", for messages

  StreamHandle stream_;
  // Atomic so abort() from another thread (a watchdog) and the destructor agree on who tears the
  // communicator down. The destructor ends it before stream_ (a member) is destroyed.
  std::atomic<ncclComm*> comm_{nullptr};
  // Held around every (non-blocking, so brief) NCCL call and by abort().
  mutable std::mutex call_mutex_;
  // Shared with the buffers it allocates: they are not freed while a failed collective may still
  // run (see DeviceBuffer).
  std::shared_ptr<std::atomic<bool>> in_flight_ = std::make_shared<std::atomic<bool>>(false);
  int device_ = 0;
  int rank_ = 0;
  int size_ = 1;
  int compute_major_ = 0;
  int compute_minor_ = 0;
  int library_version_ = 0;  // ncclGetVersion: the loaded library may predate the header
  std::unique_ptr<Buffer> barrier_word_;  // one int32 on the device for barrier()'s all_reduce
};

}  // namespace shakedown

#endif  // SHAKEDOWN_HAVE_CUDA
