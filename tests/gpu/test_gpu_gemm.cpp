// GPU tests of the FP8 kernels (kernels/fp8_kernels.hpp) and the cuBLASLt GEMM engine, on one
// GPU: the quantize / dequantize kernels against fp8/ bit for bit, the output hash and amax
// kernels against the host formulas, and the cuBLASLt engine against the CPU engine (the
// numerical reference) on the same inputs. Without a GPU every GPU test skips, saying why; the
// check-macro and no-GPU tests need only the libraries and run wherever CUDA was built.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "gemm/engine.hpp"

#if SHAKEDOWN_HAVE_CUDA
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "core/cuda_check.hpp"
#include "fp8/bf16.hpp"
#include "fp8/fp8.hpp"
#include "fp8/scaling.hpp"
#include "fp8/tensor.hpp"
#include "gemm/cublas_check.hpp"
#include "gemm/cublaslt_matmul.hpp"
#include "gemm/output_hash.hpp"
#include "kernels/fp8_kernels.hpp"
#endif

namespace shakedown {
namespace {

#if !SHAKEDOWN_HAVE_CUDA

TEST(GpuGemm, NeedsCuda) {
  GTEST_SKIP() << "no CUDA device: built without CUDA (SHAKEDOWN_HAVE_CUDA=0)";
}

TEST(CublasLtEngine, WithoutCudaSaysSo) {
  try {
    (void)make_cublaslt_gemm_engine();
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("this build has no CUDA"), std::string::npos) << e.what();
  }
}

#else

using fp8::Format;

constexpr Format kFormats[] = {Format::kE4M3, Format::kE5M2};

std::string format_name(Format f) {
  return std::string(fp8::name(f));
}

// ---- need the libraries, not a GPU ----

TEST(CublasCheck, NamesCallAndStatus) {
  try {
    SD_CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE);
    FAIL() << "no exception";
  } catch (const OutOfMemory&) {
    FAIL() << "not an allocation failure";
  } catch (const RuntimeFault& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuBLASLt error in CUBLAS_STATUS_INVALID_VALUE at "), std::string::npos)
        << what;
    EXPECT_NE(what.find("test_gpu_gemm.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find(cublaslt_api().GetStatusName(CUBLAS_STATUS_INVALID_VALUE)),
              std::string::npos)
        << what;
    EXPECT_NE(what.find(cublaslt_api().GetStatusString(CUBLAS_STATUS_INVALID_VALUE)),
              std::string::npos)
        << what;
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
  }
  EXPECT_THROW(SD_CUBLAS_CHECK(CUBLAS_STATUS_ALLOC_FAILED), OutOfMemory);
  EXPECT_NO_THROW(SD_CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
}

// Every boundary of the format (at scale 1): each finite value, the midpoints between neighbours
// (ties to even) and the floats next to them, past the largest finite value, both zeros,
// infinities, NaNs of both signs, float subnormals and FLT_MAX.
std::vector<float> boundary_values(Format f) {
  std::vector<float> values;
  const auto& table = fp8::decode_table(f);
  const float max = fp8::info(f).max_finite;
  for (int c = 0; c < 0x80; ++c) {
    const float v = table[static_cast<std::size_t>(c)];
    if (!std::isfinite(v)) continue;
    values.push_back(v);
    const float next = c + 1 < 0x80 ? table[static_cast<std::size_t>(c + 1)]
                                    : std::numeric_limits<float>::infinity();
    // Past the largest finite value: the tie with the next (non-finite) code, max + ulp / 2.
    const float mid =
        std::isfinite(next) ? (v + next) / 2 : v + (v - table[static_cast<std::size_t>(c - 1)]) / 2;
    values.push_back(mid);
    values.push_back(std::nextafter(mid, 0.0f));
    values.push_back(std::nextafter(mid, std::numeric_limits<float>::infinity()));
  }
  const float extra[] = {0.0f,
                         max * 2,
                         std::numeric_limits<float>::max(),
                         std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::quiet_NaN(),
                         std::numeric_limits<float>::denorm_min(),
                         std::numeric_limits<float>::min(),
                         fp8::info(f).min_subnormal / 2,
                         std::nextafter(fp8::info(f).min_subnormal / 2, 1.0f)};
  values.insert(values.end(), std::begin(extra), std::end(extra));
  const std::size_t positives = values.size();
  for (std::size_t i = 0; i < positives; ++i) values.push_back(-values[i]);
  return values;
}

// NVIDIA's own conversion, in its host (software) form, agrees with fp8::encode on every float
// class: RNE ties, subnormals, saturation of overflow and infinities. The kernels use the same
// intrinsic, which on sm_89+ is the hardware cvt.rn.satfinite; that path is checked on the GPU
// below. NaN is excluded here only: the software path drops the NaN's sign, the kernel does not.
TEST(CudaFp8Conversion, HostPathMatchesEncode) {
  std::mt19937_64 rng(7);
  for (Format f : kFormats) {
    const auto interp = f == Format::kE4M3 ? __NV_E4M3 : __NV_E5M2;
    int checked = 0;
    for (int i = 0; i < 200000; ++i) {
      const auto bits = static_cast<std::uint32_t>(rng());
      const float x = std::bit_cast<float>(bits);
      if (std::isnan(x)) continue;
      const auto want = fp8::encode(x, f);
      const auto got = static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, interp));
      ASSERT_EQ(got, want) << format_name(f) << " x = " << x << " (bits 0x" << std::hex << bits
                           << ")";
      ++checked;
    }
    EXPECT_GT(checked, 190000);
    for (float x : boundary_values(f)) {
      if (std::isnan(x)) continue;
      ASSERT_EQ(static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, interp)),
                fp8::encode(x, f))
          << format_name(f) << " boundary x = " << x;
    }
  }
}

