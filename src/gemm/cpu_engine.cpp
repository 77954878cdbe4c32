// The CPU engine: FP8 operands decoded through a 256-entry table with scale_inv folded in, then
// OpenBLAS SGEMM with fp32 accumulation, then the output rounded to its stored type. Decoding is
// part of every run() (as dequantisation is part of an emulated FP8 GEMM), so its throughput is
// comparable with plain SGEMM on the same shape (bench/bench_gemm_cpu).
#include <cblas.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <new>

#include "core/error.hpp"
#include "fp8/bf16.hpp"
#include "gemm/blas_kernels.hpp"
#include "gemm/engine.hpp"
#include "gemm/output_hash.hpp"

namespace shakedown {

namespace {

// decode(code) * scale_inv for every code: one multiply per code instead of one per element.
std::array<float, 256> scaled_table(fp8::Format format, float scale_inv) {
  std::array<float, 256> table{};
  const auto& decoded = fp8::decode_table(format);
  for (std::size_t c = 0; c < 256; ++c) table[c] = decoded[c] * scale_inv;
  return table;
}

void decode(const std::vector<std::uint8_t>& codes, const std::array<float, 256>& table,
            std::vector<float>& out) {
  const std::uint8_t* in = codes.data();
  float* o = out.data();
  const std::size_t n = codes.size();
  for (std::size_t i = 0; i < n; ++i) o[i] = table[in[i]];
}

template <class T>
std::vector<T> allocate(std::size_t n, const std::string& what) {
  try {
    return std::vector<T>(n);
  } catch (const std::bad_alloc&) {
    throw OutOfMemory("CPU GEMM: cannot allocate " + std::to_string(n * sizeof(T)) + " bytes for " +
                      what);
  }
}

class CpuGemmProblem final : public GemmProblem {
 public:
  CpuGemmProblem(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b, const GemmOptions& options)
      : m_(a.rows),
        n_(b.rows),
        k_(a.cols),
        out_(options.out),
        a_codes_(a.data),
        b_codes_(b.data),
        a_table_(scaled_table(a.format, a.scale_inv)),
        b_table_(scaled_table(b.format, b.scale_inv)) {
    const std::string what = describe_gemm(a, b, options.out);
    a_f32_ = allocate<float>(a_codes_.size(), "A of " + what);
    b_f32_ = allocate<float>(b_codes_.size(), "B of " + what);
    d_f32_ = allocate<float>(static_cast<std::size_t>(m_ * n_), "D of " + what);
    if (out_ == GemmOut::kBF16) d_bf16_ = allocate<std::uint16_t>(d_f32_.size(), "D of " + what);
  }

  void run() override {
    decode(a_codes_, a_table_, a_f32_);
    decode(b_codes_, b_table_, b_f32_);
    // Row-major D[m, n] = A[m, k] . B[n, k]^T.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m_), static_cast<int>(n_),
                static_cast<int>(k_), 1.0f, a_f32_.data(), static_cast<int>(k_), b_f32_.data(),
                static_cast<int>(k_), 0.0f, d_f32_.data(), static_cast<int>(n_));
    if (out_ == GemmOut::kBF16) {
      const std::size_t n = d_f32_.size();
      for (std::size_t i = 0; i < n; ++i) d_bf16_[i] = fp8::bf16_bits(d_f32_[i]);
    }
  }

  GemmOutput result() override {
    GemmOutput out;
    out.rows = m_;
    out.cols = n_;
    out.type = out_;
    if (out_ == GemmOut::kBF16) {
      // reserve + push_back rather than resize: GCC 12 at -O3 reports a false null dereference
      // in vector's default-construction of the new elements (-Wnull-dereference).
      out.values.reserve(d_bf16_.size());
      for (const std::uint16_t bits : d_bf16_) out.values.push_back(fp8::bf16_value(bits));
    } else {
      out.values = d_f32_;
    }
    out.amax = fp8::amax(out.values);  // NaN shows as NaN
    return out;
  }

  std::uint64_t output_hash() override {
    std::uint64_t sum = 0;
    const std::size_t n = d_f32_.size();
    for (std::size_t i = 0; i < n; ++i) sum += gemm_hash::element_term(i, stored_bits(i));
    return sum;
  }

  void flip_output_bit(std::int64_t index, int bit) override {
    const auto i = static_cast<std::size_t>(index);
    if (index < 0 || i >= d_f32_.size() || bit < 0 || bit >= bits_per_element()) {
      throw InternalError("flip_output_bit: element " + std::to_string(index) + " bit " +
                          std::to_string(bit) + " is outside D");
    }
    if (out_ == GemmOut::kBF16) {
      d_bf16_[i] = static_cast<std::uint16_t>(d_bf16_[i] ^ (1u << bit));
    } else {
      d_f32_[i] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(d_f32_[i]) ^ (1u << bit));
    }
  }

 private:
  int bits_per_element() const { return out_ == GemmOut::kBF16 ? 16 : 32; }
  std::uint32_t stored_bits(std::size_t i) const {
    return out_ == GemmOut::kBF16 ? d_bf16_[i] : std::bit_cast<std::uint32_t>(d_f32_[i]);
  }

  std::int64_t m_, n_, k_;
  GemmOut out_;
  std::vector<std::uint8_t> a_codes_, b_codes_;
  std::array<float, 256> a_table_, b_table_;
  std::vector<float> a_f32_, b_f32_, d_f32_;
  std::vector<std::uint16_t> d_bf16_;
};

class CpuGemmEngine final : public GemmEngine {
 public:
  explicit CpuGemmEngine(int threads) {
    // OpenBLAS's thread count is process-wide; shakedown has one engine per rank.
    if (threads > 0) openblas_set_num_threads(threads);
  }

  std::string name() const override { return "cpu"; }

  std::string implementation() const override {
    // The kernel OpenBLAS picked for this CPU and its thread count decide the bits; ranks only
    // compare output hashes within one such group.
    const int threads = openblas_get_num_threads();
    std::string note = blas_kernels_note();
    if (note.empty()) note = blas_fallback_advice(openblas_get_corename(), cpu_vector_features());
    return std::string(openblas_get_config()) + ", " + openblas_get_corename() + " kernels" +
           (note.empty() ? "" : " (" + note + ")") + ", " + std::to_string(threads) +
           (threads == 1 ? " thread" : " threads");
  }

  std::unique_ptr<GemmProblem> prepare(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b,
                                       const GemmOptions& options) override {
    check_gemm_operands(a, b);
    // CBLAS takes m, n, k and the leading dimensions (k, n) as int; offsets inside are 64-bit.
    constexpr std::int64_t kBlasIntMax = 2147483647;
    if (a.rows > kBlasIntMax || b.rows > kBlasIntMax || a.cols > kBlasIntMax) {
      throw UsageError("GEMM " + describe_gemm(a, b, options.out) +
                       ": a dimension exceeds 2^31 - 1, the most CBLAS accepts; use smaller "
                       "shapes in gemm.shapes");
    }
    return std::make_unique<CpuGemmProblem>(a, b, options);
  }
};

}  // namespace

std::unique_ptr<GemmEngine> make_cpu_gemm_engine(int threads) {
  return std::make_unique<CpuGemmEngine>(threads);
}

}  // namespace shakedown
