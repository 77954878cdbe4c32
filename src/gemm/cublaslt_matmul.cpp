#include "gemm/cublaslt_matmul.hpp"

#if SHAKEDOWN_HAVE_CUDA

#include <cublas_api.h>

#include <cstdint>
#include <string>
#include <utility>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "gemm/cublas_check.hpp"

namespace shakedown::cublaslt {

namespace {

bool is_fp8(cudaDataType_t t) {
  return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2;
}

template <class T>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value,
                   const char* what) {
  detail::cublas_check(cublaslt_api().MatmulDescSetAttribute(desc, attr, &value, sizeof value),
                       what, __FILE__, __LINE__);
}

struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t pref) const noexcept {
    (void)cublaslt_api().MatmulPreferenceDestroy(pref);
  }
};

}  // namespace

std::string no_gpu_reason() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string(cudaGetErrorString(rc)) + " (" + cudaGetErrorName(rc) +
           " from cudaGetDeviceCount; is the NVIDIA driver loaded and the GPU visible? check "
           "nvidia-smi and CUDA_VISIBLE_DEVICES)";
  }
  if (count == 0) return "cudaGetDeviceCount found 0 devices (check CUDA_VISIBLE_DEVICES)";
  return "";
}

std::string library_version() {
  // The loaded library's version (major * 10000 + minor * 100 + patch), which may be newer than
  // the headers this was built with: it is the library that decides the bits of D.
  const std::size_t v = cublaslt_api().GetVersion();
  return "cuBLASLt " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

std::string device_description(int device) {
  cudaDeviceProp prop{};
  SD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int driver = 0;
  SD_CUDA_CHECK(cudaDriverGetVersion(&driver));  // 1000 * major + 10 * minor
  // The SM count too: cuBLASLt's bits depend on it (MIG slices share the GPU's name).
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) +
         " SMs), driver " + std::to_string(driver / 1000) + "." +
         std::to_string(driver % 1000 / 10);
}

cudaDataType_t cuda_type(fp8::Format format) {
  switch (format) {
    case fp8::Format::kE4M3:
      return CUDA_R_8F_E4M3;
    case fp8::Format::kE5M2:
      return CUDA_R_8F_E5M2;
  }
  throw InternalError("cuBLASLt: unknown FP8 format " + std::to_string(static_cast<int>(format)));
}

cudaDataType_t cuda_type(GemmOut out) {
  switch (out) {
    case GemmOut::kBF16:
      return CUDA_R_16BF;
    case GemmOut::kFP32:
      return CUDA_R_32F;
  }
  throw InternalError("cuBLASLt: unknown output type " + std::to_string(static_cast<int>(out)));
}

kernels::Fp8Type kernel_type(fp8::Format format) {
  switch (format) {
    case fp8::Format::kE4M3:
      return kernels::Fp8Type::kE4M3;
    case fp8::Format::kE5M2:
      return kernels::Fp8Type::kE5M2;
  }
  throw InternalError("kernels: unknown FP8 format " + std::to_string(static_cast<int>(format)));
}

kernels::OutType kernel_type(GemmOut out) {
  switch (out) {
    case GemmOut::kBF16:
      return kernels::OutType::kBF16;
    case GemmOut::kFP32:
      return kernels::OutType::kFP32;
  }
  throw InternalError("kernels: unknown output type " + std::to_string(static_cast<int>(out)));
}

std::size_t element_bytes(GemmOut out) {
  return out == GemmOut::kBF16 ? 2 : 4;
}

// ---- RAII ----

DeviceMemory::DeviceMemory(std::size_t bytes) : bytes_(bytes) {
  if (bytes != 0) SD_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}