// ---- one GPU ----

std::string gpu_reason() {
  static const std::string reason = cublaslt::no_gpu_reason();
  return reason;
}

TEST(CublasLtEngine, WithoutGpuSaysWhy) {
  if (gpu_reason().empty()) GTEST_SKIP() << "a GPU is present: the no-GPU message is not shown";
  try {
    (void)make_cublaslt_gemm_engine();
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device: "), std::string::npos) << e.what();
  }
}

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_reason().empty()) GTEST_SKIP() << "no CUDA device: " << gpu_reason();
  }

  template <class T>
  static cublaslt::DeviceMemory upload(std::span<const T> host) {
    cublaslt::DeviceMemory dev(std::max<std::size_t>(host.size_bytes(), 1));
    if (!host.empty()) {
      SD_CUDA_CHECK(cudaMemcpy(dev.get(), host.data(), host.size_bytes(), cudaMemcpyHostToDevice));
    }
    return dev;
  }

  template <class T>
  static std::vector<T> download(const void* dev, std::size_t count) {
    std::vector<T> host(count);
    if (count != 0) {
      SD_CUDA_CHECK(cudaMemcpy(host.data(), dev, count * sizeof(T), cudaMemcpyDeviceToHost));
    }
    return host;
  }

  static cublaslt::DeviceMemory scalar(float v) { return upload(std::span<const float>(&v, 1)); }

  static float read_scalar(const cublaslt::DeviceMemory& dev) {
    return download<float>(dev.get(), 1)[0];
  }
};

// Random floats of every class: arbitrary bit patterns (NaNs, infinities, subnormals included)
// and normals over the range the formats care about.
std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 18);
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 4 == 0) {
      values[i] = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    } else {
      values[i] = std::ldexp(normal(rng), exponent(rng));
    }
  }
  return values;
}

bool same_amax(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) ||
         std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

