#include "comm/pattern.hpp"

#include <algorithm>
#include <bit>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "comm/pattern_math.hpp"
#include "core/error.hpp"

namespace shakedown {
namespace {

void check_args(const void* buffer, std::uint64_t count, CollectiveKind kind,
                const PatternSpec& spec, int rank, const char* what) {
  const std::string where = std::string(what) + "(" + std::string(collective(kind).name) + ")";
  if (spec.nranks < 1) {
    throw InternalError(where + ": nranks " + std::to_string(spec.nranks) + " < 1");
  }
  if (rank < 0 || rank >= spec.nranks) {
    throw InternalError(where + ": rank " + std::to_string(rank) + " outside [0, " +
                        std::to_string(spec.nranks) + ")");
  }
  if (kind == CollectiveKind::kBroadcast && (spec.root < 0 || spec.root >= spec.nranks)) {
    throw InternalError(where + ": root " + std::to_string(spec.root) + " outside [0, " +
                        std::to_string(spec.nranks) + ")");
  }
  if (buffer == nullptr && count != 0) {
    throw InternalError(where + ": null buffer for " + std::to_string(count) + " elements");
  }
}

// The dtype is a template argument so the per-element switch in store/load_element folds away.
// Runs work(begin, end, range) over [0, count) in `threads` contiguous ranges, one std::thread each
// beyond the calling thread's own; a range's exception is rethrown here after all have joined.
// Below kMinPerThread elements per range the call stays on this thread (spawning costs ~20 us).
template <typename Work>
void split_range(std::uint64_t count, int threads, Work work) {
  constexpr std::uint64_t kMinPerThread = std::uint64_t{1} << 18;
  const std::uint64_t n = std::clamp<std::uint64_t>(
      count / kMinPerThread, 1, static_cast<std::uint64_t>(std::max(1, threads)));
  if (n == 1) return work(0, count, 0);
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(n);
  const auto run = [&](std::uint64_t t) {
    try {
      work(count * t / n, count * (t + 1) / n, t);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  pool.reserve(n - 1);
  for (std::uint64_t t = 1; t < n; ++t) pool.emplace_back(run, t);
  run(0);
  for (auto& th : pool) th.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

template <DType T>
void fill_loop(void* buffer, std::uint64_t begin, std::uint64_t end, const PatternParams& params,
               int rank) {
  // A local copy: byte stores (fp8) may alias anything reachable, a local they cannot, so the
  // per-spec values stay in registers.
  const PatternParams p = params;
  for (std::uint64_t i = begin; i < end; ++i)
    store_element(buffer, T, i, pattern_input(p, rank, i));
}

template <DType T>
void fill_plain(void* buffer, std::uint64_t count, const PatternParams& params, int rank,
                int threads) {
  split_range(count, threads, [&](std::uint64_t b, std::uint64_t e, std::uint64_t) {
    fill_loop<T>(buffer, b, e, params, rank);
  });
}

// Large fills of the small float formats: the pattern integers [-L, L] encoded once into a table
// by the same encoder (store_element), then looked up, several times faster than encoding each.
template <DType T, typename Code>
void fill_small_float(void* buffer, std::uint64_t count, const PatternParams& params, int rank,
                      int threads) {
  const std::int64_t limit = static_cast<std::int64_t>(params.limit);
  const std::uint64_t entries = 2 * params.limit + 1;
  if (count < 4 * entries) return fill_loop<T>(buffer, 0, count, params, rank);
  std::vector<Code> table(entries);
  for (std::int64_t v = -limit; v <= limit; ++v) {
    store_element(table.data(), T, static_cast<std::uint64_t>(v + limit), static_cast<double>(v));
  }
  const Code* codes = table.data();
  split_range(count, threads, [&](std::uint64_t b, std::uint64_t e, std::uint64_t) {
    const PatternParams p = params;  // see fill_loop
    Code* out = static_cast<Code*>(buffer);
    for (std::uint64_t i = b; i < e; ++i) {
      out[i] = codes[static_cast<std::size_t>(static_cast<std::int64_t>(pattern_input(p, rank, i)) +
                                              limit)];
    }
  });
}

// Elements [begin, begin + count) of the output against expected_in_chunk(K, ..., chunk, k0 + k).
// A block whose every element has its expected bits (the pattern's values are finite integers, so
// equal bits is matches()) costs no branch per element; only a block with a difference is walked
// element by element, with matches() deciding (a -0 for +0, a NaN) and the first wrong one kept.
template <CollectiveKind K, typename Load>
void verify_range(Load load, const CollectiveCounts& counts, const PatternParams& p, int rank,
                  std::uint64_t chunk, std::uint64_t k0, std::uint64_t begin, std::uint64_t count,
                  VerifyResult& r) {
  constexpr std::uint64_t kBlock = 512;
  for (std::uint64_t b = 0; b < count; b += kBlock) {
    const std::uint64_t e = std::min(count, b + kBlock);
    std::uint64_t diff = 0;
    for (std::uint64_t k = b; k < e; ++k) {
      diff |= std::bit_cast<std::uint64_t>(load(begin + k)) ^
              std::bit_cast<std::uint64_t>(expected_in_chunk(K, p, counts, rank, chunk, k0 + k));
    }
    if (diff == 0) continue;
    for (std::uint64_t k = b; k < e; ++k) {
      const std::uint64_t i = begin + k;
      const double got = load(i);
      const double want = expected_in_chunk(K, p, counts, rank, chunk, k0 + k);
      if (!matches(got, want)) {
        if (r.wrong == 0) {
          r.first_wrong = static_cast<std::int64_t>(i);
          r.expected = want;
          r.got = got;
        }
        ++r.wrong;
      }
    }
  }
}

template <CollectiveKind K, typename Load>
void verify_span_k(Load load, const CollectiveCounts& counts, const PatternParams& p, int rank,
                   std::uint64_t begin, std::uint64_t end, VerifyResult& r) {
  if constexpr (!output_in_chunks(K)) {
    return verify_range<K>(load, counts, p, rank, 0, begin, begin, end - begin, r);
  } else {
    if (counts.unit == 0) return;
    for (std::uint64_t i = begin; i < end;) {
      const std::uint64_t c = i / counts.unit;
      const std::uint64_t k0 = i % counts.unit;
      const std::uint64_t len = std::min(end - i, counts.unit - k0);
      verify_range<K>(load, counts, p, rank, c, k0, i, len, r);
      i += len;
    }
  }
}

// Elements [begin, end) of the output, cut at chunk boundaries (a chunk is counts.unit elements
// from one source rank; a recv that is not a whole number of chunks, not from the table, is
// checked to its end the same way). The collective is a template argument from here on, so the
// per-element switch in expected_in_chunk folds away.
template <typename Load>
void verify_span(Load load, CollectiveKind kind, const CollectiveCounts& counts,
                 const PatternParams& params, int rank, std::uint64_t begin, std::uint64_t end,
                 VerifyResult& r) {
  const PatternParams p = params;  // see fill_loop
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return verify_span_k<CollectiveKind::kAllReduce>(load, counts, p, rank, begin, end, r);
    case CollectiveKind::kAllGather:
      return verify_span_k<CollectiveKind::kAllGather>(load, counts, p, rank, begin, end, r);
    case CollectiveKind::kReduceScatter:
      return verify_span_k<CollectiveKind::kReduceScatter>(load, counts, p, rank, begin, end, r);
    case CollectiveKind::kBroadcast:
      return verify_span_k<CollectiveKind::kBroadcast>(load, counts, p, rank, begin, end, r);
    case CollectiveKind::kAllToAll:
      return verify_span_k<CollectiveKind::kAllToAll>(load, counts, p, rank, begin, end, r);
    case CollectiveKind::kSendRecv:
      return verify_span_k<CollectiveKind::kSendRecv>(load, counts, p, rank, begin, end, r);
  }
}

// The output checked in `threads` ranges; the first wrong element is the first range's that has
// one, so the result does not depend on the thread count.
template <typename Load>
VerifyResult verify_with(Load load, CollectiveKind kind, const CollectiveCounts& counts,
                         const PatternParams& params, int rank, int threads) {
  std::vector<VerifyResult> parts(static_cast<std::size_t>(std::max(1, threads)));
  split_range(counts.recv, threads, [&](std::uint64_t b, std::uint64_t e, std::uint64_t t) {
    verify_span(load, kind, counts, params, rank, b, e, parts[t]);
  });
  VerifyResult r;
  for (const VerifyResult& part : parts) {
    if (part.wrong == 0) continue;
    if (r.wrong == 0) {
      r.first_wrong = part.first_wrong;
      r.expected = part.expected;
      r.got = part.got;
    }
    r.wrong += part.wrong;
  }
  return r;
}

template <DType T>
VerifyResult verify_loop(const void* buffer, CollectiveKind kind, const CollectiveCounts& counts,
                         const PatternParams& p, int rank, int threads) {
  return verify_with([buffer](std::uint64_t i) { return load_element(buffer, T, i); }, kind, counts,
                     p, rank, threads);
}

// Large verifies of the small float formats: every code decoded once into a table by the same
// decoder (load_element), then looked up.
template <DType T, typename Code>
VerifyResult verify_small_float(const void* buffer, CollectiveKind kind,
                                const CollectiveCounts& counts, const PatternParams& p, int rank,
                                int threads) {
  constexpr std::size_t kCodes = std::size_t{1} << (8 * sizeof(Code));
  if (counts.recv < 4 * kCodes) return verify_loop<T>(buffer, kind, counts, p, rank, 1);
  std::vector<Code> codes(kCodes);
  std::vector<double> table(kCodes);
  for (std::size_t c = 0; c < kCodes; ++c) {
    codes[c] = static_cast<Code>(c);
    table[c] = load_element(codes.data(), T, c);
  }
  const Code* in = static_cast<const Code*>(buffer);
  const double* decoded = table.data();
  return verify_with([in, decoded](std::uint64_t i) { return decoded[in[i]]; }, kind, counts, p,
                     rank, threads);
}

}  // namespace

void fill_input(void* buffer, CollectiveKind kind, const CollectiveCounts& counts,
                const PatternSpec& spec, int rank, int threads) {
  check_args(buffer, counts.send, kind, spec, rank, "fill_input");
  const PatternParams p = pattern_params(kind, spec);
  const std::uint64_t n = counts.send;
  switch (spec.dtype) {
    case DType::kFloat32:
      return fill_plain<DType::kFloat32>(buffer, n, p, rank, threads);
    case DType::kBFloat16:
      return fill_small_float<DType::kBFloat16, std::uint16_t>(buffer, n, p, rank, threads);
    case DType::kFloat16:
      return fill_small_float<DType::kFloat16, std::uint16_t>(buffer, n, p, rank, threads);
    case DType::kInt32:
      return fill_plain<DType::kInt32>(buffer, n, p, rank, threads);
    case DType::kFp8E4M3:
      return fill_small_float<DType::kFp8E4M3, std::uint8_t>(buffer, n, p, rank, threads);
    case DType::kFp8E5M2:
      return fill_small_float<DType::kFp8E5M2, std::uint8_t>(buffer, n, p, rank, threads);
  }
  throw InternalError("fill_input: unknown dtype");
}

VerifyResult verify_output(const void* buffer, CollectiveKind kind, const CollectiveCounts& counts,
                           const PatternSpec& spec, int rank, int threads) {
  check_args(buffer, counts.recv, kind, spec, rank, "verify_output");
  const PatternParams p = pattern_params(kind, spec);
  switch (spec.dtype) {
    case DType::kFloat32:
      return verify_loop<DType::kFloat32>(buffer, kind, counts, p, rank, threads);
    case DType::kBFloat16:
      return verify_small_float<DType::kBFloat16, std::uint16_t>(buffer, kind, counts, p, rank,
                                                                 threads);
    case DType::kFloat16:
      return verify_small_float<DType::kFloat16, std::uint16_t>(buffer, kind, counts, p, rank,
                                                                threads);
    case DType::kInt32:
      return verify_loop<DType::kInt32>(buffer, kind, counts, p, rank, threads);
    case DType::kFp8E4M3:
      return verify_small_float<DType::kFp8E4M3, std::uint8_t>(buffer, kind, counts, p, rank,
                                                               threads);
    case DType::kFp8E5M2:
      return verify_small_float<DType::kFp8E5M2, std::uint8_t>(buffer, kind, counts, p, rank,
                                                               threads);
  }
  throw InternalError("verify_output: unknown dtype");
}

}  // namespace shakedown
