#pragma once
// The MPI backend: host buffers, any MPI communicator (world, node, rail), the collectives as
// MPI-3 calls. bfloat16 and float16 have no MPI type: they travel as 2-byte contiguous types with
// user-defined sum/max ops; fp8 is unsupported (said so, never skipped silently).
#include <memory>

#include "comm/comm.hpp"
#include "runtime/mpi.hpp"

namespace shakedown {

class MpiComm : public Comm {
 public:
  // Borrows `comm` (the Context owns it); MPI_COMM_NULL is not allowed. fill and verify split
  // large buffers over `host_threads` threads (core/host.hpp cpu_share: the rank's CPUs).
  explicit MpiComm(MPI_Comm comm, int host_threads = 1);
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  std::string backend() const override { return "mpi"; }
  MemoryKind memory() const override { return MemoryKind::kHost; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MPI_Comm comm() const { return comm_; }  // for non-blocking calls of the caller's own

  std::unique_ptr<Buffer> allocate(std::size_t bytes) override;
  std::string unsupported(CollectiveKind kind, DType dtype, ReduceOp op) const override;
  std::uint64_t in_place_recv_offset(CollectiveKind kind, std::uint64_t unit) const override;

  void run(CollectiveKind kind, const void* send, void* recv, std::uint64_t unit, DType dtype,
           ReduceOp op, int root) override;
  void synchronize() override {}
  void barrier() override;
  void abort() override {}

  void fill(Buffer& buffer, std::uint64_t offset, CollectiveKind kind,
            const CollectiveCounts& counts, const PatternSpec& spec) override;
  VerifyResult verify(const Buffer& buffer, std::uint64_t offset, CollectiveKind kind,
                      const CollectiveCounts& counts, const PatternSpec& spec) override;
  void corrupt(Buffer& output, std::uint64_t index, DType dtype) override;

 private:
  MPI_Datatype mpi_type(DType dtype) const;
  MPI_Op mpi_op(DType dtype, ReduceOp op) const;

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  int host_threads_ = 1;
  MPI_Datatype half_type_ = MPI_DATATYPE_NULL;  // 2 bytes, for bfloat16 and float16
  MPI_Op bf16_sum_ = MPI_OP_NULL, bf16_max_ = MPI_OP_NULL;
  MPI_Op fp16_sum_ = MPI_OP_NULL, fp16_max_ = MPI_OP_NULL;
};

}  // namespace shakedown