class Fp8Kernels : public GpuTest {
 protected:
  // Runs the fp32 quantize kernel on in[offset:] (an odd offset takes the unaligned scalar path,
  // a count not divisible by 4 the vector path's tail) and compares with fp8::quantize.
  void check_quantize(const std::vector<float>& in, std::size_t offset, Format f, float scale) {
    SCOPED_TRACE(format_name(f) + " scale " + std::to_string(scale) + " offset " +
                 std::to_string(offset) + " count " + std::to_string(in.size() - offset));
    const std::span<const float> part(in.data() + offset, in.size() - offset);
    std::vector<std::uint8_t> want(part.size());
    const float want_amax = fp8::quantize(part, scale, f, want);

    const auto d_in = upload(std::span<const float>(in));
    cublaslt::DeviceMemory d_out(in.size());
    const auto d_scale = scalar(scale);
    cublaslt::DeviceMemory d_amax(sizeof(float));
    cublaslt::DeviceMemory d_scale_inv(sizeof(float));
    kernels::launch_quantize_fp8(d_in.as<float>() + offset, static_cast<std::int64_t>(part.size()),
                                 cublaslt::kernel_type(f), d_scale.as<float>(),
                                 d_out.as<std::uint8_t>() + offset, d_amax.as<float>(),
                                 d_scale_inv.as<float>(), nullptr);
    SD_CUDA_CHECK(cudaDeviceSynchronize());
    const auto got = download<std::uint8_t>(d_out.as<std::uint8_t>() + offset, part.size());
    for (std::size_t i = 0; i < part.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << "x = " << part[i] << " (bits 0x" << std::hex
                                 << std::bit_cast<std::uint32_t>(part[i]) << std::dec
                                 << ") * scale, element " << i;
    }
    const float got_amax = read_scalar(d_amax);
    EXPECT_TRUE(same_amax(got_amax, want_amax)) << got_amax << " vs " << want_amax;
    EXPECT_EQ(read_scalar(d_scale_inv), 1.0f / scale);
  }
};

TEST_F(Fp8Kernels, QuantizeBoundariesBitForBit) {
  for (Format f : kFormats) {
    const std::vector<float> values = boundary_values(f);
    check_quantize(values, 0, f, 1.0f);
    check_quantize(values, 1, f, 1.0f);
    // Powers of two move every boundary exactly onto another one.
    check_quantize(values, 0, f, 0.25f);
    check_quantize(values, 0, f, 16.0f);
  }
}

TEST_F(Fp8Kernels, QuantizeRandomBitForBit) {
  // Large enough for many blocks and grid-stride iterations; 2^20 + 3 leaves a vector tail.
  const std::vector<float> values = random_values((std::size_t{1} << 20) + 3, 11);
  for (Format f : kFormats) {
    for (float scale : {1.0f, 3.7f, 0.0123f, 448.0f / 5.5f}) check_quantize(values, 0, f, scale);
    check_quantize(values, 3, f, 1.0f);
  }
}

TEST_F(Fp8Kernels, QuantizeFiniteInputsAmaxIsFinite) {
  // Without NaN in the input the amax is the exact max |x|, not a NaN from the bit trick.
  std::vector<float> values(100003);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (float& v : values) v = normal(rng);
  values[77777] = -1000.5f;
  for (Format f : kFormats) check_quantize(values, 0, f, 0.3f);
}

TEST_F(Fp8Kernels, QuantizeFromBf16BitForBit) {
  std::mt19937_64 rng(5);
  std::vector<std::uint16_t> bits((std::size_t{1} << 18) + 1);
  for (auto& b : bits) b = static_cast<std::uint16_t>(rng());
  std::vector<float> widened(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) widened[i] = fp8::bf16_value(bits[i]);
  const auto d_in = upload(std::span<const std::uint16_t>(bits));
  cublaslt::DeviceMemory d_out(bits.size());
  cublaslt::DeviceMemory d_amax(sizeof(float));
  for (Format f : kFormats) {
    for (float scale : {1.0f, 0.7f}) {
      SCOPED_TRACE(format_name(f) + " scale " + std::to_string(scale));
      std::vector<std::uint8_t> want(bits.size());
      const float want_amax = fp8::quantize(widened, scale, f, want);
      const auto d_scale = scalar(scale);
      kernels::launch_quantize_fp8_from_bf16(
          d_in.as<std::uint16_t>(), static_cast<std::int64_t>(bits.size()),
          cublaslt::kernel_type(f), d_scale.as<float>(), d_out.as<std::uint8_t>(),
          d_amax.as<float>(), nullptr, nullptr);
      SD_CUDA_CHECK(cudaDeviceSynchronize());
      const auto got = download<std::uint8_t>(d_out.get(), bits.size());
      for (std::size_t i = 0; i < bits.size(); ++i) {
        ASSERT_EQ(got[i], want[i])
            << "bf16 0x" << std::hex << bits[i] << std::dec << " element " << i;
      }
      EXPECT_TRUE(same_amax(read_scalar(d_amax), want_amax));
    }
  }
}

