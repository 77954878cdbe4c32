#pragma once
// The devices phase's kernels (src/devices/cuda_device.cpp), callable from plain C++: a
// cudaStream_t travels as void*. Only built with CUDA (SHAKEDOWN_HAVE_CUDA).
#if SHAKEDOWN_HAVE_CUDA

#include <cstdint>

namespace shakedown::kernels {

// dst[i] = src[i] for n doubles (STREAM copy), on every SM, asynchronous on `stream`; the
// arrays 16-byte aligned (as from cudaMalloc).
void launch_copy(double* dst, const double* src, std::uint64_t n, void* stream);
// a[i] = b[i] + s * c[i] for n doubles (STREAM triad), asynchronous.
void launch_triad(double* a, const double* b, const double* c, double s, std::uint64_t n,
                  void* stream);
// p[i] = value for n doubles, asynchronous.
void launch_fill(double* p, double value, std::uint64_t n, void* stream);
// One thread that waits until flag[0] (host memory mapped into the device) is non-zero, or about
// `timeout_ms` of GPU clock has passed (then it sets flag[1] to 1), so that the work queued behind
// it on `stream` starts at once when the host releases it (nvbandwidth's way of keeping the enqueue
// cost out of the timed region). Asynchronous.
void launch_spin(volatile int* flag, std::uint32_t timeout_ms, void* stream);

}  // namespace shakedown::kernels

#endif  // SHAKEDOWN_HAVE_CUDA
