// The cuBLASLt GEMM engine (docs/architecture.md "Layers"): FP8 A and B with per-tensor scale_inv on the
// device, fp32 compute, bf16 or fp32 D, TN layout (gemm/cublaslt_matmul.hpp), algorithm from the
// heuristic, 32 MiB workspace. Operands are uploaded once in prepare(); run() only enqueues the
// matmul and waits for it, so the timed loop measures the GEMM. Checked against the CPU engine in
// tests/gpu/test_gpu_gemm.cpp.
#include <memory>
#include <string>

#include "core/error.hpp"
#include "gemm/engine.hpp"

#if SHAKEDOWN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/cuda_check.hpp"
#include "fp8/bf16.hpp"
#include "gemm/cublaslt_matmul.hpp"
#include "kernels/fp8_kernels.hpp"
#endif

namespace shakedown {

#if SHAKEDOWN_HAVE_CUDA

namespace {

// What the engine and every problem it prepared share: the device, one stream, the cuBLASLt
// handle and the workspace. Problems run one at a time on the one stream, so they can share the
// workspace. Created on the current device.
struct LtDevice {
  explicit LtDevice(int dev)
      : device(dev),
        implementation(cublaslt::library_version() + ", " + cublaslt::device_description(dev)),
        workspace(cublaslt::kWorkspaceBytes) {}

  int device;
  std::string implementation;
  cublaslt::Stream stream;
  cublaslt::Handle handle;
  cublaslt::DeviceMemory workspace;