TEST_F(Fp8Kernels, DequantizeAllCodes) {
  // Every code, several times over (grid-stride loop), at a few scales. Bit for bit except NaN
  // codes, which must give a NaN (the GPU's NaN is canonical, without the code's sign).
  std::vector<std::uint8_t> codes(256 * 1000 + 5);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint8_t>(i * 7);
  const auto d_in = upload(std::span<const std::uint8_t>(codes));
  cublaslt::DeviceMemory d_out(codes.size() * sizeof(float));
  for (Format f : kFormats) {
    for (float scale_inv : {1.0f, 0.125f, 1.0f / 3.0f, 1e-30f}) {
      SCOPED_TRACE(format_name(f) + " scale_inv " + std::to_string(scale_inv));
      std::vector<float> want(codes.size());
      fp8::dequantize(codes, scale_inv, f, want);
      const auto d_scale_inv = scalar(scale_inv);
      kernels::launch_dequantize_fp8(
          d_in.as<std::uint8_t>(), static_cast<std::int64_t>(codes.size()),
          cublaslt::kernel_type(f), d_scale_inv.as<float>(), d_out.as<float>(), nullptr);
      SD_CUDA_CHECK(cudaDeviceSynchronize());
      const auto got = download<float>(d_out.get(), codes.size());
      for (std::size_t i = 0; i < codes.size(); ++i) {
        if (std::isnan(want[i])) {
          ASSERT_TRUE(std::isnan(got[i])) << "code 0x" << std::hex << int{codes[i]};
        } else {
          ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
              << "code 0x" << std::hex << int{codes[i]} << std::dec << ": " << got[i] << " vs "
              << want[i];
        }
      }
    }
  }
}

// ---- output hash, amax, flip ----

std::uint64_t host_hash_bf16(const std::vector<std::uint16_t>& d) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < d.size(); ++i) sum += gemm_hash::element_term(i, d[i]);
  return sum;
}

std::uint64_t host_hash_fp32(const std::vector<float>& d) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    sum += gemm_hash::element_term(i, std::bit_cast<std::uint32_t>(d[i]));
  }
  return sum;
}

TEST_F(GpuTest, OutputHashMatchesHost) {
  std::mt19937_64 rng(9);
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, (std::size_t{1} << 22) + 7}) {
    SCOPED_TRACE("count " + std::to_string(n));
    std::vector<std::uint16_t> bf16(n);
    for (auto& v : bf16) v = static_cast<std::uint16_t>(rng());
    std::vector<float> fp32(n);
    for (auto& v : fp32) v = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    const auto d_bf16 = upload(std::span<const std::uint16_t>(bf16));
    const auto d_fp32 = upload(std::span<const float>(fp32));
    const auto cnt = static_cast<std::int64_t>(n);
    EXPECT_EQ(kernels::output_hash(d_bf16.get(), cnt, kernels::OutType::kBF16, nullptr),
              host_hash_bf16(bf16));
    EXPECT_EQ(kernels::output_hash(d_fp32.get(), cnt, kernels::OutType::kFP32, nullptr),
              host_hash_fp32(fp32));
  }
  EXPECT_EQ(kernels::output_hash(nullptr, 0, kernels::OutType::kBF16, nullptr), 0u);
}

