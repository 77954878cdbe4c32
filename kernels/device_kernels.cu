#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "kernels/device_kernels.hpp"

namespace shakedown::kernels {

namespace {

constexpr int kThreads = 512;

// Enough blocks to fill every SM several times; a grid-stride loop covers the rest.
unsigned grid_for(std::uint64_t n) {
  int device = 0, sms = 0;
  SD_CUDA_CHECK(cudaGetDevice(&device));
  SD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::uint64_t needed = (n + kThreads - 1) / kThreads;
  const std::uint64_t most = static_cast<std::uint64_t>(sms) * 8;
  return static_cast<unsigned>(needed < most ? (needed > 0 ? needed : 1) : most);
}

__global__ void copy_kernel(double* __restrict__ dst, const double* __restrict__ src,
                            std::uint64_t n) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    dst[i] = src[i];
  }
}

__global__ void triad_kernel(double* __restrict__ a, const double* __restrict__ b,
                             const double* __restrict__ c, double s, std::uint64_t n) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    a[i] = b[i] + s * c[i];
  }
}

__global__ void fill_kernel(double* p, double value, std::uint64_t n) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    p[i] = value;
  }
}

__global__ void spin_kernel(volatile int* flag, long long timeout_cycles) {
  const long long start = clock64();
  while (flag[0] == 0) {
    if (clock64() - start > timeout_cycles) {
      flag[1] = 1;
      break;
    }
  }
}

void check_launch() {
  SD_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_copy(double* dst, const double* src, std::uint64_t n, void* stream) {
  copy_kernel<<<grid_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(dst, src, n);
  check_launch();
}

void launch_triad(double* a, const double* b, const double* c, double s, std::uint64_t n,
                  void* stream) {
  triad_kernel<<<grid_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(a, b, c, s, n);
  check_launch();
}

void launch_fill(double* p, double value, std::uint64_t n, void* stream) {
  fill_kernel<<<grid_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, value, n);
  check_launch();
}

void launch_spin(volatile int* flag, std::uint32_t timeout_ms, void* stream) {
  int device = 0, khz = 0;
  SD_CUDA_CHECK(cudaGetDevice(&device));
  SD_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  const long long cycles = static_cast<long long>(khz > 0 ? khz : 2000000) * timeout_ms;
  spin_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(flag, cycles);
  check_launch();
}

}  // namespace shakedown::kernels
