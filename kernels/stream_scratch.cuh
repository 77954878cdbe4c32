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

// One 64-bit counter (a sum, a count, a key) in stream-ordered scratch, zeroed on the stream.
class DeviceCounter {
 public:
  explicit DeviceCounter(cudaStream_t stream)
      : scratch_(sizeof(unsigned long long), stream), stream_(stream) {
    SD_CUDA_CHECK(cudaMemsetAsync(get(), 0, sizeof(unsigned long long), stream_));
  }
  unsigned long long* get() const { return static_cast<unsigned long long*>(scratch_.get()); }
  // Waits for the stream (so for the kernels enqueued before) and returns the counter.
  unsigned long long read() const {
    unsigned long long host = 0;
    SD_CUDA_CHECK(cudaMemcpyAsync(&host, get(), sizeof host, cudaMemcpyDeviceToHost, stream_));
    SD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return host;
  }

 private:
  StreamScratch scratch_;
  cudaStream_t stream_;
};

}  // namespace shakedown::kernels