TEST_F(GpuTest, OutputAmaxMatchesHost) {
  std::mt19937_64 rng(13);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  const std::size_t n = (std::size_t{1} << 20) + 5;
  std::vector<float> fp32(n);
  for (auto& v : fp32) v = normal(rng);
  fp32[n / 3] = -123456.0f;
  std::vector<std::uint16_t> bf16(n);
  for (std::size_t i = 0; i < n; ++i) bf16[i] = fp8::bf16_bits(fp32[i]);
  cublaslt::DeviceMemory d_amax(sizeof(float));
  auto d_fp32 = upload(std::span<const float>(fp32));
  auto d_bf16 = upload(std::span<const std::uint16_t>(bf16));
  const auto cnt = static_cast<std::int64_t>(n);
  kernels::launch_output_amax(d_fp32.get(), cnt, kernels::OutType::kFP32, d_amax.as<float>(),
                              nullptr);
  EXPECT_EQ(read_scalar(d_amax), 123456.0f);
  kernels::launch_output_amax(d_bf16.get(), cnt, kernels::OutType::kBF16, d_amax.as<float>(),
                              nullptr);
  EXPECT_EQ(read_scalar(d_amax), fp8::bf16_value(fp8::bf16_bits(123456.0f)));
  // A NaN anywhere shows.
  fp32[n - 1] = std::numeric_limits<float>::quiet_NaN();
  d_fp32 = upload(std::span<const float>(fp32));
  kernels::launch_output_amax(d_fp32.get(), cnt, kernels::OutType::kFP32, d_amax.as<float>(),
                              nullptr);
  EXPECT_TRUE(std::isnan(read_scalar(d_amax)));
}

TEST_F(GpuTest, FlipBitFlipsExactlyThatBit) {
  std::vector<std::uint16_t> bf16(1000, 0x3F80);
  std::vector<float> fp32(1000, 1.0f);
  const auto d_bf16 = upload(std::span<const std::uint16_t>(bf16));
  const auto d_fp32 = upload(std::span<const float>(fp32));
  kernels::launch_flip_output_bit(d_bf16.get(), 1000, kernels::OutType::kBF16, 999, 15, nullptr);
  kernels::launch_flip_output_bit(d_fp32.get(), 1000, kernels::OutType::kFP32, 0, 0, nullptr);
  SD_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got16 = download<std::uint16_t>(d_bf16.get(), 1000);
  const auto got32 = download<float>(d_fp32.get(), 1000);
  bf16[999] = 0xBF80;
  fp32[0] = std::bit_cast<float>(0x3F800001u);
  EXPECT_EQ(got16, bf16);
  EXPECT_EQ(got32, fp32);
  EXPECT_THROW(
      kernels::launch_flip_output_bit(d_bf16.get(), 1000, kernels::OutType::kBF16, 0, 16, nullptr),
      InternalError);
  EXPECT_THROW(kernels::launch_flip_output_bit(d_fp32.get(), 1000, kernels::OutType::kFP32, 1000, 0,
                                               nullptr),
               InternalError);
}

// ---- the cuBLASLt engine against the CPU engine ----

struct Shape {
  std::int64_t m, n, k;
};
constexpr Shape kShapes[] = {{64, 64, 64}, {256, 128, 512}, {1024, 1024, 1024}};
struct FormatPair {
  Format a, b;
};
constexpr FormatPair kPairs[] = {
    {Format::kE4M3, Format::kE4M3}, {Format::kE5M2, Format::kE4M3}, {Format::kE4M3, Format::kE5M2}};

std::string describe(const Shape& s, const FormatPair& p, const GemmOptions& o) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " " +
         format_name(p.a) + "x" + format_name(p.b) + " -> " + gemm_out_name(o.out) +
         (o.fast_accum ? " fast_accum" : "");
}

