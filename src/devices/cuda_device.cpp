// The devices phase's CUDA path: this rank's GPU memory (our copy and triad kernels and a
// copy-engine device-to-device copy), pinned host<->device copies, the PCIe link read under load,
// and copies from the node's other GPUs through CUDA IPC. Each trial is timed with events queued
// behind a spin kernel the host releases once everything is enqueued (nvbandwidth's method), so
// the launch cost stays outside the timed region.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "devices/device.hpp"

#if SHAKEDOWN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda_check.hpp"
#include "core/cuda_event.hpp"
#include "kernels/device_kernels.hpp"
#include "runtime/mpi.hpp"
#endif

namespace shakedown::devices {

#if SHAKEDOWN_HAVE_CUDA

namespace {

// The spin kernel gives up after this long, so a host that never releases it cannot hang the GPU.
constexpr std::uint32_t kSpinTimeoutMs = 10000;
// Copies per trial of the host<->device and pair tests, back to back on one stream (nvbandwidth's
// loop count): one 64 MiB NVLink copy lasts ~0.2 ms, not much longer than the skew between two
// ranks released by a barrier, so a bidirectional or all-at-once trial of single copies would
// overlap only in part. A trial's time is the mean per copy.
constexpr int kCopiesPerTrial = 16;

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) { SD_CUDA_CHECK(cudaMalloc(&p_, bytes)); }
  ~DeviceBuffer() {
    if (p_ != nullptr) (void)cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  double* doubles() const { return static_cast<double*>(p_); }

 private:
  void* p_ = nullptr;
};

// Host memory first touched by this rank (so on its NUMA node), then pinned for the copy engines.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
    p_ = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (p_ == nullptr) {
      throw OutOfMemory("devices: cannot allocate " + std::to_string(bytes) +
                        " bytes of host memory (lower devices.copy_bytes)");
    }
    std::memset(p_, 0x5a, bytes);
    const cudaError_t rc = cudaHostRegister(p_, bytes, cudaHostRegisterDefault);
    if (rc != cudaSuccess) {
      std::free(p_);
      p_ = nullptr;
      detail::cuda_check(rc, "cudaHostRegister", __FILE__, __LINE__);
    }
  }
  ~PinnedBuffer() {
    if (p_ == nullptr) return;
    (void)cudaHostUnregister(p_);
    std::free(p_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() { SD_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// A flag in mapped host memory that the spin kernel polls.
class SpinFlag {
 public:
  SpinFlag() {
    void* host = nullptr;
    void* device = nullptr;
    SD_CUDA_CHECK(cudaHostAlloc(&host, 2 * sizeof(int), cudaHostAllocMapped));
    host_ = static_cast<int*>(host);
    host_[0] = 0;
    host_[1] = 0;
    SD_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0));
    device_ = static_cast<int*>(device);
  }
  ~SpinFlag() { (void)cudaFreeHost(host_); }
  SpinFlag(const SpinFlag&) = delete;
  SpinFlag& operator=(const SpinFlag&) = delete;
  void hold() {
    __atomic_store_n(host_ + 1, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(host_, 0, __ATOMIC_SEQ_CST);
  }
  // The spin kernel gave up waiting (it writes the second word): the trial's time is not valid.
  bool timed_out() const { return __atomic_load_n(host_ + 1, __ATOMIC_SEQ_CST) != 0; }
  void release() { __atomic_store_n(host_, 1, __ATOMIC_SEQ_CST); }
  volatile int* device() const { return device_; }

 private:
  int* host_ = nullptr;    // written with atomic stores
  int* device_ = nullptr;  // the same memory as the GPU sees it
};

// "00000000:19:00.0" (CUDA may print an 8-digit domain) -> "0000:19:00.0", lower case, as sysfs.
std::string sysfs_bus_id(std::string id) {
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id = id.substr(colon - 4);
  return id;
}

// Orders link readings: faster first, then wider; an unreadable field counts as the least.
std::pair<double, double> link_rank(const LinkState& l) {
  return {std::isnan(l.current_gts) ? -1.0 : l.current_gts,
          std::isnan(l.current_width) ? -1.0 : l.current_width};
}

class CudaDevice final : public Device {
 public:
  CudaDevice(int device, std::uint64_t bytes, std::uint64_t copy_bytes)
      : device_(device), n_(bytes / sizeof(double)), copy_bytes_(copy_bytes) {
    SD_CUDA_CHECK(cudaSetDevice(device));
    SD_CUDA_CHECK(cudaFree(nullptr));  // the context, before the free-memory reading
    std::size_t free = 0, total = 0;
    SD_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    free_ = static_cast<double>(free);
    total_ = static_cast<double>(total);
    char bus[32] = {};
    SD_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device));
    bus_id_ = sysfs_bus_id(bus);
    char name[256] = {};
    cudaDeviceProp prop{};
    SD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    std::memcpy(name, prop.name, sizeof prop.name < sizeof name ? sizeof prop.name : sizeof name);
    name[sizeof name - 1] = '\0';
    name_ = name;

    a_ = std::make_unique<DeviceBuffer>(n_ * sizeof(double));
    b_ = std::make_unique<DeviceBuffer>(n_ * sizeof(double));
    c_ = std::make_unique<DeviceBuffer>(n_ * sizeof(double));
    dev_copy_ = std::make_unique<DeviceBuffer>(copy_bytes_);
    pair_src_ = std::make_unique<DeviceBuffer>(copy_bytes_);
    host_src_ = std::make_unique<PinnedBuffer>(copy_bytes_);
    host_dst_ = std::make_unique<PinnedBuffer>(copy_bytes_);
    kernels::launch_fill(a_->doubles(), 1.0, n_, measured_.get());
    kernels::launch_fill(b_->doubles(), 2.0, n_, measured_.get());
    kernels::launch_fill(c_->doubles(), 0.0, n_, measured_.get());
    kernels::launch_fill(pair_src_->doubles(), static_cast<double>(device) + 1.0,
                         copy_bytes_ / sizeof(double), measured_.get());
    // Load every kernel now: CUDA loads kernels lazily at first launch, and a load while the spin
    // kernel holds the GPU may wait for it (a stall until the spin times out).
    kernels::launch_copy(c_->doubles(), a_->doubles(), n_, measured_.get());
    kernels::launch_triad(a_->doubles(), b_->doubles(), c_->doubles(), 3.0, n_, measured_.get());
    flag_.release();
    kernels::launch_spin(flag_.device(), kSpinTimeoutMs, measured_.get());
    SD_CUDA_CHECK(cudaStreamSynchronize(measured_.get()));

    const double array = static_cast<double>(n_ * sizeof(double));
    const double copy = static_cast<double>(copy_bytes_);
    tests_ = {{"copy", 2 * array, "read + written (STREAM)"},
              {"triad", 3 * array, "read + written (STREAM)"},
              {"ce_copy", 2 * array, "read + written (STREAM)"},
              {"h2d", copy, "copied (per copy, 16 back to back)"},
              {"d2h", copy, "copied (per copy, 16 back to back)"},
              {"h2d_bidir", copy, "copied (per copy, 16 back to back, while d2h copies run)"},
              {"d2h_bidir", copy, "copied (per copy, 16 back to back, while h2d copies run)"}};
  }

  std::string kind() const override { return "cuda"; }
  std::string describe() const override {
    return "GPU " + std::to_string(device_) + " " + name_ + " (" + bus_id_ + ")";
  }
  const std::vector<MemoryTest>& tests() const override { return tests_; }
  double free_bytes() const override { return free_; }
  double total_bytes() const override { return total_; }

  double run(std::size_t test) override {
    SD_CUDA_CHECK(cudaSetDevice(device_));
    cudaStream_t s = measured_.get();
    switch (test) {
      case 0:
        return timed([&] { kernels::launch_copy(c_->doubles(), a_->doubles(), n_, s); });
      case 1:
        return timed([&] {
          kernels::launch_triad(a_->doubles(), b_->doubles(), c_->doubles(), 3.0, n_, s);
        });
      case 2:
        return timed([&] {
          SD_CUDA_CHECK(cudaMemcpyAsync(c_->get(), a_->get(), n_ * sizeof(double),
                                        cudaMemcpyDeviceToDevice, s));
        });
      case 3:
        return timed([&] { repeat([&] { h2d(s); }); }) / kCopiesPerTrial;
      case 4:
        return timed([&] { repeat([&] { d2h(s); }); }) / kCopiesPerTrial;
      case 5:
        return timed([&] { repeat([&] { h2d(s); }); },
                     [&](cudaStream_t other) { repeat([&] { d2h(other); }); }) /
               kCopiesPerTrial;
      case 6:
        return timed([&] { repeat([&] { d2h(s); }); },
                     [&](cudaStream_t other) { repeat([&] { h2d(other); }); }) /
               kCopiesPerTrial;
      default:
        throw InternalError("devices: no CUDA test " + std::to_string(test));
    }
  }

  std::vector<LinkState> links_under_load() override {
    SD_CUDA_CHECK(cudaSetDevice(device_));
    // Host->device copies for a while (4 GiB: ~70 ms at Gen5 x16, whatever devices.copy_bytes
    // is), the link read every millisecond while they run: a GPU raises its link speed under
    // load within a few ms, so the best reading is the link's; one that trained down never
    // reads its maximum.
    cudaStream_t s = measured_.get();
    const std::uint64_t copies = std::clamp<std::uint64_t>(
        (4ull << 30) / std::max<std::uint64_t>(copy_bytes_, 1), 4 * kCopiesPerTrial, 65536);
    for (std::uint64_t i = 0; i < copies; ++i) h2d(s);
    LinkState best;
    bool read_under_load = false;
    for (int reads = 0; reads < 10000; ++reads) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      // Only readings taken while copies are still queued count: after them the link is idle.
      if (const cudaError_t q = cudaStreamQuery(s); q != cudaErrorNotReady) {
        SD_CUDA_CHECK(q);
        break;
      }
      const LinkState now = read_pcie_link("", bus_id_, "GPU " + bus_id_);
      if (!read_under_load || link_rank(now) > link_rank(best)) best = now;
      read_under_load = true;
    }
    SD_CUDA_CHECK(cudaStreamSynchronize(s));
    if (!read_under_load) {
      // The copies ended before the first reading (a small devices.copy_bytes): the maxima
      // are known, the current link under load is not, and is not judged.
      best = read_pcie_link("", bus_id_, "GPU " + bus_id_);
      best.current_gts = best.current_width = std::numeric_limits<double>::quiet_NaN();
    }
    return {best};
  }

  std::vector<std::string> open_peers(MPI_Comm node) override {
    int me = 0, size = 0;
    SD_MPI_CHECK(MPI_Comm_rank(node, &me));
    SD_MPI_CHECK(MPI_Comm_size(node, &size));
    // Nothing may throw before the node's allgathers below: the rank's peers would wait in them
    // for it. An error here is this rank's finding (and its peers', through `ok`).
    cudaIpcMemHandle_t mine{};
    std::string why_not;
    if (const cudaError_t rc = cudaSetDevice(device_); rc != cudaSuccess) {
      (void)cudaGetLastError();
      why_not = std::string("cudaSetDevice: ") + cudaGetErrorString(rc);
    } else if (const cudaError_t ipc = cudaIpcGetMemHandle(&mine, pair_src_->get());
               ipc != cudaSuccess) {
      (void)cudaGetLastError();
      why_not = std::string("cudaIpcGetMemHandle: ") + cudaGetErrorString(ipc);
    }
    std::vector<cudaIpcMemHandle_t> handles(static_cast<std::size_t>(size));
    SD_MPI_CHECK(
        MPI_Allgather(&mine, sizeof mine, MPI_BYTE, handles.data(), sizeof mine, MPI_BYTE, node));
    char bus[32] = {};
    std::snprintf(bus, sizeof bus, "%s", bus_id_.c_str());
    std::vector<char> buses(static_cast<std::size_t>(size) * sizeof bus);
    SD_MPI_CHECK(
        MPI_Allgather(bus, sizeof bus, MPI_CHAR, buses.data(), sizeof bus, MPI_CHAR, node));
    std::vector<int> ok(static_cast<std::size_t>(size));
    const int mine_ok = why_not.empty() ? 1 : 0;
    SD_MPI_CHECK(MPI_Allgather(&mine_ok, 1, MPI_INT, ok.data(), 1, MPI_INT, node));
    std::vector<std::string> refused(static_cast<std::size_t>(size));
    peers_.assign(static_cast<std::size_t>(size), nullptr);
    for (int p = 0; p < size; ++p) {
      const auto up = static_cast<std::size_t>(p);
      if (p == me) {
        peers_[up] = pair_src_->get();
        continue;
      }
      if (ok[up] == 0) {
        refused[up] = "its GPU memory could not be exported (cudaIpcGetMemHandle failed there)";
        continue;
      }
      // Where the peer's GPU is visible here too, ask CUDA whether P2P is possible at all: a copy
      // staged through host memory would measure the host path, not the link.
      int peer_device = -1, can = 1;
      const bool visible =
          cudaDeviceGetByPCIBusId(&peer_device, &buses[up * sizeof bus]) == cudaSuccess;
      if (visible && peer_device != device_) {
        SD_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device_, peer_device));
      } else if (!visible) {
        (void)cudaGetLastError();
      }
      if (can == 0) {
        refused[up] = "cudaDeviceCanAccessPeer: no peer access between " + bus_id_ + " and " +
                      std::string(&buses[up * sizeof bus]) +
                      " (P2P disabled, ACS or an IOMMU between the GPUs)";
        continue;
      }
      void* ptr = nullptr;
      const cudaError_t rc =
          cudaIpcOpenMemHandle(&ptr, handles[up], cudaIpcMemLazyEnablePeerAccess);
      if (rc != cudaSuccess) {
        (void)cudaGetLastError();
        refused[up] =
            std::string("cudaIpcOpenMemHandle: ") + cudaGetErrorName(rc) + ": " +
            cudaGetErrorString(rc) +
            (visible ? " (peer access refused: P2P disabled, ACS or an IOMMU between the GPUs, "
                       "or ranks in different IPC namespaces)"
                     : " (the peer's GPU " + std::string(&buses[up * sizeof bus]) +
                           " is not visible to this rank: CUDA_VISIBLE_DEVICES or srun "
                           "--gpu-bind gives each rank its own GPU, and CUDA IPC needs both "
                           "visible; let every rank see the node's GPUs)");
        continue;
      }
      peers_[up] = ptr;
      opened_.push_back(ptr);
    }
    if (!why_not.empty()) refused[static_cast<std::size_t>(me)] = why_not;
    node_ = node;
    return refused;
  }

  double copy_from(int peer) override {
    void* src = peers_.at(static_cast<std::size_t>(peer));
    if (src == nullptr) throw InternalError("devices: copy from a peer that was not opened");
    SD_CUDA_CHECK(cudaSetDevice(device_));
    cudaStream_t s = measured_.get();
    return timed([&] {
             repeat([&] {
               SD_CUDA_CHECK(cudaMemcpyAsync(dev_copy_->get(), src, copy_bytes_,
                                             cudaMemcpyDeviceToDevice, s));
             });
           }) /
           kCopiesPerTrial;
  }

  void close_peers() override {
    // This rank's copies from its peers have finished, and every rank has got that far, before
    // anyone closes a mapping; every mapping is closed before any owner may free its buffer.
    SD_CUDA_CHECK(cudaDeviceSynchronize());
    if (node_ != MPI_COMM_NULL) SD_MPI_CHECK(MPI_Barrier(node_));
    for (void* p : opened_) SD_CUDA_CHECK(cudaIpcCloseMemHandle(p));
    opened_.clear();
    peers_.clear();
    if (node_ != MPI_COMM_NULL) SD_MPI_CHECK(MPI_Barrier(node_));
  }
  ~CudaDevice() override {
    // No DMA in flight into the pinned buffers when they are unregistered (exception paths).
    (void)cudaSetDevice(device_);
    (void)cudaDeviceSynchronize();
  }
  double pair_bytes() const override { return static_cast<double>(copy_bytes_); }
  int copies_per_trial() const override { return kCopiesPerTrial; }

 private:
  void h2d(cudaStream_t s) {
    SD_CUDA_CHECK(cudaMemcpyAsync(dev_copy_->get(), host_src_->get(), copy_bytes_,
                                  cudaMemcpyHostToDevice, s));
  }
  void d2h(cudaStream_t s) {
    SD_CUDA_CHECK(cudaMemcpyAsync(host_dst_->get(), pair_src_->get(), copy_bytes_,
                                  cudaMemcpyDeviceToHost, s));
  }
  template <class Copy>
  static void repeat(Copy copy) {
    for (int i = 0; i < kCopiesPerTrial; ++i) copy();
  }

  // Seconds of `work` on the measured stream, queued behind a spin kernel; `interfering`, when
  // given, runs on a second stream released at the same moment (not timed).
  template <class Work>
  double timed(Work work) {
    return timed(
        work, [](cudaStream_t) {}, false);
  }
  template <class Work, class Other>
  double timed(Work work, Other interfering, bool with_other = true) {
    cudaStream_t s = measured_.get();
    flag_.hold();
    kernels::launch_spin(flag_.device(), kSpinTimeoutMs, s);
    if (with_other) {
      kernels::launch_spin(flag_.device(), kSpinTimeoutMs, other_.get());
      interfering(other_.get());
    }
    start_.record(s);
    work();
    stop_.record(s);
    flag_.release();
    SD_CUDA_CHECK(cudaEventSynchronize(stop_.get()));
    if (with_other) SD_CUDA_CHECK(cudaStreamSynchronize(other_.get()));
    if (flag_.timed_out()) {
      throw RuntimeFault("devices: GPU " + bus_id_ +
                         ": the host did not release the timing spin kernel within " +
                         std::to_string(kSpinTimeoutMs / 1000) +
                         " s (enqueueing the work blocked): the trial's time is not valid");
    }
    return CudaEvent::seconds(start_, stop_);
  }

  int device_;
  std::size_t n_;
  std::uint64_t copy_bytes_;
  double free_ = 0, total_ = 0;
  std::string bus_id_, name_;
  Stream measured_, other_;
  CudaEvent start_, stop_;
  SpinFlag flag_;
  std::unique_ptr<DeviceBuffer> a_, b_, c_, dev_copy_, pair_src_;
  std::unique_ptr<PinnedBuffer> host_src_, host_dst_;
  std::vector<MemoryTest> tests_;
  std::vector<void*> peers_, opened_;
  MPI_Comm node_ = MPI_COMM_NULL;
};

}  // namespace

std::unique_ptr<Device> make_cuda_device(int device, std::uint64_t bytes,
                                         std::uint64_t copy_bytes) {
  // Before the members (streams, events) are made: they belong to the current device.
  SD_CUDA_CHECK(cudaSetDevice(device));
  return std::make_unique<CudaDevice>(device, bytes, copy_bytes);
}

#else

std::unique_ptr<Device> make_cuda_device(int, std::uint64_t, std::uint64_t) {
  throw RuntimeFault(
      "devices: this shakedown was built without CUDA; set devices.path=cpu or rebuild with the "
      "CUDA toolkit (cmake -DSHAKEDOWN_CUDA=ON)");
}

#endif

}  // namespace shakedown::devices
