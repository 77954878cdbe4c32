#pragma once
// The pattern formulas behind pattern.hpp: header-only, SD_HOST_DEVICE, integer arithmetic only,
// so the CUDA fill/verify kernels and the host reference compute the same numbers.
//
// L(dtype) bounds the integers a dtype holds exactly: every integer in [-L, L] is representable
// (significand bits + 1 bits; below the largest finite value): float32 2^24, bfloat16 256,
// float16 2048, fp8 E4M3 16, fp8 E5M2 8, int32 2^31 - 1.
//
// Reducing collectives (all_reduce, reduce_scatter; spec.reduces). Per index i, a hash of
// (seed, i) draws h in [0, m), off in [0, m) and a rotation s in [0, n); rank r is j = (r - s) mod
// n places into the rotation and holds
//     v(r, i) = ((h + j) mod m) - off   for j < nc,   0 for j >= nc,        m = a + 1,
// so |v| <= a. Sum: a = floor(L / n) and nc = n when n <= L, else a = 1 and nc = L (only L ranks,
// a window that rotates with i, hold nonzero values): any partial sum, in any order, of at most nc
// values of magnitude <= a stays within [-L, L], so every reduction order is exact. Max: a = L,
// nc = n. The sum over ranks is a sum of consecutive residues and the max is the largest residue
// reached: both closed forms, O(1) per element at any rank count. Within an index the ranks hold
// distinct values while n < m; `off` makes the reduced value vary with i even when n is a multiple
// of m; the rotation makes every rank the maximum (and, when n > L, a contributor) for some i.
//
// Non-reducing collectives (all_gather, broadcast, all_to_all, send_recv): a hash of
// (seed, rank, i) mapped onto every integer in [-L, L], so a chunk from the wrong rank or the wrong
// offset differs almost everywhere.
#include <cstdint>

#include "comm/half.hpp"
#include "comm/pattern.hpp"