class CublasLtGemm : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    if (!gpu_engine_) gpu_engine_ = make_cublaslt_gemm_engine();
    if (!cpu_engine_) cpu_engine_ = make_cpu_gemm_engine(0);
  }
  static void TearDownTestSuite() {
    gpu_engine_.reset();
    cpu_engine_.reset();
  }

  static fp8::Fp8Tensor tensor(const std::vector<float>& values, std::int64_t rows,
                               std::int64_t cols, Format f, float scale) {
    return fp8::quantize_tensor(values, rows, cols, f, scale);
  }

  static inline std::unique_ptr<GemmEngine> gpu_engine_;
  static inline std::unique_ptr<GemmEngine> cpu_engine_;
};

TEST_F(CublasLtGemm, ImplementationNamesLibraryAndDevice) {
  EXPECT_EQ(gpu_engine_->name(), "cublaslt");
  const std::string impl = gpu_engine_->implementation();
  EXPECT_EQ(impl.rfind("cuBLASLt ", 0), 0u) << impl;
  EXPECT_NE(impl.find("(sm_"), std::string::npos) << impl;
  EXPECT_NE(impl.find(", driver "), std::string::npos) << impl;
  std::cout << "  cuBLASLt engine: " << impl << "\n";
}

// Inputs whose product is exact: every value is -1, 0 or 1 times a power-of-two scale_inv, so
// each partial sum is an integer of magnitude <= k <= 1024 < 2^11, exact in any accumulator with
// 11 or more significant bits (Hopper's FP8 accumulation keeps about 14) and in any order, and D
// is that integer times 2^-5. Both engines must then store the same bits (bf16 D: the same
// round-to-nearest-even of the same exact value), give the same amax, and hash equal.
TEST_F(CublasLtGemm, ExactInputsGiveIdenticalOutputs) {
  std::mt19937_64 rng(21);
  std::uniform_int_distribution<int> trit(-1, 1);
  for (const Shape& s : kShapes) {
    std::vector<float> av(static_cast<std::size_t>(s.m * s.k));
    std::vector<float> bv(static_cast<std::size_t>(s.n * s.k));
    for (float& v : av) v = static_cast<float>(trit(rng));
    for (float& v : bv) v = static_cast<float>(trit(rng));
    for (const FormatPair& p : kPairs) {
      // Scales 8 and 4: the codes are +-8 and +-4 (exact in both formats), scale_inv 2^-3, 2^-2.
      const auto a = tensor(av, s.m, s.k, p.a, 8.0f);
      const auto b = tensor(bv, s.n, s.k, p.b, 4.0f);
      for (GemmOut out : {GemmOut::kBF16, GemmOut::kFP32}) {
        for (bool fast : {true, false}) {
          const GemmOptions opts{out, fast};
          SCOPED_TRACE(describe(s, p, opts));
          auto gpu = gpu_engine_->prepare(a, b, opts);
          auto cpu = cpu_engine_->prepare(a, b, opts);
          gpu->run();
          cpu->run();
          const GemmOutput g = gpu->result();
          const GemmOutput c = cpu->result();
          ASSERT_EQ(g.rows, s.m);
          ASSERT_EQ(g.cols, s.n);
          ASSERT_EQ(g.values.size(), c.values.size());
          for (std::size_t i = 0; i < c.values.size(); ++i) {
            ASSERT_EQ(g.values[i], c.values[i]) << "element (" << i / static_cast<std::size_t>(s.n)
                                                << ", " << i % static_cast<std::size_t>(s.n) << ")";
          }
          EXPECT_EQ(g.amax, c.amax);
          EXPECT_EQ(gpu->output_hash(), cpu->output_hash());
        }
      }
    }
  }
}

