#if SHAKEDOWN_HAVE_CUDA

#include "comm/nccl_comm.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "comm/cuda_check.hpp"
#include "core/gpu_libraries.hpp"
#include "kernels/collective_kernels.hpp"
#include "runtime/agree.hpp"
#include "runtime/mpi.hpp"
#include "topology/versions.hpp"

namespace shakedown {

namespace {

class DeviceBuffer : public Buffer {
 public:
  // `in_flight`: its communicator's "a collective is enqueued and not yet seen to end".
  DeviceBuffer(std::size_t bytes, int device, const std::string& where,
               std::shared_ptr<const std::atomic<bool>> in_flight)
      : Buffer(bytes), in_flight_(std::move(in_flight)) {
    if (bytes == 0) return;  // cudaMalloc(0) gives nullptr; nothing to own
    const cudaError_t rc = cudaMalloc(&data_, bytes);
    if (rc == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: clear it so the next call does not see it
      std::size_t free_bytes = 0;
      std::size_t total_bytes = 0;
      (void)cudaMemGetInfo(&free_bytes, &total_bytes);
      throw OutOfMemory("cudaMalloc of " + std::to_string(bytes) + " bytes on GPU " +
                        std::to_string(device) + " (" + where + ") failed: out of memory (" +
                        std::to_string(free_bytes) + " of " + std::to_string(total_bytes) +
                        " bytes free)");
    }
    detail::cuda_check(rc, "cudaMalloc", __FILE__, __LINE__);
  }
  ~DeviceBuffer() override {
    if (data_ == nullptr) return;
    // Unwinding from a failed collective (a peer failed, NCCL reported an error): its kernel may
    // still spin on the GPU, and cudaFree synchronises the device, so it would wait there until
    // the watchdog ended the job as a hang, and the error would be lost. The job is ending:
    // leave the memory to the process's exit.
    if (std::uncaught_exceptions() > 0 && in_flight_ && in_flight_->load()) return;
    (void)cudaFree(data_);  // a destructor cannot report; teardown goes on
  }

 private:
  std::shared_ptr<const std::atomic<bool>> in_flight_;
};

// A non-blocking communicator's calls may return ncclInProgress: that is success so far.
void check_started(ncclResult_t rc, const char* expr, const char* file, int line) {
  if (rc != ncclSuccess && rc != ncclInProgress) detail::throw_nccl_error(rc, expr, file, line);
}
#define SD_NCCL_START(expr) check_started((expr), #expr, __FILE__, __LINE__)

// Closes an NCCL group on every path: an error between start and end must not leave later NCCL
// calls of this thread queued in a group that never ends.
class Group {
 public:
  Group() { SD_NCCL_CHECK(nccl_api().GroupStart()); }
  ~Group() {
    if (open_) (void)nccl_api().GroupEnd();
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  void end() {
    open_ = false;
    SD_NCCL_START(nccl_api().GroupEnd());
  }

 private:
  bool open_ = true;
};

// "<what> failed: <NCCL's error> (<its last message>) (NCCL_DEBUG=INFO ...)".
std::string async_failure(ncclComm_t comm, ncclResult_t state, const std::string& what) {
  const char* last = comm != nullptr ? nccl_api().GetLastError(comm) : nullptr;
  return what + " failed: " + nccl_api().GetErrorString(state) +
         (last != nullptr && *last != '\0' ? std::string(" (") + last + ")" : "") +
         " (NCCL_DEBUG=INFO names the peer and transport)";
}

// Polls a communicator that is not shared yet (init, split) until it leaves ncclInProgress.
void wait_until_ready(ncclComm_t comm, const std::string& what) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    SD_NCCL_CHECK(nccl_api().CommGetAsyncError(comm, &state));
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      const std::string message = async_failure(comm, state, what);
      (void)nccl_api().CommAbort(comm);
      throw RuntimeFault(message);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}
bool is_fp8(DType t) {
  return t == DType::kFp8E4M3 || t == DType::kFp8E5M2;
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kBFloat16:
      return ncclBfloat16;
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kInt32:
      return ncclInt32;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    case DType::kFp8E4M3:
      return ncclFloat8e4m3;
    case DType::kFp8E5M2:
      return ncclFloat8e5m2;
#else
    case DType::kFp8E4M3:
    case DType::kFp8E5M2:
      break;
#endif
  }
  // unsupported() says so first; reaching this is a caller that did not ask.
  throw InternalError("NcclComm: no NCCL type for " + std::string(dtype_name(t)) +
                      " in this build (NCCL " + nccl_version_string(NCCL_VERSION_CODE) +
                      " headers)");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  return op == ReduceOp::kSum ? ncclSum : ncclMax;
}

// Makes `device` current, with a message that says what is visible when it is not there.
void bind_device(int device) {
  int count = 0;
  SD_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    throw RuntimeFault("GPU " + std::to_string(device) + " requested but CUDA sees " +
                       std::to_string(count) + " device(s)" +
                       (visible != nullptr
                            ? std::string(" (CUDA_VISIBLE_DEVICES=\"") + visible + "\")"
                            : std::string()) +
                       "; check the placement (GPUs per node) and the job's GPU binding");
  }
  SD_CUDA_CHECK(cudaSetDevice(device));
}

ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  // Non-blocking: every call returns at once (maybe ncclInProgress, then polled), so no thread
  // ever sits inside NCCL and the watchdog's thread can take the call lock and ncclCommAbort a
  // communicator whose peer died (NCCL's advice for aborting from another thread). A hang
  // while polling is the watchdog's to report, like any other step.
  config.blocking = 0;
  return config;
}