namespace shakedown {

SD_INLINE SD_HOST_DEVICE constexpr std::uint64_t pattern_limit(DType t) {
  switch (t) {
    case DType::kFloat32:
      return std::uint64_t{1} << 24;
    case DType::kBFloat16:
      return 256;
    case DType::kFloat16:
      return 2048;
    case DType::kInt32:
      return 0x7fffffff;
    case DType::kFp8E4M3:
      return 16;
    case DType::kFp8E5M2:
      return 8;
  }
  return 0;
}

// The one place the pattern depends on the collective: whether its output is a reduction.
SD_INLINE SD_HOST_DEVICE constexpr bool pattern_reduces(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter;
}

// `s` with `reduces` set for `kind`. Everything that knows the collective goes through this.
SD_INLINE SD_HOST_DEVICE constexpr PatternSpec pattern_spec_for(CollectiveKind kind, PatternSpec s) {
  s.reduces = pattern_reduces(kind);
  return s;
}

namespace pattern_detail {

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;
constexpr std::uint64_t kRankStep = 0xd1b54a32d192ed03ull;
constexpr std::uint64_t kSalt = 0x94d049bb133111ebull;

// splitmix64's finaliser: every input bit reaches every output bit.
SD_INLINE SD_HOST_DEVICE constexpr std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// 32 random bits onto [0, range), range < 2^32: a multiply instead of a division.
SD_INLINE SD_HOST_DEVICE constexpr std::uint64_t below(std::uint64_t bits32, std::uint64_t range) {
  return (bits32 * range) >> 32;
}

SD_INLINE SD_HOST_DEVICE constexpr double to_double(std::uint64_t plus, std::uint64_t minus) {
  return static_cast<double>(static_cast<std::int64_t>(plus) - static_cast<std::int64_t>(minus));
}

}  // namespace pattern_detail

// Everything about a spec that does not depend on the element: computed once per buffer.
// Every quantity is below 2^32 (n < 2^31, m <= 2^31, 2L + 1 < 2^32), so products stay in 64 bits.
struct PatternParams {
  std::uint64_t key = 0;    // mixed seed
  std::uint64_t n = 1;      // ranks
  std::uint64_t limit = 0;  // L(dtype)
  int root = 0;
  bool reduces = true;
  bool max = false;
  // Reducing pattern.
  std::uint64_t nc = 1;        // ranks holding nonzero values (a window rotating with the index)
  std::uint64_t m = 1;         // residue modulus a + 1; values in [-a, a]
  std::uint64_t periods = 0;   // nc / m
  std::uint64_t rem = 1;       // nc % m
  std::uint64_t full_sum = 0;  // periods * (0 + 1 + ... + m - 1)
  std::uint64_t rem_tri = 0;   // 0 + 1 + ... + rem - 1
};

SD_INLINE SD_HOST_DEVICE constexpr PatternParams pattern_params(const PatternSpec& s) {
  PatternParams p;
  p.key = pattern_detail::mix64(s.seed ^ pattern_detail::kSalt);
  p.n = s.nranks < 1 ? 1 : static_cast<std::uint64_t>(s.nranks);
  p.limit = pattern_limit(s.dtype);
  p.root = s.root;
  p.reduces = s.reduces;
  p.max = s.op == ReduceOp::kMax;
  std::uint64_t a = p.limit;
  p.nc = p.n;
  if (!p.max) {
    if (p.n <= p.limit) {
      a = p.limit / p.n;
    } else {
      a = 1;
      p.nc = p.limit;
    }
  }
  p.m = a + 1;
  p.periods = p.nc / p.m;
  p.rem = p.nc % p.m;
  p.full_sum = p.periods * (p.m * (p.m - 1) / 2);
  p.rem_tri = p.rem * (p.rem - 1) / 2;  // 0 when rem == 0 (0 times anything)
  return p;
}

SD_INLINE SD_HOST_DEVICE constexpr PatternParams pattern_params(CollectiveKind kind, const PatternSpec& s) {
  return pattern_params(pattern_spec_for(kind, s));
}

namespace pattern_detail {

// Per index of the reducing pattern: first residue h and offset off, both in [0, m).
struct IndexDraw {
  std::uint64_t x;  // the index's hash (the rotation is drawn from it when needed)
  std::uint64_t h;
  std::uint64_t off;
};

SD_INLINE SD_HOST_DEVICE constexpr IndexDraw draw(const PatternParams& p, std::uint64_t index) {
  const std::uint64_t x = mix64(p.key + index * kGolden);
  return {x, below(x >> 32, p.m), below(x & 0xffffffffull, p.m)};
}

}  // namespace pattern_detail

// Integer value of rank `rank`'s input element `index` (rank in [0, nranks)).
SD_INLINE SD_HOST_DEVICE constexpr double pattern_input(const PatternParams& p, int rank,
                                              std::uint64_t index) {
  const std::uint64_t r = static_cast<std::uint64_t>(rank) % p.n;
  if (!p.reduces) {
    const std::uint64_t rank_key =
        pattern_detail::mix64(p.key + (r + 1) * pattern_detail::kRankStep);
    const std::uint64_t x = pattern_detail::mix64(rank_key + index * pattern_detail::kGolden);
    return pattern_detail::to_double(pattern_detail::below(x >> 32, 2 * p.limit + 1), p.limit);
  }
  const pattern_detail::IndexDraw d = pattern_detail::draw(p, index);
  const std::uint64_t shift =
      pattern_detail::below(pattern_detail::mix64(d.x ^ pattern_detail::kSalt) >> 32, p.n);
  const std::uint64_t j = r >= shift ? r - shift : r + p.n - shift;
  if (j >= p.nc) return 0.0;
  // (h + j) mod m; both below 2^31, so 32-bit arithmetic (cheap on a GPU).
  // Mostly one subtraction (j < m whenever nc <= m): a division only past two periods.
  std::uint32_t residue = static_cast<std::uint32_t>(d.h + j);
  const auto m = static_cast<std::uint32_t>(p.m);
  if (residue >= m) {
    residue -= m;
    if (residue >= m) residue %= m;
  }
  return pattern_detail::to_double(residue, d.off);
}

SD_INLINE SD_HOST_DEVICE constexpr double pattern_input(const PatternSpec& s, int rank, std::uint64_t index) {
  return pattern_input(pattern_params(s), rank, index);
}

// The reduction (spec.op) of pattern_input over all ranks, in closed form. Meaningful for the
// reducing pattern (spec.reduces).
SD_INLINE SD_HOST_DEVICE constexpr double pattern_reduced(const PatternParams& p, std::uint64_t index) {
  const pattern_detail::IndexDraw d = pattern_detail::draw(p, index);
  if (p.max) {
    // Residues h, h+1, ... (mod m) over nc ranks reach m - 1 when they wrap or cover a period.
    // (For max every rank takes part: nc == n, no zeros from outside the window.)
    const std::uint64_t last = d.h + p.nc - 1;
    const std::uint64_t top = (p.nc >= p.m || last >= p.m) ? p.m - 1 : last;
    return pattern_detail::to_double(top, d.off);
  }
  // Sum of (h + j) mod m for j < nc: full periods, then rem terms from h that wrap at m.
  std::uint64_t sum = p.full_sum + p.rem * d.h + p.rem_tri;
  if (d.h + p.rem > p.m) sum -= p.m * (d.h + p.rem - p.m);
  return pattern_detail::to_double(sum, p.nc * d.off);
}

SD_INLINE SD_HOST_DEVICE constexpr double pattern_reduced(const PatternSpec& s, std::uint64_t index) {
  return pattern_reduced(pattern_params(s), index);
}

// What rank `rank`'s input element `index` holds for collective `kind`: what a fill writes (a
// fill must come through here, or pattern_params(kind, spec): the pattern depends on the kind).
SD_INLINE SD_HOST_DEVICE constexpr double input_value(CollectiveKind kind, const PatternSpec& s, int rank,
                                            std::uint64_t index) {
  return pattern_input(pattern_params(kind, s), rank, index);
}

// expected_output for out_index = chunk * c.unit + k where all_gather and all_to_all have one
// chunk per sending rank (chunk < n, k < unit) and the others one chunk (chunk 0, k = out_index):
// lets a loop walk the output chunk by chunk without a division per element.
SD_INLINE SD_HOST_DEVICE constexpr double expected_in_chunk(CollectiveKind kind, const PatternParams& p,
                                                  const CollectiveCounts& c, int rank,
                                                  std::uint64_t chunk, std::uint64_t k) {
  const std::uint64_t r = static_cast<std::uint64_t>(rank);
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return pattern_reduced(p, k);
    case CollectiveKind::kReduceScatter:
      return pattern_reduced(p, r * c.unit + k);
    case CollectiveKind::kBroadcast:
      return pattern_input(p, p.root, k);
    case CollectiveKind::kSendRecv:
      return pattern_input(p, static_cast<int>((r + p.n - 1) % p.n), k);
    case CollectiveKind::kAllGather:
      return pattern_input(p, static_cast<int>(chunk), k);
    case CollectiveKind::kAllToAll:
      return pattern_input(p, static_cast<int>(chunk), r * c.unit + k);
  }
  return 0.0;
}