// Realistic inputs: activations ~ N(0, 1) and weights ~ N(0, 0.02^2), quantised with current
// scaling. The stated bound, normwise against the CPU engine (fp32 accumulation: its own error is
// below 2^-24 sqrt(k) relative and negligible here):
//   max |D_gpu - D_cpu| <= (2^-7 + 8 u sqrt(k)) max |D_cpu|
// 2^-7: both results rounded to the output type (bf16 unit roundoff 2^-8 each; 2^-24 for fp32).
// 8 u sqrt(k): the GPU's accumulation with u = accumulation_roundoff() (2^-13: Hopper's FP8 dot
// products keep about 14 bits). Rounding errors of zero-mean random terms add like a random walk,
// so the error grows as u sqrt(k) times the size of D; 8 standard deviations is the same safety
// factor as Higham and Mary's probabilistic bound (gemm/reference.hpp). A wrong layout, a
// transposed operand or a lost scale factor gives errors of the order of max |D| itself.
TEST_F(CublasLtGemm, RandomInputsWithinStatedBound) {
  std::mt19937_64 rng(23);
  std::normal_distribution<float> act(0.0f, 1.0f);
  std::normal_distribution<float> weight(0.0f, 0.02f);
  for (const Shape& s : kShapes) {
    std::vector<float> av(static_cast<std::size_t>(s.m * s.k));
    std::vector<float> bv(static_cast<std::size_t>(s.n * s.k));
    for (float& v : av) v = act(rng);
    for (float& v : bv) v = weight(rng);
    for (const FormatPair& p : kPairs) {
      const fp8::CurrentScaling recipe;
      const auto a = tensor(av, s.m, s.k, p.a, fp8::current_scale(recipe, p.a, fp8::amax(av)));
      const auto b = tensor(bv, s.n, s.k, p.b, fp8::current_scale(recipe, p.b, fp8::amax(bv)));
      for (GemmOut out : {GemmOut::kBF16, GemmOut::kFP32}) {
        for (bool fast : {true, false}) {
          const GemmOptions opts{out, fast};
          SCOPED_TRACE(describe(s, p, opts));
          const GemmOutput g = gpu_engine_->run(a, b, opts);
          const GemmOutput c = cpu_engine_->run(a, b, opts);
          ASSERT_EQ(g.values.size(), c.values.size());
          double max_ref = 0;
          for (float v : c.values) max_ref = std::max(max_ref, std::fabs(double{v}));
          ASSERT_GT(max_ref, 0);
          double max_err = 0;
          std::size_t worst = 0;
          for (std::size_t i = 0; i < c.values.size(); ++i) {
            ASSERT_TRUE(std::isfinite(g.values[i])) << "element " << i << " is " << g.values[i];
            const double err = std::fabs(double{g.values[i]} - double{c.values[i]});
            if (err > max_err) {
              max_err = err;
              worst = i;
            }
          }
          const double u_out = out == GemmOut::kBF16 ? 0x1p-8 : 0x1p-24;
          const double u_acc = gpu_engine_->accumulation_roundoff(opts);
          const double bound = 2 * u_out + 8 * u_acc * std::sqrt(static_cast<double>(s.k));
          const double rel = max_err / max_ref;
          EXPECT_LE(rel, bound) << "worst element " << worst << ": " << g.values[worst] << " vs "
                                << c.values[worst] << " (max |D| " << max_ref << ")";
          // amax of what was stored, computed on the device.
          double stored_max = 0;
          for (float v : g.values) stored_max = std::max(stored_max, std::fabs(double{v}));
          EXPECT_EQ(double{g.amax}, stored_max);
        }
      }
    }
  }
}

// The silent-data-corruption check compares output hashes across ranks and runs, so the same
// problem must give the same bits every time: also for shapes where cuBLASLt's heuristic picks
// split-K (small m and n, long k), whose partial results are reduced through the workspace.
TEST_F(CublasLtGemm, RepeatedRunsGiveTheSameBits) {
  std::mt19937_64 rng(31);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const Shape& s : {Shape{64, 64, 16384}, Shape{128, 256, 8192}, Shape{2048, 2048, 2048}}) {
    std::vector<float> av(static_cast<std::size_t>(s.m * s.k));
    std::vector<float> bv(static_cast<std::size_t>(s.n * s.k));
    for (float& v : av) v = normal(rng);
    for (float& v : bv) v = normal(rng);
    const auto a = tensor(av, s.m, s.k, Format::kE4M3, 100.0f);
    const auto b = tensor(bv, s.n, s.k, Format::kE4M3, 100.0f);
    for (bool fast : {true, false}) {
      const GemmOptions opts{GemmOut::kBF16, fast};
      SCOPED_TRACE(describe(s, FormatPair{Format::kE4M3, Format::kE4M3}, opts));
      auto problem = gpu_engine_->prepare(a, b, opts);
      problem->run();
      const std::uint64_t first = problem->output_hash();
      for (int i = 0; i < 4; ++i) {
        problem->run();
        ASSERT_EQ(problem->output_hash(), first) << "run " << i + 2;
      }
      // A second problem of the same inputs too (fresh buffers, same algorithm).
      auto again = gpu_engine_->prepare(a, b, opts);
      again->run();
      EXPECT_EQ(again->output_hash(), first);
    }
  }
}

