// Pattern fill / verify / corrupt kernels for the collectives phase. Every formula comes from
// comm/pattern_math.hpp (SD_HOST_DEVICE) and is called exactly as the host reference
// (comm/pattern.cpp) calls it: PatternParams from pattern_params(kind, spec), then pattern_input /
// expected_output / store_element / load_element per element. So a device verify and a host
// verify of the same bytes give the same answer.
#if SHAKEDOWN_HAVE_CUDA

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "comm/cuda_check.hpp"
#include "comm/pattern_math.hpp"
#include "kernels/collective_kernels.hpp"
#include "kernels/launch.cuh"
#include "kernels/stream_scratch.cuh"

namespace shakedown::kernels {

namespace {

// Grid-stride loops; per-block atomics stay cheap at this many blocks.
constexpr std::uint64_t kMaxBlocks = 4096;

struct VerifyScratch {
  unsigned long long wrong;
  unsigned long long first;  // ULLONG_MAX: none
  double expected;
  double got;
};

// The dtype is a template argument so the per-element switch in store/load_element folds away,
// as in the host reference (comm/pattern.cpp).
template <DType T>
__global__ void fill_kernel(void* buf, std::uint64_t count, PatternParams params, int rank) {
  for (std::uint64_t i = thread_index(); i < count; i += thread_stride()) {
    store_element(buf, T, i, pattern_input(params, rank, i));
  }
}

template <DType T>
__global__ void verify_kernel(const void* buf, CollectiveKind kind, CollectiveCounts counts,
                              PatternParams params, int rank, VerifyScratch* out) {
  unsigned long long wrong = 0;
  unsigned long long first = ULLONG_MAX;
  for (std::uint64_t i = thread_index(); i < counts.recv; i += thread_stride()) {
    const double got = load_element(buf, T, i);
    const double want = expected_output(kind, params, counts, rank, i);
    // The host reference's comparison: NaN never matches, and -0 is not +0.
    if (!matches(got, want)) {
      if (wrong == 0) first = i;  // a thread visits its indices in increasing order
      ++wrong;
    }
  }
  // At most two atomics per thread, and only where something is wrong: a clean verify of a
  // large buffer runs at memory bandwidth.
  if (wrong != 0) {
    atomicAdd(&out->wrong, wrong);
    atomicMin(&out->first, first);
  }
}

// One thread: the expected and found values at the first wrong index (known only once every
// block of verify_kernel is done, hence a second launch on the same stream).
__global__ void verify_detail_kernel(const void* buf, DType dtype, CollectiveKind kind,
                                     CollectiveCounts counts, PatternParams params, int rank,
                                     VerifyScratch* out) {
  if (out->first == ULLONG_MAX) return;
  out->expected = expected_output(kind, params, counts, rank, out->first);
  out->got = load_element(buf, dtype, out->first);
}

__global__ void corrupt_kernel(void* buf, DType dtype, std::uint64_t index) {
  // corrupted_value: a different value, exact in the dtype (adding one is not enough for
  // bfloat16 at 256).
  store_element(buf, dtype, index, corrupted_value(dtype, load_element(buf, dtype, index)));
}

// Calls fn(std::integral_constant<DType, T>) for the runtime dtype `t`.
template <class Fn>
void with_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::kFloat32:
      return fn(std::integral_constant<DType, DType::kFloat32>{});
    case DType::kBFloat16:
      return fn(std::integral_constant<DType, DType::kBFloat16>{});
    case DType::kFloat16:
      return fn(std::integral_constant<DType, DType::kFloat16>{});
    case DType::kInt32:
      return fn(std::integral_constant<DType, DType::kInt32>{});
    case DType::kFp8E4M3:
      return fn(std::integral_constant<DType, DType::kFp8E4M3>{});
    case DType::kFp8E5M2:
      return fn(std::integral_constant<DType, DType::kFp8E5M2>{});
  }
  throw InternalError("collective kernels: unknown dtype " + std::to_string(static_cast<int>(t)));
}

}  // namespace

void launch_fill(void* dev, CollectiveKind kind, const CollectiveCounts& counts,
                 const PatternSpec& spec, int rank, void* stream) {
  if (counts.send == 0) return;
  // The parameters once per buffer, on the host, exactly as fill_input computes them.
  const PatternParams params = pattern_params(kind, spec);
  with_dtype(spec.dtype, [&](auto t) {
    fill_kernel<decltype(t)::value>
        <<<grid_for(counts.send, kMaxBlocks), kBlock, 0, as_stream(stream)>>>(dev, counts.send,
                                                                              params, rank);
  });
  SD_CUDA_CHECK(cudaGetLastError());
}

VerifyResult run_verify(const void* dev, CollectiveKind kind, const CollectiveCounts& counts,
                        const PatternSpec& spec, int rank, void* stream) {
  VerifyResult result;
  if (counts.recv == 0) return result;
  const PatternParams params = pattern_params(kind, spec);
  const cudaStream_t s = as_stream(stream);
  StreamScratch scratch(sizeof(VerifyScratch), s);
  auto* out = static_cast<VerifyScratch*>(scratch.get());
  VerifyScratch host{0, ULLONG_MAX, 0.0, 0.0};
  SD_CUDA_CHECK(cudaMemcpyAsync(out, &host, sizeof host, cudaMemcpyHostToDevice, s));
  with_dtype(spec.dtype, [&](auto t) {
    verify_kernel<decltype(t)::value>
        <<<grid_for(counts.recv, kMaxBlocks), kBlock, 0, s>>>(dev, kind, counts, params, rank, out);
  });
  SD_CUDA_CHECK(cudaGetLastError());
  verify_detail_kernel<<<1, 1, 0, s>>>(dev, spec.dtype, kind, counts, params, rank, out);
  SD_CUDA_CHECK(cudaGetLastError());
  SD_CUDA_CHECK(cudaMemcpyAsync(&host, out, sizeof host, cudaMemcpyDeviceToHost, s));
  SD_CUDA_CHECK(cudaStreamSynchronize(s));
  result.wrong = host.wrong;
  if (host.first != ULLONG_MAX) {
    result.first_wrong = static_cast<std::int64_t>(host.first);
    result.expected = host.expected;
    result.got = host.got;
  }
  return result;
}

void launch_corrupt(void* dev, DType dtype, std::uint64_t index, void* stream) {
  corrupt_kernel<<<1, 1, 0, as_stream(stream)>>>(dev, dtype, index);
  SD_CUDA_CHECK(cudaGetLastError());
}

}  // namespace shakedown::kernels

#endif  // SHAKEDOWN_HAVE_CUDA