  // The engine's device is current in every call, whatever the caller did in between.
  void make_current() const { SD_CUDA_CHECK(cudaSetDevice(device)); }
};

// Device floats next to the operands: the two scale_inv values cuBLASLt reads through its
// A/B_SCALE_POINTERs, and max |D| from the output amax kernel.
enum Scalar : int { kAScaleInv = 0, kBScaleInv = 1, kDAmax = 2, kScalars = 3 };

cublaslt::MatmulSpec make_spec(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b,
                               const GemmOptions& options, const cublaslt::DeviceMemory& scalars) {
  cublaslt::MatmulSpec spec;
  spec.m = a.rows;
  spec.n = b.rows;
  spec.k = a.cols;
  spec.a_type = cublaslt::cuda_type(a.format);
  spec.b_type = cublaslt::cuda_type(b.format);
  spec.d_type = cublaslt::cuda_type(options.out);
  spec.fast_accum = options.fast_accum;
  spec.a_scale = scalars.as<float>() + kAScaleInv;
  spec.b_scale = scalars.as<float>() + kBScaleInv;
  return spec;
}

class CublasLtProblem final : public GemmProblem {
 public:
  CublasLtProblem(std::shared_ptr<const LtDevice> dev, const fp8::Fp8Tensor& a,
                  const fp8::Fp8Tensor& b, const GemmOptions& options)
      : dev_(std::move(dev)),
        m_(a.rows),
        n_(b.rows),
        out_(options.out),
        scalars_(kScalars * sizeof(float)),
        // Before the large allocations: an unsupported shape fails fast, allocating nothing big.
        matmul_(dev_->handle.get(), make_spec(a, b, options, scalars_), cublaslt::kWorkspaceBytes,
                describe_gemm(a, b, options.out)),
        a_(a.data.size()),
        b_(b.data.size()),
        d_(static_cast<std::size_t>(m_ * n_) * cublaslt::element_bytes(out_)) {
    const cudaStream_t s = dev_->stream.get();
    const float scalars[kScalars] = {a.scale_inv, b.scale_inv, 0.0f};
    SD_CUDA_CHECK(
        cudaMemcpyAsync(scalars_.get(), scalars, sizeof scalars, cudaMemcpyHostToDevice, s));
    SD_CUDA_CHECK(
        cudaMemcpyAsync(a_.get(), a.data.data(), a.data.size(), cudaMemcpyHostToDevice, s));
    SD_CUDA_CHECK(
        cudaMemcpyAsync(b_.get(), b.data.data(), b.data.size(), cudaMemcpyHostToDevice, s));
    // A result read before any run() is all zeros, not whatever the allocator left there.
    SD_CUDA_CHECK(cudaMemsetAsync(d_.get(), 0, d_.bytes(), s));
    SD_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  void run() override {
    dev_->make_current();
    const cudaStream_t s = dev_->stream.get();
    matmul_.enqueue(a_.get(), b_.get(), d_.get(), dev_->workspace.get(), s);
    SD_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  GemmOutput result() override {
    dev_->make_current();
    float* device_amax = scalars_.as<float>() + kDAmax;
    kernels::launch_output_amax(d_.get(), m_ * n_, cublaslt::kernel_type(out_), device_amax,
                                dev_->stream.get());
    float amax = 0.0f;
    SD_CUDA_CHECK(cudaMemcpyAsync(&amax, device_amax, sizeof(float), cudaMemcpyDeviceToHost,
                                  dev_->stream.get()));
    GemmOutput out = fetch({});  // synchronises the stream: amax has landed too
    out.amax = amax;
    return out;
  }

  GemmOutput result_rows(const std::vector<std::int64_t>& rows) override {
    for (std::int64_t r : rows) {
      if (r < 0 || r >= m_) {
        throw InternalError("result_rows: row " + std::to_string(r) + " outside D's " +
                            std::to_string(m_) + " rows");
      }
    }
    dev_->make_current();
    GemmOutput out = fetch(rows);
    out.amax = fp8::amax(out.values);
    return out;
  }

  std::uint64_t output_hash() override {
    dev_->make_current();
    return kernels::output_hash(d_.get(), m_ * n_, cublaslt::kernel_type(out_), dev_->stream.get());
  }

  void flip_output_bit(std::int64_t index, int bit) override {
    dev_->make_current();
    const cudaStream_t s = dev_->stream.get();
    kernels::launch_flip_output_bit(d_.get(), m_ * n_, cublaslt::kernel_type(out_), index, bit, s);
    // Done when this returns, as on the CPU engine.
    SD_CUDA_CHECK(cudaStreamSynchronize(s));
  }

 private:
  std::shared_ptr<const LtDevice> dev_;
  std::int64_t m_, n_;
  GemmOut out_;
  cublaslt::DeviceMemory scalars_;
  cublaslt::Matmul matmul_;
  cublaslt::DeviceMemory a_, b_, d_;

  // Rows of D (all of them when `rows` is empty) copied back and widened to float, amax unset.
  // Row r is contiguous on the device (row-major [m, n]): one copy per row, or one for all.
  GemmOutput fetch(const std::vector<std::int64_t>& rows) {
    const cudaStream_t s = dev_->stream.get();
    const std::size_t row_bytes = static_cast<std::size_t>(n_) * cublaslt::element_bytes(out_);
    const std::size_t count = rows.empty() ? static_cast<std::size_t>(m_) : rows.size();
    std::vector<unsigned char> raw(count * row_bytes);
    const auto* d = static_cast<const unsigned char*>(d_.get());
    if (rows.empty()) {
      SD_CUDA_CHECK(cudaMemcpyAsync(raw.data(), d, raw.size(), cudaMemcpyDeviceToHost, s));
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      SD_CUDA_CHECK(cudaMemcpyAsync(raw.data() + i * row_bytes,
                                    d + static_cast<std::size_t>(rows[i]) * row_bytes, row_bytes,
                                    cudaMemcpyDeviceToHost, s));
    }
    SD_CUDA_CHECK(cudaStreamSynchronize(s));
    GemmOutput out;
    out.rows = static_cast<std::int64_t>(count);
    out.cols = n_;
    out.type = out_;
    out.values.resize(count * static_cast<std::size_t>(n_));
    if (out_ == GemmOut::kBF16) {
      for (std::size_t i = 0; i < out.values.size(); ++i) {
        std::uint16_t bits = 0;
        std::memcpy(&bits, raw.data() + 2 * i, 2);
        out.values[i] = fp8::bf16_value(bits);
      }
    } else {
      std::memcpy(out.values.data(), raw.data(), raw.size());
    }
    return out;
  }
};

// cuBLASLt's FP8 kernels need 16-byte aligned leading dimensions: k for A and B (one byte per
// element), n for D. Checked before anything touches the GPU, with what to change.
void check_leading_dimensions(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b, GemmOut out) {
  const auto next16 = [](std::int64_t v) { return (v + 15) / 16 * 16; };
  const std::int64_t k = a.cols;
  const std::int64_t n = b.rows;
  if (k % 16 != 0) {
    throw UsageError("cuBLASLt FP8 GEMM " + describe_gemm(a, b, out) +
                     ": k = " + std::to_string(k) +
                     " is not a multiple of 16 (k is the leading dimension of A and B, and "
                     "cuBLASLt's FP8 kernels need multiples of 16); use k = " +
                     std::to_string(next16(k)) + ", or the CPU engine for this shape");
  }
  if (n % 16 != 0) {
    throw UsageError("cuBLASLt FP8 GEMM " + describe_gemm(a, b, out) +
                     ": n = " + std::to_string(n) +
                     " is not a multiple of 16 (n is the leading dimension of D, and cuBLASLt's "
                     "FP8 kernels need multiples of 16); use n = " +
                     std::to_string(next16(n)) + ", or the CPU engine for this shape");
  }
}

class CublasLtEngine final : public GemmEngine {
 public:
  explicit CublasLtEngine(int device) : dev_(std::make_shared<const LtDevice>(device)) {}

  std::string name() const override { return "cublaslt"; }
  std::string implementation() const override { return dev_->implementation; }

  // Hopper's FP8 tensor cores add products into partial sums that keep only about 14 significant
  // bits (DeepSeek-V3 technical report, section 3.3.2: "limited to retaining around 14 bits");
  // FAST_ACCUM off promotes those partial sums to fp32 periodically, which shortens the runs of
  // low-precision additions but does not remove them. So 2^-13 for both modes.
  double accumulation_roundoff(const GemmOptions& options) const override {
    (void)options;
    return 0x1p-13;
  }

  std::unique_ptr<GemmProblem> prepare(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b,
                                       const GemmOptions& options) override {
    check_gemm_operands(a, b);
    check_leading_dimensions(a, b, options.out);
    dev_->make_current();
    return std::make_unique<CublasLtProblem>(dev_, a, b, options);
  }

 private:
  std::shared_ptr<const LtDevice> dev_;
};

}  // namespace

std::unique_ptr<GemmEngine> make_cublaslt_gemm_engine() {
  const std::string why = cublaslt::no_gpu_reason();
  if (!why.empty()) throw UsageError("cuBLASLt GEMM engine: no CUDA device: " + why);
  int device = 0;
  SD_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  SD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  if (prop.major * 10 + prop.minor < 89) {
    throw UsageError(
        "cuBLASLt GEMM engine: FP8 GEMMs need compute capability 8.9 or newer (Ada, "
        "Hopper, Blackwell); CUDA device " +
        std::to_string(device) + " is " + prop.name + " (sm_" + std::to_string(prop.major) +
        std::to_string(prop.minor) + "): run the gemm phase on the CPU engine");
  }
  // cuBLASLt itself would run, but our kernels (hash, amax, flip) would then fail later with
  // "no kernel image": say so now, with what to change.
  if (const std::string problem = kernels::kernel_image_problem(); !problem.empty()) {
    throw UsageError("cuBLASLt GEMM engine: shakedown's kernels cannot run on CUDA device " +
                     std::to_string(device) + " (" + prop.name + ", sm_" +
                     std::to_string(prop.major) + std::to_string(prop.minor) + "): " + problem +
                     "; rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(prop.major) +
                     std::to_string(prop.minor));
  }
  return std::make_unique<CublasLtEngine>(device);
}

#else  // !SHAKEDOWN_HAVE_CUDA

std::unique_ptr<GemmEngine> make_cublaslt_gemm_engine() {
  throw UsageError(
      "cuBLASLt GEMM engine: this build has no CUDA (configure with the CUDA toolkit: cmake "
      "-DSHAKEDOWN_CUDA=ON, with nvcc and NCCL under /usr/local/cuda)");
}

#endif  // SHAKEDOWN_HAVE_CUDA

}  // namespace shakedown
