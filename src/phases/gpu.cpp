#include "phases/gpu.hpp"

#if SHAKEDOWN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda_check.hpp"
#endif
#include "runtime/mpi.hpp"
#include "topology/discovery.hpp"

namespace shakedown {

GpuChoice choose_gpu(const Context& ctx) {
#if SHAKEDOWN_HAVE_CUDA
  CudaDevices devices = cuda_devices();
  if (devices.gpus.empty()) return {-1, devices.note, ""};
  const int gpus = static_cast<int>(devices.gpus.size());
  const int index = ctx.host_local_rank() % gpus;
  std::string shared;
  if (ctx.host_local_size() > gpus) {
    shared = std::to_string(ctx.host_local_size()) + " ranks share " + std::to_string(gpus) +
             " GPU(s) on this host";
  }
  return {devices.gpus[static_cast<std::size_t>(index)].index, "", shared};
#else
  (void)ctx;
  return {-1, "this shakedown was built without CUDA", ""};
#endif
}

bool every_rank_has_gpu(const Context& ctx, const GpuChoice& gpu) {
  int all_have = gpu.device >= 0 ? 1 : 0;
  SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &all_have, 1, MPI_INT, MPI_MIN, ctx.world()));
  return all_have != 0;
}

void use_gpu(int device) {
#if SHAKEDOWN_HAVE_CUDA
  if (device >= 0) SD_CUDA_CHECK(cudaSetDevice(device));
#else
  (void)device;
#endif
}

}  // namespace shakedown
