// The CPU GEMM engine against an independent fp64 product, the stated error bound, the operand
// rules every engine shares, and the output hash.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.hpp"
#include "fp8/scaling.hpp"
#include "fp8/tensor.hpp"
#include "gemm/engine.hpp"
#include "gemm/output_hash.hpp"
#include "gemm/reference.hpp"

namespace shakedown {
namespace {

fp8::Fp8Tensor random_operand(std::int64_t rows, std::int64_t cols, fp8::Format format,
                              unsigned seed, float range = 3.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-range, range);
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  for (float& x : v) x = dist(rng);
  const float scale = fp8::current_scale({}, format, fp8::amax(v));
  return fp8::quantize_tensor(v, rows, cols, format, scale);
}

// The naive product of the dequantised operands in long double: written here, independent of
// the reference (DGEMM) and of the engine (SGEMM).
std::vector<long double> naive(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b) {
  const auto ad = fp8::dequantize_tensor(a);
  const auto bd = fp8::dequantize_tensor(b);
  std::vector<long double> d(static_cast<std::size_t>(a.rows * b.rows));
  for (std::int64_t i = 0; i < a.rows; ++i) {
    for (std::int64_t j = 0; j < b.rows; ++j) {
      long double s = 0;
      for (std::int64_t l = 0; l < a.cols; ++l) {
        s += static_cast<long double>(ad[static_cast<std::size_t>(i * a.cols + l)]) *
             static_cast<long double>(bd[static_cast<std::size_t>(j * a.cols + l)]);
      }
      d[static_cast<std::size_t>(i * b.rows + j)] = s;
    }
  }
  return d;
}

// The given rows of a full D, as GemmProblem::result_rows returns them.
GemmOutput rows_of(const GemmOutput& d, const std::vector<std::int64_t>& rows) {
  GemmOutput out = d;
  out.rows = static_cast<std::int64_t>(rows.size());
  out.values.clear();
  for (std::int64_t r : rows) {
    out.values.insert(out.values.end(), d.values.begin() + r * d.cols,
                      d.values.begin() + (r + 1) * d.cols);
  }
  return out;
}

struct Case {
  std::int64_t m, n, k;
  fp8::Format a, b;
  GemmOut out;
};

class CpuEngineShapes : public ::testing::TestWithParam<Case> {};

TEST_P(CpuEngineShapes, MatchesNaiveProductWithinTheStatedBound) {
  const Case c = GetParam();
  auto engine = make_cpu_gemm_engine(1);
  const auto a = random_operand(c.m, c.k, c.a, 11);
  const auto b = random_operand(c.n, c.k, c.b, 12);
  const GemmOutput d = engine->run(a, b, {c.out, true});
  ASSERT_EQ(d.rows, c.m);
  ASSERT_EQ(d.cols, c.n);
  const auto want = naive(a, b);
  // Per element: output rounding plus the fp32 accumulation term (gemm/reference.hpp), with
  // |A||B|^T computed exactly here instead of through Cauchy-Schwarz.
  const auto ad = fp8::dequantize_tensor(a);
  const auto bd = fp8::dequantize_tensor(b);
  const double u_out = output_roundoff(c.out);
  const double c_k = accumulation_bound(c.k, 0x1p-24);
  float amax = 0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      double abs_sum = 0;
      for (std::int64_t l = 0; l < c.k; ++l) {
        abs_sum += std::fabs(static_cast<double>(ad[static_cast<std::size_t>(i * c.k + l)]) *
                             static_cast<double>(bd[static_cast<std::size_t>(j * c.k + l)]));
      }
      const auto idx = static_cast<std::size_t>(i * c.n + j);
      const double r = static_cast<double>(want[idx]);
      const double got = static_cast<double>(d.values[idx]);
      EXPECT_LE(std::fabs(got - r), u_out * std::fabs(r) + (1 + u_out) * c_k * abs_sum)
          << "D[" << i << "," << j << "]";
      amax = std::max(amax, std::fabs(d.values[idx]));
    }
  }
  EXPECT_EQ(d.amax, amax);
  // The library's own check agrees: every row checked, inside the bound.
  const GemmCheck check = check_gemm_result(a, b, d, {}, 0x1p-24);
  EXPECT_EQ(check.rows_checked, c.m);
  EXPECT_LE(check.err_bound_ratio, 1.0);
  EXPECT_GT(check.err_bound_ratio, 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuEngineShapes,
    ::testing::Values(Case{1, 1, 1, fp8::Format::kE4M3, fp8::Format::kE4M3, GemmOut::kBF16},
                      Case{17, 33, 50, fp8::Format::kE4M3, fp8::Format::kE4M3, GemmOut::kBF16},
                      Case{64, 48, 129, fp8::Format::kE5M2, fp8::Format::kE4M3, GemmOut::kBF16},
                      Case{31, 64, 16, fp8::Format::kE4M3, fp8::Format::kE5M2, GemmOut::kFP32},
                      Case{96, 80, 256, fp8::Format::kE4M3, fp8::Format::kE4M3, GemmOut::kFP32},
                      Case{128, 7, 333, fp8::Format::kE5M2, fp8::Format::kE4M3, GemmOut::kFP32}));

