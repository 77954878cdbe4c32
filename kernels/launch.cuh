#pragma once
// Launch shapes and thread indexing shared by the kernels of this folder (internal to kernels/).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace shakedown::kernels {

inline constexpr unsigned kBlock = 256;
inline constexpr unsigned kWarps = kBlock / 32;

// Blocks for a grid-stride loop over `work_items`: at least 1, at most `max_blocks` (enough to
// fill any current GPU, 132 SMs x 8 resident blocks of 256 threads on H100/H200, while keeping
// per-block atomics few).
inline unsigned grid_for(std::uint64_t work_items, std::uint64_t max_blocks = 2048) {
  const std::uint64_t blocks = (work_items + kBlock - 1) / kBlock;
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(blocks, max_blocks)));
}

inline cudaStream_t as_stream(void* stream) {
  return static_cast<cudaStream_t>(stream);
}

__device__ inline std::uint64_t thread_index() {
  return static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ inline std::uint64_t thread_stride() {
  return static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
}

}  // namespace shakedown::kernels
