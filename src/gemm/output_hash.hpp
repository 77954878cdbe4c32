#pragma once
// The GEMM output hash, shared by the host (CPU engine, tests) and the device (kernels/): the sum,
// modulo 2^64, of splitmix64(index * kGolden ^ bits) over every element's stored bits. A sum of
// per-element terms needs no ordering, so a GPU reduces it in any order and gets the same value;
// for a fixed index the term is a bijection of the bits, so flipping any bit of any one element
// always changes the hash (the --inject sdc self-test relies on that).
#include <cstdint>

#include "core/host_device.hpp"

namespace shakedown::gemm_hash {

inline constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ull;

SD_HOST_DEVICE constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += kGolden;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// One element's term: `bits` are the stored bf16 (16 bits) or fp32 (32 bits) value.
SD_HOST_DEVICE constexpr std::uint64_t element_term(std::uint64_t index, std::uint32_t bits) {
  return splitmix64((index * kGolden) ^ bits);
}

}  // namespace shakedown::gemm_hash
