#include "comm/mpi_comm.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "comm/half.hpp"
#include "comm/pattern_math.hpp"

namespace shakedown {

namespace {

// User-defined sum/max for the 16-bit floats MPI has no type for: widen, combine, round to
// nearest even (half.hpp, the same conversions the patterns use).
template <double (*ToDouble)(std::uint16_t), std::uint16_t (*FromDouble)(double), bool kMax>
void half_op(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    // float arithmetic, as a GPU reduction would do it, then one rounding back.
    const auto x = static_cast<float>(ToDouble(a[i]));
    const auto y = static_cast<float>(ToDouble(b[i]));
    b[i] = FromDouble(static_cast<double>(kMax ? (x > y ? x : y) : x + y));
  }
}

class HostBuffer : public Buffer {
 public:
  explicit HostBuffer(std::size_t bytes) : Buffer(bytes) {
    // 64-byte alignment: cache lines, and what vectorised reductions like.
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    data_ = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (data_ == nullptr) {
      throw OutOfMemory("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    }
  }
  ~HostBuffer() override { std::free(data_); }
};

const char* at(const void* base, std::uint64_t elements, std::size_t elem_size) {
  return static_cast<const char*>(base) + elements * elem_size;
}

}  // namespace

MpiComm::MpiComm(MPI_Comm comm, int host_threads) : comm_(comm), host_threads_(host_threads) {
  rank_ = comm_rank(comm);
  size_ = comm_size(comm);
  SD_MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, &half_type_));
  SD_MPI_CHECK(MPI_Type_commit(&half_type_));
  SD_MPI_CHECK(MPI_Op_create(
      &half_op<small_float::bf16_to_double, small_float::bf16_from_double, false>, 1, &bf16_sum_));
  SD_MPI_CHECK(MPI_Op_create(
      &half_op<small_float::bf16_to_double, small_float::bf16_from_double, true>, 1, &bf16_max_));
  SD_MPI_CHECK(MPI_Op_create(
      &half_op<small_float::fp16_to_double, small_float::fp16_from_double, false>, 1, &fp16_sum_));
  SD_MPI_CHECK(MPI_Op_create(
      &half_op<small_float::fp16_to_double, small_float::fp16_from_double, true>, 1, &fp16_max_));
}

MpiComm::~MpiComm() {
  if (MpiEnvironment::finalized()) return;
  for (MPI_Op* op : {&bf16_sum_, &bf16_max_, &fp16_sum_, &fp16_max_}) {
    if (*op != MPI_OP_NULL) MPI_Op_free(op);
  }
  if (half_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&half_type_);
}

std::unique_ptr<Buffer> MpiComm::allocate(std::size_t bytes) {
  return std::make_unique<HostBuffer>(bytes);
}

std::string MpiComm::unsupported(CollectiveKind /*kind*/, DType dtype, ReduceOp /*op*/) const {
  if (dtype == DType::kFp8E4M3 || dtype == DType::kFp8E5M2) {
    return "the MPI backend has no fp8 type (NCCL >= 2.24 on sm90 has)";
  }
  return "";
}

std::uint64_t MpiComm::in_place_recv_offset(CollectiveKind /*kind*/, std::uint64_t /*unit*/) const {
  return 0;  // MPI_IN_PLACE reduce_scatter leaves the result at the start of the buffer
}

MPI_Datatype MpiComm::mpi_type(DType dtype) const {
  switch (dtype) {
    case DType::kFloat32:
      return MPI_FLOAT;
    case DType::kInt32:
      return MPI_INT32_T;
    case DType::kBFloat16:
    case DType::kFloat16:
      return half_type_;
    case DType::kFp8E4M3:
    case DType::kFp8E5M2:
      break;
  }
  throw InternalError("MpiComm: no MPI type for " + std::string(dtype_name(dtype)));
}

MPI_Op MpiComm::mpi_op(DType dtype, ReduceOp op) const {
  const bool sum = op == ReduceOp::kSum;
  if (dtype == DType::kBFloat16) return sum ? bf16_sum_ : bf16_max_;
  if (dtype == DType::kFloat16) return sum ? fp16_sum_ : fp16_max_;
  return sum ? MPI_SUM : MPI_MAX;
}

void MpiComm::run(CollectiveKind kind, const void* send, void* recv, std::uint64_t unit,
                  DType dtype, ReduceOp op, int root) {
  const MPI_Datatype type = mpi_type(dtype);
  const std::size_t elem = dtype_size(dtype);
  const int count = static_cast<int>(unit);
  if (unit > 0x7fffffffu) throw UsageError("MPI counts are limited to 2^31-1 elements per call");
  switch (kind) {
    case CollectiveKind::kAllReduce:
      SD_MPI_CHECK(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, count, type,
                                 mpi_op(dtype, op), comm_));
      return;
    case CollectiveKind::kAllGather: {
      const bool in_place = send == at(recv, static_cast<std::uint64_t>(rank_) * unit, elem);
      SD_MPI_CHECK(
          MPI_Allgather(in_place ? MPI_IN_PLACE : send, count, type, recv, count, type, comm_));
      return;
    }
    case CollectiveKind::kReduceScatter:
      SD_MPI_CHECK(MPI_Reduce_scatter_block(send == recv ? MPI_IN_PLACE : send, recv, count, type,
                                            mpi_op(dtype, op), comm_));
      return;
    case CollectiveKind::kBroadcast:
      // As NCCL: the root's input ends up in every rank's output, the root's included.
      if (rank_ == root && send != recv) std::memcpy(recv, send, unit * elem);
      SD_MPI_CHECK(MPI_Bcast(recv, count, type, root, comm_));
      return;
    case CollectiveKind::kAllToAll:
      SD_MPI_CHECK(
          MPI_Alltoall(send == recv ? MPI_IN_PLACE : send, count, type, recv, count, type, comm_));
      return;
    case CollectiveKind::kSendRecv: {
      const int next = (rank_ + 1) % size_;
      const int prev = (rank_ - 1 + size_) % size_;
      constexpr int kTag = 7401;
      if (send == recv) {
        SD_MPI_CHECK(MPI_Sendrecv_replace(recv, count, type, next, kTag, prev, kTag, comm_,
                                          MPI_STATUS_IGNORE));
      } else {
        SD_MPI_CHECK(MPI_Sendrecv(send, count, type, next, kTag, recv, count, type, prev, kTag,
                                  comm_, MPI_STATUS_IGNORE));
      }
      return;
    }
  }
  throw InternalError("MpiComm::run: unknown collective");
}

void MpiComm::barrier() {
  SD_MPI_CHECK(MPI_Barrier(comm_));
}

void MpiComm::fill(Buffer& buffer, std::uint64_t offset, CollectiveKind kind,
                   const CollectiveCounts& counts, const PatternSpec& spec) {
  char* base = static_cast<char*>(buffer.data()) + offset * dtype_size(spec.dtype);
  fill_input(base, kind, counts, spec, rank_, host_threads_);
}

VerifyResult MpiComm::verify(const Buffer& buffer, std::uint64_t offset, CollectiveKind kind,
                             const CollectiveCounts& counts, const PatternSpec& spec) {
  const char* base = static_cast<const char*>(buffer.data()) + offset * dtype_size(spec.dtype);
  return verify_output(base, kind, counts, spec, rank_, host_threads_);
}

void MpiComm::corrupt(Buffer& output, std::uint64_t index, DType dtype) {
  // A value that differs and survives the store in this dtype (v + 1 may round back to v).
  store_element(output.data(), dtype, index,
                corrupted_value(dtype, load_element(output.data(), dtype, index)));
}

}  // namespace shakedown