// A known scaled case, exact in every format on the way: A = 2 * 1 / 4, B = 3 / 8, k = 5.
TEST(CpuEngine, AppliesScaleInvExactly) {
  const std::vector<float> av(3 * 5, 2.0f), bv(2 * 5, 3.0f);
  const auto a = fp8::quantize_tensor(av, 3, 5, fp8::Format::kE4M3, 4.0f);   // codes hold 8
  const auto b = fp8::quantize_tensor(bv, 2, 5, fp8::Format::kE4M3, 16.0f);  // codes hold 48
  EXPECT_EQ(a.scale_inv, 0.25f);
  EXPECT_EQ(b.scale_inv, 0.0625f);
  auto engine = make_cpu_gemm_engine(1);
  for (GemmOut out : {GemmOut::kBF16, GemmOut::kFP32}) {
    const GemmOutput d = engine->run(a, b, {out, false});
    ASSERT_EQ(d.values.size(), 6u);
    for (float v : d.values) EXPECT_EQ(v, 30.0f);  // 5 * 2 * 3
    EXPECT_EQ(d.amax, 30.0f);
  }
}

TEST(CpuEngine, ReferenceCatchesAWrongScale) {
  const auto a = random_operand(32, 64, fp8::Format::kE4M3, 1);
  auto b = random_operand(16, 64, fp8::Format::kE4M3, 2);
  auto engine = make_cpu_gemm_engine(1);
  const GemmOutput good = engine->run(a, b, {GemmOut::kBF16, true});
  b.scale_inv *= 1.01f;  // a 1% scale error: far outside a bf16 bound
  const GemmCheck check = check_gemm_result(a, b, good, {}, 0x1p-24);
  EXPECT_GT(check.err_bound_ratio, 1.0);
  EXPECT_GT(check.max_rel_err, 0.005);
}

TEST(CpuEngine, ReferenceChecksOnlyTheRowsAsked) {
  const auto a = random_operand(40, 64, fp8::Format::kE4M3, 1);
  const auto b = random_operand(16, 64, fp8::Format::kE4M3, 2);
  auto engine = make_cpu_gemm_engine(1);
  GemmOutput d = engine->run(a, b, {GemmOut::kFP32, true});
  d.values[5 * 16 + 3] += 100.0f;  // row 5 wrong
  EXPECT_LE(check_gemm_result(a, b, rows_of(d, {0, 39}), {0, 39}, 0x1p-24).err_bound_ratio, 1.0);
  const GemmCheck c = check_gemm_result(a, b, rows_of(d, {0, 5, 39}), {0, 5, 39}, 0x1p-24);
  EXPECT_EQ(c.rows_checked, 3);
  EXPECT_GT(c.err_bound_ratio, 1.0);
  EXPECT_EQ(c.worst_index, 5 * 16 + 3);
  d.values[0] = std::nanf("");
  EXPECT_TRUE(std::isinf(check_gemm_result(a, b, rows_of(d, {0}), {0}, 0x1p-24).err_bound_ratio));
  // The problem's own result_rows gives the same rows as the full result.
  auto p = engine->prepare(a, b, {GemmOut::kBF16, true});
  p->run();
  const GemmOutput full = p->result();
  const GemmOutput some = p->result_rows({39, 2});
  EXPECT_EQ(some.rows, 2);
  EXPECT_EQ(some.values, rows_of(full, {39, 2}).values);
  EXPECT_THROW(p->result_rows({40}), InternalError);
  EXPECT_THROW(check_gemm_result(a, b, full, {0, 1}, 0x1p-24), InternalError);
}

