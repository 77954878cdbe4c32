#pragma once
// A CUDA event for timing work on a stream (RAII), shared by everything that times the GPU
// (the devices phase, the device training step, the GPU GEMM benchmark). Header-only, as
// core/cuda_check.hpp: core/ itself does not link CUDA. Only with CUDA (SHAKEDOWN_HAVE_CUDA).
#if SHAKEDOWN_HAVE_CUDA

#include <cuda_runtime_api.h>

#include "core/cuda_check.hpp"

namespace shakedown {

class CudaEvent {
 public:
  CudaEvent() { SD_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~CudaEvent() {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) { SD_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  // Seconds from `from` to `to`, both recorded and complete.
  static double seconds(const CudaEvent& from, const CudaEvent& to) {
    float ms = 0;
    SD_CUDA_CHECK(cudaEventElapsedTime(&ms, from.get(), to.get()));
    return static_cast<double>(ms) * 1e-3;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace shakedown

#endif  // SHAKEDOWN_HAVE_CUDA