// Whether expected_in_chunk splits the output into per-rank chunks of c.unit elements.
SD_INLINE SD_HOST_DEVICE constexpr bool output_in_chunks(CollectiveKind kind) {
  return kind == CollectiveKind::kAllGather || kind == CollectiveKind::kAllToAll;
}

// What element `i` of rank `rank`'s output must hold after collective `kind`.
// `p` from pattern_params(kind, spec).
SD_INLINE SD_HOST_DEVICE constexpr double expected_output(CollectiveKind kind, const PatternParams& p,
                                                const CollectiveCounts& c, int rank,
                                                std::uint64_t i) {
  if (!output_in_chunks(kind)) return expected_in_chunk(kind, p, c, rank, 0, i);
  if (c.unit == 0) return 0.0;
  return expected_in_chunk(kind, p, c, rank, i / c.unit, i % c.unit);
}

SD_INLINE SD_HOST_DEVICE constexpr double expected_output(CollectiveKind kind, const PatternSpec& s,
                                                const CollectiveCounts& c, int rank,
                                                std::uint64_t out_index) {
  return expected_output(kind, pattern_params(kind, s), c, rank, out_index);
}

// Bit-exact comparison of a loaded element with its expected value: NaN never matches, and -0
// does not match +0 (a flipped sign bit on a zero is corruption too).
SD_INLINE SD_HOST_DEVICE constexpr bool matches(double got, double want) {
  if (!(got == want)) return false;
  if (got != 0) return true;
  return (1.0 / got > 0) == (1.0 / want > 0);
}

// A value to put in place of `v` that differs from it and is exact in `t`, for fault injection
// (adding one is not enough: bfloat16 rounds 257 back to 256).
SD_INLINE SD_HOST_DEVICE constexpr double corrupted_value(DType t, double v) {
  const double limit = static_cast<double>(pattern_limit(t));
  if (!(v >= -limit && v <= limit)) return 0.0;  // NaN, infinities, out-of-pattern values
  return v >= 1.0 ? v - 1.0 : v + 1.0;
}

// Element `i` of a buffer of dtype `t`. Exact for every integer in [-L, L]; other values round to
// nearest even (int32: truncate, saturate).
SD_INLINE SD_HOST_DEVICE inline void store_element(void* buf, DType t, std::uint64_t i, double v) {
  switch (t) {
    case DType::kFloat32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      return;
    case DType::kBFloat16:
      static_cast<std::uint16_t*>(buf)[i] = small_float::bf16_from_double(v);
      return;
    case DType::kFloat16:
      static_cast<std::uint16_t*>(buf)[i] = small_float::fp16_from_double(v);
      return;
    case DType::kInt32: {
      std::int32_t x = 0;
      if (v >= 2147483647.0) {
        x = 2147483647;
      } else if (v <= -2147483648.0) {
        x = -2147483647 - 1;
      } else if (v == v) {
        x = static_cast<std::int32_t>(v);
      }
      static_cast<std::int32_t*>(buf)[i] = x;
      return;
    }
    case DType::kFp8E4M3:
      static_cast<std::uint8_t*>(buf)[i] = small_float::e4m3_from_double(v);
      return;
    case DType::kFp8E5M2:
      static_cast<std::uint8_t*>(buf)[i] = small_float::e5m2_from_double(v);
      return;
  }
}

SD_INLINE SD_HOST_DEVICE inline double load_element(const void* buf, DType t, std::uint64_t i) {
  switch (t) {
    case DType::kFloat32:
      return static_cast<double>(static_cast<const float*>(buf)[i]);
    case DType::kBFloat16:
      return small_float::bf16_to_double(static_cast<const std::uint16_t*>(buf)[i]);
    case DType::kFloat16:
      return small_float::fp16_to_double(static_cast<const std::uint16_t*>(buf)[i]);
    case DType::kInt32:
      return static_cast<double>(static_cast<const std::int32_t*>(buf)[i]);
    case DType::kFp8E4M3:
      return small_float::e4m3_to_double(static_cast<const std::uint8_t*>(buf)[i]);
    case DType::kFp8E5M2:
      return small_float::e5m2_to_double(static_cast<const std::uint8_t*>(buf)[i]);
  }
  return 0.0;
}

}  // namespace shakedown