DeviceMemory::~DeviceMemory() {
  if (ptr_ != nullptr) (void)cudaFree(ptr_);
}

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept {
  if (this != &other) {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Stream::Stream() {
  // Non-blocking: the GEMM does not serialise with work on the legacy default stream.
  SD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

Handle::Handle() {
  SD_CUBLAS_CHECK(cublaslt_api().Create(&handle_));
}

Handle::~Handle() {
  if (handle_ != nullptr) (void)cublaslt_api().Destroy(handle_);
}

void Matmul::DescDeleter::operator()(cublasLtMatmulDesc_t desc) const noexcept {
  (void)cublaslt_api().MatmulDescDestroy(desc);
}

void Matmul::LayoutDeleter::operator()(cublasLtMatrixLayout_t layout) const noexcept {
  (void)cublaslt_api().MatrixLayoutDestroy(layout);
}

// ---- the matmul ----

Matmul::Matmul(cublasLtHandle_t handle, const MatmulSpec& spec, std::size_t workspace_bytes,
               const std::string& description)
    : handle_(handle), workspace_bytes_(workspace_bytes) {
  if (spec.m <= 0 || spec.n <= 0 || spec.k <= 0) {
    throw InternalError("cuBLASLt matmul " + description + ": empty shape");
  }
  cublasLtMatmulDesc_t desc = nullptr;
  SD_CUBLAS_CHECK(cublaslt_api().MatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  desc_.reset(desc);

  // Row-major D[m, n] = A[m, k] B[n, k]^T is column-major D'[n, m] = B'^T A' with B' = our B
  // stored k x n and A' = our A stored k x m: cuBLASLt's A is our B (transposed), its B is our
  // A (not transposed). This "TN" form is the only one Hopper's FP8 kernels accept. An operand
  // stored transposed (bf16 only) is the other way round: our B stored [k, n] is column-major
  // n x k, used as it is; our A stored [k, m] is column-major m x k, used transposed.
  const bool fp8 = is_fp8(spec.a_type) || is_fp8(spec.b_type);
  if (fp8 && (spec.a_transposed || spec.b_transposed || spec.beta != 0.0f)) {
    throw InternalError("cuBLASLt matmul " + description +
                        ": FP8 GEMMs take the TN form only, without accumulation");
  }
  alpha_ = spec.alpha;
  beta_ = spec.beta;
  const cublasOperation_t transa = spec.b_transposed ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t transb = spec.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_attribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, transa, "CUBLASLT_MATMUL_DESC_TRANSA");
  set_attribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, transb, "CUBLASLT_MATMUL_DESC_TRANSB");

  if (fp8) {
    const std::int8_t fast_accum = spec.fast_accum ? 1 : 0;
    set_attribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accum,
                  "CUBLASLT_MATMUL_DESC_FAST_ACCUM");
    // Swapped with the operands: cuBLASLt's A scale belongs to our B.
    if (spec.b_scale != nullptr) {
      set_attribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, spec.b_scale,
                    "CUBLASLT_MATMUL_DESC_A_SCALE_POINTER");
    }
    if (spec.a_scale != nullptr) {
      set_attribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, spec.a_scale,
                    "CUBLASLT_MATMUL_DESC_B_SCALE_POINTER");
    }
#if CUBLAS_VERSION >= 120800
    // One fp32 scale per tensor (the default, stated: cuBLAS 12.8 added block scaling modes).
    const std::int32_t scalar = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    set_attribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, scalar,
                  "CUBLASLT_MATMUL_DESC_A_SCALE_MODE");
    set_attribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, scalar,
                  "CUBLASLT_MATMUL_DESC_B_SCALE_MODE");