// A caller bug, not a fault of the machine: the elements must lie inside the buffer.
void check_span(const Buffer& buffer, std::uint64_t offset, std::uint64_t count, std::size_t elem,
                const char* what) {
  if ((offset + count) * elem > buffer.bytes()) {
    throw InternalError(std::string("NcclComm::") + what + ": elements [" + std::to_string(offset) +
                        ", " + std::to_string(offset + count) + ") lie outside the buffer of " +
                        std::to_string(buffer.bytes()) + " bytes");
  }
}

}  // namespace

void NcclComm::StreamDeleter::operator()(CUstream_st* stream) const noexcept {
  (void)cudaStreamDestroy(stream);
}

std::unique_ptr<NcclComm> NcclComm::create(MPI_Comm comm, int device) {
  const int rank = comm_rank(comm);
  const int size = comm_size(comm);
  // A rank without its GPU, or whose host cannot load NCCL, must fail everywhere before anyone
  // waits inside NCCL's init.
  agreed(comm, [&] {
    (void)nccl_api();
    bind_device(device);
  });
  ncclUniqueId id{};
  agreed(comm, [&] {
    if (rank == 0) SD_NCCL_CHECK(nccl_api().GetUniqueId(&id));
  });
  SD_MPI_CHECK(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, comm));
  ncclConfig_t config = nonblocking_config();
  ncclComm_t raw = nullptr;
  SD_NCCL_START(nccl_api().CommInitRankConfig(&raw, size, id, rank, &config));
  wait_until_ready(raw, "ncclCommInitRankConfig (rank " + std::to_string(rank) + " of " +
                            std::to_string(size) + ", GPU " + std::to_string(device) + ")");
  return std::unique_ptr<NcclComm>(new NcclComm(raw, device));
}

std::unique_ptr<NcclComm> NcclComm::create_single(int device) {
  bind_device(device);
  ncclComm_t raw = nullptr;
  SD_NCCL_CHECK(nccl_api().CommInitAll(&raw, 1, &device));
  return std::unique_ptr<NcclComm>(new NcclComm(raw, device));
}

std::string NcclComm::version() {
  int code = 0;
  SD_NCCL_CHECK(nccl_api().GetVersion(&code));
  return nccl_version_string(code);
}

NcclComm::NcclComm(ncclComm* comm, int device) : comm_(comm), device_(device) {
  try {
    bind();
    SD_NCCL_CHECK(nccl_api().CommUserRank(comm, &rank_));
    SD_NCCL_CHECK(nccl_api().CommCount(comm, &size_));
    SD_NCCL_CHECK(nccl_api().GetVersion(&library_version_));
    SD_CUDA_CHECK(
        cudaDeviceGetAttribute(&compute_major_, cudaDevAttrComputeCapabilityMajor, device_));
    SD_CUDA_CHECK(
        cudaDeviceGetAttribute(&compute_minor_, cudaDevAttrComputeCapabilityMinor, device_));
    cudaStream_t stream = nullptr;
    // Non-blocking: no implicit synchronisation with the legacy default stream, which other code
    // (cudaMemcpy, a library) may use while a collective is in flight.
    SD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    stream_.reset(stream);
    barrier_word_ = allocate(sizeof(std::int32_t));
    SD_CUDA_CHECK(cudaMemsetAsync(barrier_word_->data(), 0, sizeof(std::int32_t), stream));
  } catch (...) {
    // The destructor does not run for a half-built object: the communicator is ours to end.
    (void)nccl_api().CommAbort(comm_.exchange(nullptr));
    throw;
  }
}

