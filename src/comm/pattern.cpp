#include "comm/pattern.hpp"

#include <string>
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
template <DType T>
void fill_loop(void* buffer, std::uint64_t count, const PatternParams& params, int rank) {
  // A local copy: byte stores (fp8) may alias anything reachable, a local they cannot, so the
  // per-spec values stay in registers.
  const PatternParams p = params;
  for (std::uint64_t i = 0; i < count; ++i) store_element(buffer, T, i, pattern_input(p, rank, i));
}

// Large fills of the small float formats: the pattern integers [-L, L] encoded once into a table
// by the same encoder (store_element), then looked up, several times faster than encoding each.
template <DType T, typename Code>
void fill_small_float(void* buffer, std::uint64_t count, const PatternParams& params, int rank) {
  const std::int64_t limit = static_cast<std::int64_t>(params.limit);
  const std::uint64_t entries = 2 * params.limit + 1;
  if (count < 4 * entries) return fill_loop<T>(buffer, count, params, rank);
  std::vector<Code> table(entries);
  for (std::int64_t v = -limit; v <= limit; ++v) {
    store_element(table.data(), T, static_cast<std::uint64_t>(v + limit), static_cast<double>(v));
  }
  const PatternParams p = params;
  Code* out = static_cast<Code*>(buffer);
  for (std::uint64_t i = 0; i < count; ++i) {
    out[i] = table[static_cast<std::size_t>(static_cast<std::int64_t>(pattern_input(p, rank, i)) +
                                            limit)];
  }
}

template <typename Load>
void verify_range(Load load, CollectiveKind kind, const CollectiveCounts& counts,
                  const PatternParams& p, int rank, std::uint64_t chunk, std::uint64_t k0,
                  std::uint64_t begin, std::uint64_t count, VerifyResult& r) {
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t i = begin + k;
    const double got = load(i);
    const double want = expected_in_chunk(kind, p, counts, rank, chunk, k0 + k);
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

template <typename Load>
VerifyResult verify_with(Load load, CollectiveKind kind, const CollectiveCounts& counts,
                         const PatternParams& params, int rank) {
  const PatternParams p = params;  // see fill_loop
  VerifyResult r;
  if (!output_in_chunks(kind)) {
    verify_range(load, kind, counts, p, rank, 0, 0, 0, counts.recv, r);
    return r;
  }
  if (counts.unit == 0) return r;
  const std::uint64_t chunks = counts.recv / counts.unit;
  for (std::uint64_t c = 0; c < chunks; ++c) {
    verify_range(load, kind, counts, p, rank, c, 0, c * counts.unit, counts.unit, r);
  }
  // A recv that is not a whole number of chunks (not from the table): check the rest too.
  for (std::uint64_t i = chunks * counts.unit; i < counts.recv; ++i) {
    verify_range(load, kind, counts, p, rank, i / counts.unit, i % counts.unit, i, 1, r);
  }
  return r;
}

template <DType T>
VerifyResult verify_loop(const void* buffer, CollectiveKind kind, const CollectiveCounts& counts,
                         const PatternParams& p, int rank) {
  return verify_with([buffer](std::uint64_t i) { return load_element(buffer, T, i); }, kind, counts,
                     p, rank);
}

// Large verifies of the small float formats: every code decoded once into a table by the same
// decoder (load_element), then looked up.
template <DType T, typename Code>
VerifyResult verify_small_float(const void* buffer, CollectiveKind kind,
                                const CollectiveCounts& counts, const PatternParams& p, int rank) {
  constexpr std::size_t kCodes = std::size_t{1} << (8 * sizeof(Code));
  if (counts.recv < 4 * kCodes) return verify_loop<T>(buffer, kind, counts, p, rank);
  std::vector<Code> codes(kCodes);
  std::vector<double> table(kCodes);
  for (std::size_t c = 0; c < kCodes; ++c) {
    codes[c] = static_cast<Code>(c);
    table[c] = load_element(codes.data(), T, c);
  }
  const Code* in = static_cast<const Code*>(buffer);
  const double* decoded = table.data();
  return verify_with([in, decoded](std::uint64_t i) { return decoded[in[i]]; }, kind, counts, p,
                     rank);
}

}  // namespace

void fill_input(void* buffer, CollectiveKind kind, const CollectiveCounts& counts,
                const PatternSpec& spec, int rank) {
  check_args(buffer, counts.send, kind, spec, rank, "fill_input");
  const PatternParams p = pattern_params(kind, spec);
  const std::uint64_t n = counts.send;
  switch (spec.dtype) {
    case DType::kFloat32:
      return fill_loop<DType::kFloat32>(buffer, n, p, rank);
    case DType::kBFloat16:
      return fill_small_float<DType::kBFloat16, std::uint16_t>(buffer, n, p, rank);
    case DType::kFloat16:
      return fill_small_float<DType::kFloat16, std::uint16_t>(buffer, n, p, rank);
    case DType::kInt32:
      return fill_loop<DType::kInt32>(buffer, n, p, rank);
    case DType::kFp8E4M3:
      return fill_small_float<DType::kFp8E4M3, std::uint8_t>(buffer, n, p, rank);
    case DType::kFp8E5M2:
      return fill_small_float<DType::kFp8E5M2, std::uint8_t>(buffer, n, p, rank);
  }
  throw InternalError("fill_input: unknown dtype");
}

VerifyResult verify_output(const void* buffer, CollectiveKind kind, const CollectiveCounts& counts,
                           const PatternSpec& spec, int rank) {
  check_args(buffer, counts.recv, kind, spec, rank, "verify_output");
  const PatternParams p = pattern_params(kind, spec);
  switch (spec.dtype) {
    case DType::kFloat32:
      return verify_loop<DType::kFloat32>(buffer, kind, counts, p, rank);
    case DType::kBFloat16:
      return verify_small_float<DType::kBFloat16, std::uint16_t>(buffer, kind, counts, p, rank);
    case DType::kFloat16:
      return verify_small_float<DType::kFloat16, std::uint16_t>(buffer, kind, counts, p, rank);
    case DType::kInt32:
      return verify_loop<DType::kInt32>(buffer, kind, counts, p, rank);
    case DType::kFp8E4M3:
      return verify_small_float<DType::kFp8E4M3, std::uint8_t>(buffer, kind, counts, p, rank);
    case DType::kFp8E5M2:
      return verify_small_float<DType::kFp8E5M2, std::uint8_t>(buffer, kind, counts, p, rank);
  }
  throw InternalError("verify_output: unknown dtype");
}

}  // namespace shakedown
