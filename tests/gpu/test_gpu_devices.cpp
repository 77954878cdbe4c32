// GPU tests of the devices phase's CUDA path (devices/device.hpp, kernels/device_kernels.hpp) on
// one GPU, without MPI (pairs need a node communicator and two GPUs: the phase's run covers
// them): the STREAM copy and triad kernels compute the right values at sizes that are not
// multiples of their 16-byte accesses and unrolled rounds; every test of the device times a
// trial (finite, positive, the spin kernel never timed out); free and total memory are read; the
// PCIe link is read under load. Prints GB/s per test and copy kernel / cudaMemcpyAsync D2D (the
// bench target is >= 0.9; a timing is no pass mark here). Without a GPU every test skips, saying
// why.
#include <gtest/gtest.h>

#include <string>

#if SHAKEDOWN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/cuda_check.hpp"
#include "devices/device.hpp"
#include "gemm/cublaslt_matmul.hpp"
#include "kernels/device_kernels.hpp"
#endif

namespace shakedown {
namespace {

#if !SHAKEDOWN_HAVE_CUDA

TEST(GpuDevices, NeedsCuda) {
  GTEST_SKIP() << "no CUDA device: built without CUDA (SHAKEDOWN_HAVE_CUDA=0)";
}

#else

std::string no_gpu_here() {
  static const std::string reason = cublaslt::no_gpu_reason();
  return reason;
}

class GpuDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!no_gpu_here().empty()) GTEST_SKIP() << "no CUDA device: " << no_gpu_here();
  }
};

// n doubles on the device, from the host and back.
struct DeviceDoubles {
  explicit DeviceDoubles(const std::vector<double>& host) : n(host.size()) {
    void* raw = nullptr;
    SD_CUDA_CHECK(cudaMalloc(&raw, std::max<std::size_t>(n, 1) * sizeof(double)));
    p = static_cast<double*>(raw);
    SD_CUDA_CHECK(cudaMemcpy(p, host.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  }
  ~DeviceDoubles() { (void)cudaFree(p); }
  DeviceDoubles(const DeviceDoubles&) = delete;
  DeviceDoubles& operator=(const DeviceDoubles&) = delete;
  std::vector<double> get() const {
    std::vector<double> host(n);
    SD_CUDA_CHECK(cudaMemcpy(host.data(), p, n * sizeof(double), cudaMemcpyDeviceToHost));
    return host;
  }
  double* p = nullptr;
  std::size_t n = 0;
};

TEST_F(GpuDevices, CopyAndTriadKernelsComputeEveryElement) {
  // Odd sizes (the last element alone), sizes around one unrolled round of the grid, and one
  // that spans many grid-stride rounds.
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{1001},
                              std::size_t{1} << 20, (std::size_t{1} << 22) + 3}) {
    std::vector<double> a(n), b(n), c(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = -1.0;
      b[i] = static_cast<double>(i % 1000) + 0.5;
      c[i] = static_cast<double>(i % 7) - 3.0;
    }
    DeviceDoubles da(a), db(b), dc(c);
    kernels::launch_copy(da.p, db.p, n, nullptr);
    SD_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<double> copied = da.get();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += copied[i] == b[i] ? 0 : 1;
    EXPECT_EQ(wrong, 0u) << "copy of " << n;
    kernels::launch_triad(da.p, db.p, dc.p, 3.0, n, nullptr);
    SD_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<double> triad = da.get();
    wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += triad[i] == b[i] + 3.0 * c[i] ? 0 : 1;
    EXPECT_EQ(wrong, 0u) << "triad of " << n;
  }
}

TEST_F(GpuDevices, EveryTestTimesATrialAndTheMemoryAndLinkAreRead) {
  int device = 0;
  SD_CUDA_CHECK(cudaGetDevice(&device));
  // 256 MiB arrays: beyond the 50-60 MB L2 of an H100/H200, so HBM is what is timed.
  const std::unique_ptr<devices::Device> d =
      devices::make_cuda_device(device, 256ull << 20, 64ull << 20);
  std::printf("%s\n", d->describe().c_str());
  EXPECT_EQ(d->kind(), "cuda");
  const double free = d->free_bytes(), total = d->total_bytes();
  EXPECT_GT(free, 0);
  EXPECT_LE(free, total);
  std::printf("free after the runtime started: %.1f of %.1f GiB\n", free / (1 << 30),
              total / (1 << 30));
  std::vector<double> gbps;
  for (std::size_t t = 0; t < d->tests().size(); ++t) {
    const devices::MemoryTest& test = d->tests()[t];
    double best = 0;
    for (int trial = 0; trial < 3; ++trial) {
      const double seconds = d->run(t);  // throws when the spin kernel timed out
      ASSERT_TRUE(std::isfinite(seconds) && seconds > 0) << test.name << ": " << seconds;
      best = std::max(best, test.bytes / seconds / 1e9);
    }
    gbps.push_back(best);
    std::printf("devices %-10s %8.1f GB/s (best of 3; %s)\n", test.name.c_str(), best,
                test.counted.c_str());
  }
  ASSERT_GE(gbps.size(), 3u);
  ASSERT_EQ(d->tests()[0].name, "copy");
  ASSERT_EQ(d->tests()[2].name, "ce_copy");
  std::printf("copy kernel / cudaMemcpyAsync D2D: %.2f (bench target >= 0.9)\n", gbps[0] / gbps[2]);
  const std::vector<devices::LinkState> links = d->links_under_load();
  ASSERT_EQ(links.size(), 1u);
  const devices::LinkState& l = links.front();
  std::printf("PCIe %s under load: %g GT/s x%g of %g GT/s x%g\n", l.device.c_str(), l.current_gts,
              l.current_width, l.max_gts, l.max_width);
}

#endif  // SHAKEDOWN_HAVE_CUDA

}  // namespace
}  // namespace shakedown
