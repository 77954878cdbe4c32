// cuBLASLt FP8 GEMM (E4M3 x E4M3 -> bf16, fp32 compute, fast accumulation: what the gemm phase
// and a forward pass run) against cuBLASLt BF16 GEMM on the same shapes, in the same process and
// through the same plumbing (gemm/cublaslt_matmul.hpp: TN layout, heuristic, 32 MiB workspace).
// Shapes: 8192^3 and the four GEMMs of a transformer layer with hidden size 8192 over 4096
// tokens. Per shape and type: warm-up, then the median over timed iterations of CUDA-event times
// (2 m n k / t). The FP8 inputs are quantised on the device from the BF16 ones by the quantize
// kernel (kernels/fp8_kernels.hpp), scale_inv included, so both GEMMs see the same numbers.
//
// Run: build/bench/bench_gemm_gpu [--iters N] [--warmup N] [--warmup-ms MS] [--quick]
// Target (issue 4): >= 1300 TFLOP/s FP8 at 8192^3 on H100/H200. Exit 0: target met, or not
// applicable (another GPU), or no GPU ("SKIP: <why>"); 1: target missed; 2: error.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/cuda_event.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "fp8/bf16.hpp"
#include "gemm/cublaslt_matmul.hpp"
#include "kernels/fp8_kernels.hpp"

using namespace shakedown;

namespace {

constexpr double kTargetTflops = 1300.0;  // FP8 at 8192^3, H100/H200 (issue 4)

struct Shape {
  const char* name;
  std::int64_t m, n, k;
};

constexpr std::int64_t kHidden = 8192;
constexpr std::int64_t kTokens = 4096;
constexpr Shape kShapes[] = {
    {"8192^3", 8192, 8192, 8192},           {"qkv", kTokens, 3 * kHidden, kHidden},
    {"proj", kTokens, kHidden, kHidden},    {"fc1", kTokens, 4 * kHidden, kHidden},
    {"fc2", kTokens, kHidden, 4 * kHidden},
};

struct Options {
  int iters = 20;
  int warmup = 5;
  // And at least this long: an idle H100/H200 sits at a few hundred MHz, and 5 GEMMs (4 ms)
  // do not bring its clocks up.
  int warmup_ms = 200;
  bool quick = false;  // 8192^3 only
};

[[noreturn]] void usage(const std::string& why) {
  throw UsageError(why +
                   "\nusage: bench_gemm_gpu [--iters N] [--warmup N] [--warmup-ms MS] [--quick]");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto number = [&](int min) {
      if (i + 1 >= argc) usage(arg + " needs a number");
      const int v = std::atoi(argv[++i]);
      if (v < min) usage(arg + " must be at least " + std::to_string(min));
      return v;
    };
    if (arg == "--iters") {
      o.iters = number(1);
    } else if (arg == "--warmup") {
      o.warmup = number(0);
    } else if (arg == "--warmup-ms") {
      o.warmup_ms = number(0);
    } else if (arg == "--quick") {
      o.quick = true;
    } else {
      usage("unknown argument '" + arg + "'");
    }
  }
  return o;
}

// Median TFLOP/s of `matmul` over opts.iters timed runs after opts.warmup untimed ones, and
// after opts.warmup_ms of them.
double time_matmul(const cublaslt::Matmul& matmul, const Shape& s, const void* a, const void* b,
                   void* d, const cublaslt::DeviceMemory& workspace, const cublaslt::Stream& stream,
                   const Options& opts) {
  const cudaStream_t st = stream.get();
  const auto warm_until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(opts.warmup_ms);
  for (int done = 0; done < opts.warmup || std::chrono::steady_clock::now() < warm_until;) {
    for (int i = 0; i < 5; ++i, ++done) matmul.enqueue(a, b, d, workspace.get(), st);
    SD_CUDA_CHECK(cudaStreamSynchronize(st));
  }
  std::vector<CudaEvent> start(static_cast<std::size_t>(opts.iters));
  std::vector<CudaEvent> stop(static_cast<std::size_t>(opts.iters));
  // Back to back, as in a training step: the events bracket each GEMM on the GPU's timeline.
  for (std::size_t i = 0; i < start.size(); ++i) {
    start[i].record(st);
    matmul.enqueue(a, b, d, workspace.get(), st);
    stop[i].record(st);
  }
  SD_CUDA_CHECK(cudaStreamSynchronize(st));
  std::vector<double> tflops(start.size());
  const double flop =
      2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  for (std::size_t i = 0; i < start.size(); ++i) {
    tflops[i] = flop / CudaEvent::seconds(start[i], stop[i]) / 1e12;
  }
  return median(tflops);
}