NcclComm::~NcclComm() {
  std::lock_guard lock(call_mutex_);
  ncclComm* comm = comm_.exchange(nullptr);
  if (comm == nullptr) return;  // aborted
  // Unwinding on this rank alone (wrong data, a failed peer): destroying or even aborting may
  // wait for ranks that will never come (NCCL >= 2.16 aborts cooperatively within a node), and
  // the error would then never reach the watchdog. Leave it: the job ends through MPI_Abort.
  if (std::uncaught_exceptions() > 0) return;
  (void)cudaSetDevice(device_);
  if (nccl_api().CommFinalize(comm) == ncclInProgress) {
    ncclResult_t state = ncclInProgress;
    while (nccl_api().CommGetAsyncError(comm, &state) == ncclSuccess && state == ncclInProgress) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  (void)nccl_api().CommDestroy(comm);
}

void NcclComm::wait_ready(const char* what) const {
  for (;;) {
    {
      std::lock_guard lock(call_mutex_);
      ncclResult_t state = ncclSuccess;
      SD_NCCL_CHECK(nccl_api().CommGetAsyncError(live(), &state));
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) throw_async(state, what);
    }
    // Lock released: the watchdog may abort meanwhile; live() then says so.
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void NcclComm::throw_async(int state, const char* what) const {
  throw RuntimeFault(
      async_failure(comm_.load(), static_cast<ncclResult_t>(state), where() + ": " + what));
}

ncclComm* NcclComm::live() const {
  ncclComm* comm = comm_.load();
  if (comm == nullptr) throw RuntimeFault(where() + ": the NCCL communicator was aborted");
  return comm;
}

void NcclComm::bind() const {
  SD_CUDA_CHECK(cudaSetDevice(device_));
}

std::string NcclComm::where() const {
  return "NCCL rank " + std::to_string(rank_) + "/" + std::to_string(size_) + " on GPU " +
         std::to_string(device_);
}

void* NcclComm::stream() const {
  return stream_.get();
}

std::unique_ptr<NcclComm> NcclComm::split(int color, int key) {
  bind();
  ncclConfig_t config = nonblocking_config();
  ncclComm_t child = nullptr;
  {
    std::lock_guard lock(call_mutex_);
    SD_NCCL_START(
        nccl_api().CommSplit(live(), color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, &config));
  }
  wait_ready("ncclCommSplit");           // the parent takes part in the split
  if (child == nullptr) return nullptr;  // NCCL_SPLIT_NOCOLOR: this rank is in no new group
  wait_until_ready(child, where() + ": nccl_api().CommSplit(color " + std::to_string(color) + ")");
  return std::unique_ptr<NcclComm>(new NcclComm(child, device_));
}

std::unique_ptr<Buffer> NcclComm::allocate(std::size_t bytes) {
  bind();
  return std::make_unique<DeviceBuffer>(bytes, device_, where(), in_flight_);
}

std::string NcclComm::unsupported(CollectiveKind /*kind*/, DType dtype, ReduceOp /*op*/) const {
  if (!is_fp8(dtype)) return "";
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 24, 0)
  return "NCCL " + nccl_version_string(NCCL_VERSION_CODE) +
         " (the headers shakedown was built with) has no fp8 types; fp8 needs NCCL >= 2.24";
#else
  if (library_version_ < NCCL_VERSION(2, 24, 0)) {
    return "the loaded NCCL " + nccl_version_string(library_version_) +
           " has no fp8 types; fp8 needs NCCL >= 2.24 (check LD_LIBRARY_PATH)";
  }
  if (compute_major_ < 9) {
    return "NCCL fp8 collectives need compute capability 9.0 or newer (Hopper); GPU " +
           std::to_string(device_) + " is sm_" + std::to_string(compute_major_) +
           std::to_string(compute_minor_);
  }
  return "";
#endif
}

void NcclComm::run(CollectiveKind kind, const void* send, void* recv, std::uint64_t unit,
                   DType dtype, ReduceOp op, int root) {
  *in_flight_ = true;
  {
    std::lock_guard lock(call_mutex_);
    enqueue(kind, send, recv, unit, dtype, op, root);
  }
  wait_ready(collective(kind).name.data());
}

void NcclComm::enqueue(CollectiveKind kind, const void* send, void* recv, std::uint64_t unit,
                       DType dtype, ReduceOp op, int root) {
  ncclComm* comm = live();
  const ncclDataType_t type = nccl_type(dtype);
  const cudaStream_t s = stream_.get();
  const std::size_t count = unit;
  const std::size_t chunk = unit * dtype_size(dtype);  // bytes per peer
  const auto* in = static_cast<const char*>(send);
  auto* out = static_cast<char*>(recv);
  const bool peer_to_peer = kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kSendRecv;
  if (peer_to_peer && send == recv && size_ > 1) {
    // NCCL defines in-place only for the collectives (docs: "In-place Operations"); grouped
    // sends and receives on one buffer would race.
    throw UsageError(std::string("NCCL has no in-place ") + std::string(collective(kind).name) +
                     "; run it out of place");
  }
  switch (kind) {
    case CollectiveKind::kAllReduce:
      SD_NCCL_START(nccl_api().AllReduce(send, recv, count, type, nccl_op(op), comm, s));
      return;
    case CollectiveKind::kAllGather:
      SD_NCCL_START(nccl_api().AllGather(send, recv, count, type, comm, s));
      return;
    case CollectiveKind::kReduceScatter:
      SD_NCCL_START(nccl_api().ReduceScatter(send, recv, count, type, nccl_op(op), comm, s));
      return;
    case CollectiveKind::kBroadcast:
      SD_NCCL_START(nccl_api().Broadcast(send, recv, count, type, root, comm, s));
      return;
    case CollectiveKind::kAllToAll: {
      // Grouped point-to-point, as nccl-tests does. ncclAlltoAll (2.28+) does the same inside
      // NCCL, but calling it would make the binary fail to load against an older libnccl.
      Group group;
      for (int peer = 0; peer < size_; ++peer) {
        const std::size_t offset = static_cast<std::size_t>(peer) * chunk;
        SD_NCCL_START(nccl_api().Send(in + offset, count, type, peer, comm, s));
        SD_NCCL_START(nccl_api().Recv(out + offset, count, type, peer, comm, s));
      }
      group.end();
      return;
    }
    case CollectiveKind::kSendRecv: {
      Group group;
      SD_NCCL_START(nccl_api().Send(send, count, type, (rank_ + 1) % size_, comm, s));
      SD_NCCL_START(nccl_api().Recv(recv, count, type, (rank_ - 1 + size_) % size_, comm, s));
      group.end();
      return;
    }
  }
  throw InternalError("NcclComm::run: unknown collective");
}

void NcclComm::check_async() const {
  std::lock_guard lock(call_mutex_);
  ncclResult_t async = ncclSuccess;
  SD_NCCL_CHECK(nccl_api().CommGetAsyncError(live(), &async));
  if (async == ncclSuccess || async == ncclInProgress) return;
  throw_async(async, "an NCCL operation");
}

void NcclComm::synchronize() {
  const cudaStream_t s = stream_.get();
  constexpr auto kAsyncCheckEvery = std::chrono::milliseconds(10);
  auto next_check = std::chrono::steady_clock::now() + kAsyncCheckEvery;
  for (;;) {
    const cudaError_t rc = cudaStreamQuery(s);
    if (rc == cudaSuccess) break;
    if (rc != cudaErrorNotReady)
      detail::throw_cuda_error(rc, "cudaStreamQuery", __FILE__, __LINE__);
    // cudaStreamSynchronize would wait forever for a peer that died; NCCL reports that here.
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_check) {
      check_async();
      next_check = now + kAsyncCheckEvery;
    }
    std::this_thread::yield();
  }
  check_async();
  *in_flight_ = false;
}

