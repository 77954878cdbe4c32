#include "phases/gpu.hpp"

#if SHAKEDOWN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda_check.hpp"
#endif
#include <cstdio>

#include "core/error.hpp"
#include "runtime/agree.hpp"
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

bool choose_gpu_path(const Context& ctx, const GpuChoice& gpu, const std::string& key,
                     const std::string& setting, const std::string& gpu_value,
                     const std::string& cpu_value, bool exclusive, bool say) {
  if (setting == gpu_value) {
    agreed(ctx.world(), [&] {
      if (gpu.device < 0) {
        throw UsageError(key + ": " + gpu_value + " needs a GPU on every rank, and " +
                         ctx.describe_rank(ctx.rank()) + " has none (" + gpu.why_not + "); use " +
                         cpu_value + " or auto");
      }
      if (exclusive && !gpu.shared.empty()) {
        throw UsageError(key + ": " + gpu_value + " needs one GPU per rank, and on " +
                         ctx.describe_rank(ctx.rank()) + "'s host " + gpu.shared +
                         "; start one rank per GPU or use " + cpu_value + " or auto");
      }
    });
    return true;
  }
  if (setting != "auto") return false;
  // Every rank has a GPU; and, when the path needs one per rank, none is shared.
  int every[2] = {gpu.device >= 0 ? 1 : 0, !exclusive || gpu.shared.empty() ? 1 : 0};
  SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, every, 2, MPI_INT, MPI_MIN, ctx.world()));
  if (say && every[0] != 0 && every[1] == 0 && ctx.is_root()) {
    std::fprintf(stderr,
                 "shakedown: %s: auto uses %s, not %s: some host runs more ranks than it has "
                 "GPUs (%s needs one GPU per rank)\n",
                 key.c_str(), cpu_value.c_str(), gpu_value.c_str(), gpu_value.c_str());
  }
  return every[0] != 0 && every[1] != 0;
}

void use_gpu(int device) {
#if SHAKEDOWN_HAVE_CUDA
  if (device >= 0) SD_CUDA_CHECK(cudaSetDevice(device));
#else
  (void)device;
#endif
}

}  // namespace shakedown
