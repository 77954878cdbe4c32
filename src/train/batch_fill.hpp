#pragma once
// The synthetic step's deterministic numbers (weights, the batch, the output gradient): element i
// of a tensor keyed `key` is uniform in [-a, a] and a function of (key, i) only, so every rank
// that asks gets the same values and the host and device fills (train/step.cpp,
// kernels/train_kernels.cu) agree bit for bit. Compiled by nvcc too (C++17).
#include <cstdint>

#include "core/host_device.hpp"

namespace shakedown::train {

// SplitMix64's finaliser.
SD_HOST_DEVICE inline std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Element i of the tensor whose mixed key is mix(key).
SD_HOST_DEVICE inline float uniform_at(std::uint64_t mixed_key, std::uint64_t i, float a) {
  const double u = static_cast<double>(mix(mixed_key + i * 0x9e3779b97f4a7c15ull) >> 11) * 0x1p-53;
  return static_cast<float>((2 * u - 1) * static_cast<double>(a));
}

// The keys of the step's tensors. Weights depend on (seed, layer, Linear, TP rank) only, so every
// replica starts identical; the batch and the output gradient on the replica (dp rank) and the
// step, and are the same on the ranks of one TP group.
inline std::uint64_t weight_key(std::uint64_t seed, int tensor, int tp_rank) {
  return seed ^ (static_cast<std::uint64_t>(tensor) << 32) ^
         (static_cast<std::uint64_t>(tp_rank) << 48);
}
inline std::uint64_t batch_key(std::uint64_t seed, int dp_rank, int step) {
  return seed ^ 0xda7aull ^ (static_cast<std::uint64_t>(dp_rank) << 40) ^
         static_cast<std::uint64_t>(step);
}
inline std::uint64_t output_grad_key(std::uint64_t seed, int dp_rank, int step) {
  return seed ^ 0x9ad1ull ^ (static_cast<std::uint64_t>(dp_rank) << 40) ^
         static_cast<std::uint64_t>(step);
}

}  // namespace shakedown::train