void NcclComm::barrier() {
  *in_flight_ = true;
  {
    std::lock_guard lock(call_mutex_);
    // MAX, not SUM: in place, a sum would multiply the word by the rank count at every barrier.
    SD_NCCL_START(nccl_api().AllReduce(barrier_word_->data(), barrier_word_->data(), 1, ncclInt32,
                                       ncclMax, live(), stream_.get()));
  }
  wait_ready("barrier");
  synchronize();
}

void NcclComm::abort() {
  // The lock: no other thread is between loading the communicator and a call on it. Every call
  // is non-blocking, so the lock comes free at once even when a collective hangs on the GPU.
  std::lock_guard lock(call_mutex_);
  ncclComm* comm = comm_.exchange(nullptr);
  if (comm == nullptr) return;
  (void)cudaSetDevice(device_);  // this may be the watchdog's thread: not device 0's context
  (void)nccl_api().CommAbort(comm);
}

void NcclComm::fill(Buffer& buffer, std::uint64_t offset, CollectiveKind kind,
                    const CollectiveCounts& counts, const PatternSpec& spec) {
  const std::size_t elem = dtype_size(spec.dtype);
  check_span(buffer, offset, counts.send, elem, "fill");
  bind();
  kernels::launch_fill(static_cast<char*>(buffer.data()) + offset * elem, kind, counts, spec, rank_,
                       stream_.get());
}

VerifyResult NcclComm::verify(const Buffer& buffer, std::uint64_t offset, CollectiveKind kind,
                              const CollectiveCounts& counts, const PatternSpec& spec) {
  const std::size_t elem = dtype_size(spec.dtype);
  check_span(buffer, offset, counts.recv, elem, "verify");
  bind();
  return kernels::run_verify(static_cast<const char*>(buffer.data()) + offset * elem, kind, counts,
                             spec, rank_, stream_.get());
}

void NcclComm::corrupt(Buffer& output, std::uint64_t index, DType dtype) {
  check_span(output, index, 1, dtype_size(dtype), "corrupt");
  bind();
  kernels::launch_corrupt(output.data(), dtype, index, stream_.get());
  SD_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
}

}  // namespace shakedown

#endif  // SHAKEDOWN_HAVE_CUDA
