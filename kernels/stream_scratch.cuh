#pragma once
// Device scratch for the kernels' results (counts, sums), internal to kernels/.
#include <cuda_runtime.h>

#include <cstddef>

#include "core/cuda_check.hpp"

namespace shakedown::kernels {

// Stream-ordered scratch, freed on the same stream even when a check throws. Falls back to plain
// cudaMalloc where the driver has no memory pools (some virtualised GPUs).
class StreamScratch {
 public:
  StreamScratch(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    const cudaError_t rc = cudaMallocAsync(&ptr_, bytes, stream_);
    if (rc == cudaErrorNotSupported) {
      (void)cudaGetLastError();
      pooled_ = false;
      SD_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
      return;
    }
    detail::cuda_check(rc, "cudaMallocAsync", __FILE__, __LINE__);
  }
  ~StreamScratch() {
    if (ptr_ == nullptr) return;
    if (pooled_) {
      (void)cudaFreeAsync(ptr_, stream_);
    } else {
      (void)cudaFree(ptr_);
    }
  }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_;
  bool pooled_ = true;
};

}  // namespace shakedown::kernels