TEST_F(CublasLtGemm, E5M2TimesE5M2IsRejected) {
  const std::vector<float> v(64 * 64, 1.0f);
  const auto a = tensor(v, 64, 64, Format::kE5M2, 1.0f);
  const auto b = tensor(v, 64, 64, Format::kE5M2, 1.0f);
  try {
    (void)gpu_engine_->prepare(a, b, GemmOptions{});
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("E5M2 x E5M2"), std::string::npos) << e.what();
  }
}

TEST_F(CublasLtGemm, LeadingDimensionsMustBeMultiplesOf16) {
  const std::vector<float> a100(64 * 100, 1.0f);
  const std::vector<float> b100(64 * 100, 1.0f);
  try {
    (void)gpu_engine_->prepare(tensor(a100, 64, 100, Format::kE4M3, 1.0f),
                               tensor(b100, 64, 100, Format::kE4M3, 1.0f), GemmOptions{});
    FAIL() << "no exception for k = 100";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("k = 100"), std::string::npos) << what;
    EXPECT_NE(what.find("k = 112"), std::string::npos) << what;  // what to change
  }
  const std::vector<float> a(64 * 64, 1.0f);
  const std::vector<float> b(40 * 64, 1.0f);
  try {
    (void)gpu_engine_->prepare(tensor(a, 64, 64, Format::kE4M3, 1.0f),
                               tensor(b, 40, 64, Format::kE4M3, 1.0f), GemmOptions{});
    FAIL() << "no exception for n = 40";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("n = 40"), std::string::npos) << e.what();
  }
  // m is no leading dimension: any m runs.
  const std::vector<float> a33(33 * 64, 1.0f);
  EXPECT_NO_THROW((void)gpu_engine_->run(
      tensor(a33, 33, 64, Format::kE4M3, 1.0f),
      tensor(std::vector<float>(64 * 64, 1.0f), 64, 64, Format::kE4M3, 1.0f), GemmOptions{}));
}

TEST_F(CublasLtGemm, FlippedOutputBitChangesTheHash) {
  std::mt19937_64 rng(29);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> av(256 * 256);
  for (float& v : av) v = normal(rng);
  const auto a = tensor(av, 256, 256, Format::kE4M3, 64.0f);
  for (GemmOut out : {GemmOut::kBF16, GemmOut::kFP32}) {
    SCOPED_TRACE(gemm_out_name(out));
    auto problem = gpu_engine_->prepare(a, a, GemmOptions{out, true});
    problem->run();
    const std::uint64_t clean = problem->output_hash();
    const float before = problem->result().values[1234];
    problem->flip_output_bit(1234, 3);
    const std::uint64_t dirty = problem->output_hash();
    EXPECT_NE(dirty, clean);
    EXPECT_NE(problem->result().values[1234], before);
    problem->flip_output_bit(1234, 3);
    EXPECT_EQ(problem->output_hash(), clean);
    // run() recomputes D: the fault is gone, and the result is deterministic.
    problem->flip_output_bit(0, 0);
    problem->run();
    EXPECT_EQ(problem->output_hash(), clean);
    EXPECT_THROW(problem->flip_output_bit(256 * 256, 0), InternalError);
  }
}

#endif  // SHAKEDOWN_HAVE_CUDA

}  // namespace
}  // namespace shakedown
