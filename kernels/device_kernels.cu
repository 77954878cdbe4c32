#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "kernels/device_kernels.hpp"
#include "kernels/launch.cuh"

namespace shakedown::kernels {

namespace {

// HBM reaches its bandwidth only with many bytes in flight per SM (Little's law: ~15 KB per SM
// on an H100 at one 8-byte load per resident thread, too few): the STREAM kernels load 16 bytes
// (a double2) per access and issue kUnroll of them before storing any. Buffers from cudaMalloc
// are 256-byte aligned; an odd last element is done on its own.
constexpr int kUnroll = 4;

// f(i) over the double2 indices [0, pairs), kUnroll per thread per round.
template <class F>
__device__ void for_pairs(std::uint64_t pairs, F f) {
  const std::uint64_t threads = thread_stride();
  std::uint64_t i = thread_index();
  for (; i + (kUnroll - 1) * threads < pairs; i += kUnroll * threads)
    f.template run<kUnroll>(i, threads);
  for (; i < pairs; i += threads) f.template run<1>(i, threads);
}

struct CopyRound {
  double2* __restrict__ dst;
  const double2* __restrict__ src;
  template <int N>
  __device__ void run(std::uint64_t i, std::uint64_t threads) const {
    double2 v[N];
#pragma unroll
    for (int u = 0; u < N; ++u) v[u] = src[i + u * threads];
#pragma unroll
    for (int u = 0; u < N; ++u) dst[i + u * threads] = v[u];
  }
};

struct TriadRound {
  double2* __restrict__ a;
  const double2* __restrict__ b;
  const double2* __restrict__ c;
  double s;
  template <int N>
  __device__ void run(std::uint64_t i, std::uint64_t threads) const {
    double2 x[N], y[N];
#pragma unroll
    for (int u = 0; u < N; ++u) {
      x[u] = b[i + u * threads];
      y[u] = c[i + u * threads];
    }
#pragma unroll
    for (int u = 0; u < N; ++u)
      a[i + u * threads] = make_double2(x[u].x + s * y[u].x, x[u].y + s * y[u].y);
  }
};

__global__ void copy_kernel(double* __restrict__ dst, const double* __restrict__ src,
                            std::uint64_t n) {
  for_pairs(n / 2,
            CopyRound{reinterpret_cast<double2*>(dst), reinterpret_cast<const double2*>(src)});
  if ((n & 1) != 0 && blockIdx.x == 0 && threadIdx.x == 0) dst[n - 1] = src[n - 1];
}

__global__ void triad_kernel(double* __restrict__ a, const double* __restrict__ b,
                             const double* __restrict__ c, double s, std::uint64_t n) {
  for_pairs(n / 2, TriadRound{reinterpret_cast<double2*>(a), reinterpret_cast<const double2*>(b),
                              reinterpret_cast<const double2*>(c), s});
  if ((n & 1) != 0 && blockIdx.x == 0 && threadIdx.x == 0) a[n - 1] = b[n - 1] + s * c[n - 1];
}

__global__ void fill_kernel(double* p, double value, std::uint64_t n) {
  for (std::uint64_t i = thread_index(); i < n; i += thread_stride()) p[i] = value;
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
  copy_kernel<<<grid_for(n / 2), kBlock, 0, as_stream(stream)>>>(dst, src, n);
  check_launch();
}

void launch_triad(double* a, const double* b, const double* c, double s, std::uint64_t n,
                  void* stream) {
  triad_kernel<<<grid_for(n / 2), kBlock, 0, as_stream(stream)>>>(a, b, c, s, n);
  check_launch();
}

void launch_fill(double* p, double value, std::uint64_t n, void* stream) {
  fill_kernel<<<grid_for(n), kBlock, 0, as_stream(stream)>>>(p, value, n);
  check_launch();
}

void launch_spin(volatile int* flag, std::uint32_t timeout_ms, void* stream) {
  int device = 0, khz = 0;
  SD_CUDA_CHECK(cudaGetDevice(&device));
  SD_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  const long long cycles = static_cast<long long>(khz > 0 ? khz : 2000000) * timeout_ms;
  spin_kernel<<<1, 1, 0, as_stream(stream)>>>(flag, cycles);
  check_launch();
}

}  // namespace shakedown::kernels
