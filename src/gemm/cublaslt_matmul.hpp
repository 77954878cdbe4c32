#pragma once
// cuBLASLt plumbing shared by the cuBLASLt GEMM engine (cublaslt_engine.cpp) and the GPU GEMM
// benchmark (bench/bench_gemm_gpu.cpp): RAII for the CUDA and cuBLASLt handles, and ONE place
// that maps shakedown's row-major D[m, n] = A[m, k] . B[n, k]^T onto cuBLASLt's column-major TN
// layout (engine.hpp explains the mapping). Only built with CUDA (SHAKEDOWN_HAVE_CUDA).
#if SHAKEDOWN_HAVE_CUDA

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fp8/fp8.hpp"
#include "gemm/engine.hpp"
#include "kernels/fp8_kernels.hpp"

namespace shakedown::cublaslt {

// Transformer Engine's workspace on sm_90;
// cudaMalloc returns 256-byte aligned memory, as cuBLASLt wants for it.
inline constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

// "" when a CUDA device is usable, else why not ("cudaGetDeviceCount failed: ...").
std::string no_gpu_reason();
// "cuBLASLt 13.1.0" (the loaded library, not the headers).
std::string library_version();
// "NVIDIA H200 (sm_90), driver 13.0".
std::string device_description(int device);

cudaDataType_t cuda_type(fp8::Format format);
cudaDataType_t cuda_type(GemmOut out);
kernels::Fp8Type kernel_type(fp8::Format format);
kernels::OutType kernel_type(GemmOut out);
std::size_t element_bytes(GemmOut out);

// Device memory (cudaMalloc; OutOfMemory when it runs out).
class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(std::size_t bytes);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A non-blocking stream on the current device.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class Handle {
 public:
  Handle();
  ~Handle();
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  cublasLtHandle_t get() const { return handle_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
};

// One GEMM in shakedown's terms (engine.hpp): D[m, n] = (A[m, k] * a_scale) . (B[n, k] *
// b_scale)^T, all row-major, fp32 compute and scale type.
struct MatmulSpec {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  cudaDataType_t a_type = CUDA_R_8F_E4M3;
  cudaDataType_t b_type = CUDA_R_8F_E4M3;
  cudaDataType_t d_type = CUDA_R_16BF;
  bool fast_accum = false;         // CUBLASLT_MATMUL_DESC_FAST_ACCUM (FP8 only)
  const float* a_scale = nullptr;  // device float: A's scale_inv (FP8 only; null = 1)
  const float* b_scale = nullptr;  // device float: B's scale_inv (FP8 only; null = 1)
  // Non-FP8 GEMMs only (the train step's bf16 attention), not the TN form Hopper's FP8 kernels
  // need: A stored as its transpose [k, m], B stored as [k, n] (D = A . B without the ^T).
  bool a_transposed = false;
  bool b_transposed = false;
  // Row strides in elements of A, B and D as stored (0: packed, the stored row length), for
  // operands that are column blocks of a wider matrix (one head of the QKV output).
  std::int64_t lda = 0;
  std::int64_t ldb = 0;
  std::int64_t ldd = 0;
  float alpha = 1.0f;  // D = alpha A . B^T + beta D
  float beta = 0.0f;
  // The pointers' alignment the algorithm may assume (0: cuBLASLt's default, 256 bytes); set it
  // for operands that start inside a larger buffer (a head's columns, a tensor's gradient).
  std::uint32_t min_alignment_bytes = 0;
};

// The matmul descriptor, the three layouts and the algorithm cuBLASLt's heuristic picked for them.
// Construction throws UsageError naming `description` when cuBLASLt has no algorithm for the
// shape and types; enqueue() runs it on a stream (asynchronous, allocates nothing).
class Matmul {
 public:
  Matmul(cublasLtHandle_t handle, const MatmulSpec& spec, std::size_t workspace_bytes,
         const std::string& description);
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  // a, b, d: device pointers of spec's shapes; workspace: at least workspace_bytes.
  void enqueue(const void* a, const void* b, void* d, void* workspace, cudaStream_t stream) const;

 private:
  struct DescDeleter {
    void operator()(cublasLtMatmulDesc_t desc) const noexcept;
  };
  struct LayoutDeleter {
    void operator()(cublasLtMatrixLayout_t layout) const noexcept;
  };
  using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;

  cublasLtHandle_t handle_;
  std::size_t workspace_bytes_;
  std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter> desc_;
  Layout lt_a_;  // cuBLASLt's A: our B, stored k x n column-major (ld k), used transposed
  Layout lt_b_;  // cuBLASLt's B: our A, stored k x m column-major (ld k)
  Layout lt_d_;  // D, and C (unused: beta = 0): n x m column-major (ld n) = row-major [m, n]
  cublasLtMatmulAlgo_t algo_{};
  float alpha_ = 1.0f;
  float beta_ = 0.0f;
};

}  // namespace shakedown::cublaslt

#endif  // SHAKEDOWN_HAVE_CUDA