// Blocks of D's columns (bounded memory for huge shapes) give exactly the unblocked answer.
TEST(CpuEngine, BlockedReferenceEqualsUnblocked) {
  const auto a = random_operand(24, 40, fp8::Format::kE4M3, 8);
  const auto b = random_operand(37, 40, fp8::Format::kE4M3, 9);
  auto engine = make_cpu_gemm_engine(1);
  GemmOutput d = engine->run(a, b, {GemmOut::kBF16, true});
  d.values[7 * 37 + 30] *= 1.5f;  // one wrong element in the last block
  const GemmCheck whole = check_gemm_result(a, b, d, {}, 0x1p-24);
  for (std::int64_t block : {40 * 1, 40 * 5, 40 * 36}) {
    const GemmCheck blocked = check_gemm_result(a, b, d, {}, 0x1p-24, block);
    EXPECT_EQ(blocked.err_bound_ratio, whole.err_bound_ratio) << block;
    EXPECT_EQ(blocked.worst_index, 7 * 37 + 30) << block;
    EXPECT_EQ(blocked.max_rel_err, whole.max_rel_err) << block;
  }
}

TEST(CpuEngine, RejectsBadOperandsNamingThem) {
  auto engine = make_cpu_gemm_engine(1);
  const auto a = random_operand(8, 32, fp8::Format::kE5M2, 1);
  const auto b = random_operand(8, 32, fp8::Format::kE5M2, 2);
  try {
    engine->prepare(a, b, {});
    FAIL() << "E5M2 x E5M2 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("E5M2 x E5M2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("8 x 8 x 32"), std::string::npos) << e.what();
  }
  const auto c = random_operand(8, 31, fp8::Format::kE4M3, 3);
  const auto d = random_operand(8, 32, fp8::Format::kE4M3, 4);
  try {
    engine->prepare(c, d, {});
    FAIL() << "k mismatch accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("k columns"), std::string::npos) << e.what();
  }
}

TEST(CpuEngine, HashIsDeterministicAndSeesEveryBit) {
  const auto a = random_operand(24, 40, fp8::Format::kE4M3, 5);
  const auto b = random_operand(20, 40, fp8::Format::kE4M3, 6);
  auto engine = make_cpu_gemm_engine(1);
  for (GemmOut out : {GemmOut::kBF16, GemmOut::kFP32}) {
    auto p = engine->prepare(a, b, {out, true});
    p->run();
    const std::uint64_t h = p->output_hash();
    p->run();
    EXPECT_EQ(p->output_hash(), h);  // same inputs, same bits
    // The hash is the documented formula over the stored bits.
    const GemmOutput d = p->result();
    std::uint64_t want = 0;
    for (std::size_t i = 0; i < d.values.size(); ++i) {
      const auto bits32 = std::bit_cast<std::uint32_t>(d.values[i]);
      want += gemm_hash::element_term(i, out == GemmOut::kBF16 ? bits32 >> 16 : bits32);
    }
    EXPECT_EQ(h, want);
    const int bits = out == GemmOut::kBF16 ? 16 : 32;
    for (int bit = 0; bit < bits; ++bit) {
      p->flip_output_bit(7, bit);
      EXPECT_NE(p->output_hash(), h) << "bit " << bit;
      p->flip_output_bit(7, bit);
      EXPECT_EQ(p->output_hash(), h);
    }
    EXPECT_THROW(p->flip_output_bit(24 * 20, 0), InternalError);
  }
}

TEST(CpuEngine, DescribesItsImplementation) {
  auto engine = make_cpu_gemm_engine(1);
  EXPECT_EQ(engine->name(), "cpu");
  EXPECT_NE(engine->implementation().find("OpenBLAS"), std::string::npos);
  EXPECT_NE(engine->implementation().find("1 thread"), std::string::npos);
}

TEST(GemmBound, RigorousThenProbabilistic) {
  // (k+2)u / (1 - (k+2)u) while (k+2)u <= 0.01.
  EXPECT_DOUBLE_EQ(accumulation_bound(1022, 0x1p-24), 1024 * 0x1p-24 / (1 - 1024 * 0x1p-24));
  // 8 sqrt(k+2) u beyond: fast accumulation's 2^-13 at k = 8192.
  EXPECT_DOUBLE_EQ(accumulation_bound(8190, 0x1p-13), 8 * std::sqrt(8192.0) * 0x1p-13);
  EXPECT_EQ(output_roundoff(GemmOut::kBF16), 0x1p-8);
  EXPECT_EQ(output_roundoff(GemmOut::kFP32), 0x1p-24);
}

TEST(GemmOut, ParsesNames) {
  EXPECT_EQ(parse_gemm_out("bf16"), GemmOut::kBF16);
  EXPECT_EQ(parse_gemm_out("fp32"), GemmOut::kFP32);
  EXPECT_THROW(parse_gemm_out("fp16"), UsageError);
  EXPECT_STREQ(gemm_out_name(GemmOut::kFP32), "fp32");
}

}  // namespace
}  // namespace shakedown