#endif
    // No AMAX_D_POINTER: cuBLASLt computes the output amax only for an FP8 D (with a 16-bit or
    // fp32 D it is unsupported, pytorch/pytorch#122821); the engine computes max |D| with its
    // own kernel (kernels::launch_output_amax) when the result is read.
  }

  const auto m = static_cast<std::uint64_t>(spec.m);
  const auto n = static_cast<std::uint64_t>(spec.n);
  const auto k = static_cast<std::uint64_t>(spec.k);
  // Stored row lengths (the packed leading dimensions) and the strides asked for.
  const std::int64_t a_row = spec.a_transposed ? spec.m : spec.k;
  const std::int64_t b_row = spec.b_transposed ? spec.n : spec.k;
  const std::int64_t lda = spec.lda > 0 ? spec.lda : a_row;
  const std::int64_t ldb = spec.ldb > 0 ? spec.ldb : b_row;
  const std::int64_t ldd = spec.ldd > 0 ? spec.ldd : spec.n;
  if (lda < a_row || ldb < b_row || ldd < spec.n) {
    throw InternalError("cuBLASLt matmul " + description + ": a row stride below its row length");
  }
  cublasLtMatrixLayout_t layout = nullptr;
  if (spec.b_transposed) {
    SD_CUBLAS_CHECK(cublaslt_api().MatrixLayoutCreate(&layout, spec.b_type, n, k, ldb));
  } else {
    SD_CUBLAS_CHECK(cublaslt_api().MatrixLayoutCreate(&layout, spec.b_type, k, n, ldb));
  }
  lt_a_.reset(layout);
  if (spec.a_transposed) {
    SD_CUBLAS_CHECK(cublaslt_api().MatrixLayoutCreate(&layout, spec.a_type, m, k, lda));
  } else {
    SD_CUBLAS_CHECK(cublaslt_api().MatrixLayoutCreate(&layout, spec.a_type, k, m, lda));
  }
  lt_b_.reset(layout);
  SD_CUBLAS_CHECK(cublaslt_api().MatrixLayoutCreate(&layout, spec.d_type, n, m, ldd));
  lt_d_.reset(layout);

  cublasLtMatmulPreference_t pref_raw = nullptr;
  SD_CUBLAS_CHECK(cublaslt_api().MatmulPreferenceCreate(&pref_raw));
  const std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter> pref(pref_raw);
  const std::uint64_t max_workspace = workspace_bytes_;
  SD_CUBLAS_CHECK(cublaslt_api().MatmulPreferenceSetAttribute(
      pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace, sizeof max_workspace));
  if (spec.min_alignment_bytes != 0) {
    const std::uint32_t align = spec.min_alignment_bytes;
    for (const cublasLtMatmulPreferenceAttributes_t attr :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      SD_CUBLAS_CHECK(
          cublaslt_api().MatmulPreferenceSetAttribute(pref.get(), attr, &align, sizeof align));
    }
  }

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t rc =
      cublaslt_api().MatmulAlgoGetHeuristic(handle_, desc, lt_a_.get(), lt_b_.get(), lt_d_.get(),
                                            lt_d_.get(), pref.get(), 1, &result, &found);
  if (rc == CUBLAS_STATUS_NOT_SUPPORTED || (rc == CUBLAS_STATUS_SUCCESS && found == 0)) {
    // Not a fault of the machine: this shape and type combination has no kernel. Say so; no
    // silent fallback to another type or layout.
    throw UsageError("cuBLASLt (" + library_version() + ") has no algorithm for GEMM " +
                     description + " with a " + std::to_string(workspace_bytes_ >> 20) +
                     " MiB workspace (cublasLtMatmulAlgoGetHeuristic: " +
                     (rc == CUBLAS_STATUS_SUCCESS ? std::string("0 results")
                                                  : std::string(cublaslt_api().GetStatusName(rc))) +
                     "); choose another shape or output type, or run the gemm phase on the CPU "
                     "engine");
  }
  detail::cublas_check(rc, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
  algo_ = result.algo;
}

void Matmul::enqueue(const void* a, const void* b, void* d, void* workspace,
                     cudaStream_t stream) const {
  // Operands swapped as the layouts are (see the constructor); C is D (read only when beta != 0).
  SD_CUBLAS_CHECK(cublaslt_api().Matmul(handle_, desc_.get(), &alpha_, b, lt_a_.get(), a,
                                        lt_b_.get(), &beta_, d, lt_d_.get(), d, lt_d_.get(), &algo_,
                                        workspace, workspace_bytes_, stream));
}

}  // namespace shakedown::cublaslt

#endif  // SHAKEDOWN_HAVE_CUDA