// Random bf16 values in (-1, 1): uniform sign, exponent and mantissa bits from splitmix64, so
// generation runs at memory speed even for the 268M-element operands.
std::vector<std::uint16_t> random_bf16(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint16_t> out(n);
  std::uint64_t state = seed;
  for (std::size_t i = 0; i < n; i += 4) {
    state += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (std::size_t j = 0; j < 4 && i + j < n; ++j) {
      const auto r = static_cast<std::uint16_t>(z >> (16 * j));
      // sign | exponent 118..125 (2^-9 .. 2^-2 scale, always < 1) | 7 mantissa bits.
      const auto exponent = static_cast<std::uint16_t>(118 + ((r >> 7) & 7));
      out[i + j] = static_cast<std::uint16_t>((r & 0x8000u) | (exponent << 7) | (r & 0x7Fu));
    }
  }
  return out;
}

int run(const Options& opts) {
  const std::string why = cublaslt::no_gpu_reason();
  if (!why.empty()) {
    std::printf("SKIP: no CUDA device: %s\n", why.c_str());
    return 0;
  }
  int device = 0;
  SD_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  SD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const std::string gpu = cublaslt::device_description(device);
  if (prop.major * 10 + prop.minor < 89) {
    std::printf("SKIP: %s has no FP8 tensor cores (compute capability 8.9 or newer needed)\n",
                gpu.c_str());
    return 0;
  }
  const std::string name = prop.name;
  // The 1300 TFLOP/s target is for the SXM parts (989/1979 TFLOP/s BF16/FP8 dense peaks): H100
  // SXM ("H100 80GB HBM3"), H200 and GH200. H100 PCIe and NVL have lower clocks and power.
  const bool target_applies =
      name.find("H200") != std::string::npos ||
      (name.find("H100") != std::string::npos && name.find("HBM3") != std::string::npos);

  std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
  if (opts.quick) shapes.resize(1);
  std::int64_t max_a = 0, max_b = 0, max_d = 0;
  for (const Shape& s : shapes) {
    max_a = std::max(max_a, s.m * s.k);
    max_b = std::max(max_b, s.n * s.k);
    max_d = std::max(max_d, s.m * s.n);
  }
  std::printf(
      "# cuBLASLt FP8 (e4m3 x e4m3 -> bf16, fast accumulation) vs BF16 GEMM, TN layout, "
      "fp32 compute, 32 MiB workspace\n# %s, %s; median of %d iterations after %d "
      "warm-up and at least %d ms of them\n",
      cublaslt::library_version().c_str(), gpu.c_str(), opts.iters, opts.warmup, opts.warmup_ms);

  // Operands: every shape uses a prefix of the largest buffers.
  const cublaslt::Stream stream;
  const cublaslt::Handle handle;
  const cublaslt::DeviceMemory workspace(cublaslt::kWorkspaceBytes);
  const cublaslt::DeviceMemory a16(static_cast<std::size_t>(max_a) * 2);
  const cublaslt::DeviceMemory b16(static_cast<std::size_t>(max_b) * 2);
  const cublaslt::DeviceMemory a8(static_cast<std::size_t>(max_a));
  const cublaslt::DeviceMemory b8(static_cast<std::size_t>(max_b));
  const cublaslt::DeviceMemory d(static_cast<std::size_t>(max_d) * 2);
  // scale (in), then amax and scale_inv (out) of A and of B.
  const cublaslt::DeviceMemory scalars(6 * sizeof(float));
  {
    const auto host_a = random_bf16(static_cast<std::size_t>(max_a), 1);
    const auto host_b = random_bf16(static_cast<std::size_t>(max_b), 2);
    SD_CUDA_CHECK(cudaMemcpy(a16.get(), host_a.data(), a16.bytes(), cudaMemcpyHostToDevice));
    SD_CUDA_CHECK(cudaMemcpy(b16.get(), host_b.data(), b16.bytes(), cudaMemcpyHostToDevice));
  }
  // |x| < 1, so scale 256 keeps every value inside E4M3's 448.
  const float host_scalars[6] = {256.0f, 0.0f, 0.0f, 256.0f, 0.0f, 0.0f};
  SD_CUDA_CHECK(
      cudaMemcpy(scalars.get(), host_scalars, sizeof host_scalars, cudaMemcpyHostToDevice));
  float* sc = scalars.as<float>();
  kernels::launch_quantize_fp8_from_bf16(a16.as<std::uint16_t>(), max_a, kernels::Fp8Type::kE4M3,
                                         sc + 0, a8.as<std::uint8_t>(), sc + 1, sc + 2,
                                         stream.get());
  kernels::launch_quantize_fp8_from_bf16(b16.as<std::uint16_t>(), max_b, kernels::Fp8Type::kE4M3,
                                         sc + 3, b8.as<std::uint8_t>(), sc + 4, sc + 5,
                                         stream.get());
  SD_CUDA_CHECK(cudaStreamSynchronize(stream.get()));

  std::printf("%-8s %6s %6s %6s %12s %12s %9s\n", "shape", "m", "n", "k", "FP8_TFLOPs",
              "BF16_TFLOPs", "FP8/BF16");
  double fp8_at_8192 = 0;
  for (const Shape& s : shapes) {
    cublaslt::MatmulSpec fp8;
    fp8.m = s.m;
    fp8.n = s.n;
    fp8.k = s.k;
    fp8.a_type = CUDA_R_8F_E4M3;
    fp8.b_type = CUDA_R_8F_E4M3;
    fp8.d_type = CUDA_R_16BF;
    fp8.fast_accum = true;
    fp8.a_scale = sc + 2;
    fp8.b_scale = sc + 5;
    cublaslt::MatmulSpec bf16 = fp8;
    bf16.a_type = CUDA_R_16BF;
    bf16.b_type = CUDA_R_16BF;
    bf16.fast_accum = false;
    bf16.a_scale = nullptr;
    bf16.b_scale = nullptr;
    const std::string what = std::string(s.name) + " " + std::to_string(s.m) + " x " +
                             std::to_string(s.n) + " x " + std::to_string(s.k) + " (m x n x k)";
    const cublaslt::Matmul fp8_mm(handle.get(), fp8, workspace.bytes(), what + ", e4m3 -> bf16");
    const cublaslt::Matmul bf16_mm(handle.get(), bf16, workspace.bytes(), what + ", bf16 -> bf16");
    const double t8 = time_matmul(fp8_mm, s, a8.get(), b8.get(), d.get(), workspace, stream, opts);
    const double t16 =
        time_matmul(bf16_mm, s, a16.get(), b16.get(), d.get(), workspace, stream, opts);
    if (&s == &shapes.front()) fp8_at_8192 = t8;
    std::printf("%-8s %6lld %6lld %6lld %12.1f %12.1f %9.2f\n", s.name, static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k), t8, t16, t8 / t16);
    std::fflush(stdout);
  }
  if (!target_applies) {
    std::printf("FP8 at 8192^3: %.1f TFLOP/s; the %.0f TFLOP/s target is for H100/H200 only: N/A\n",
                fp8_at_8192, kTargetTflops);
    return 0;
  }
  const bool pass = fp8_at_8192 >= kTargetTflops;
  std::printf("FP8 at 8192^3: %.1f TFLOP/s, target >= %.0f TFLOP/s: %s\n", fp8_at_8192,
              kTargetTflops, pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gemm_gpu: error: %s\n", e.what());
    return 2;
  }
}
