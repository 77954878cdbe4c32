#include "phases/gpu.hpp"

#if SHAKEDOWN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda_check.hpp"
#endif
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/strings.hpp"
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
  const GpuInfo& chosen = devices.gpus[static_cast<std::size_t>(index)];
  return {chosen.index, "", chosen.pci_bus_id};
#else
  (void)ctx;
  return {-1, "this shakedown was built without CUDA", ""};
#endif
}

namespace {

// "" when no other rank of this rank's host drives the same GPU; else which ranks share it.
// Decided from the GPUs' PCI bus ids, not from counts: with one GPU visible to each rank
// (CUDA_VISIBLE_DEVICES per rank, srun --gpus-per-task=1) every rank sees one GPU, and
// they are all different. Collective over the world.
std::string shared_gpu(const Context& ctx, const GpuChoice& gpu) {
  std::string mine;
  if (gpu.device >= 0) {
    mine = std::to_string(ctx.layout().host_of_rank[static_cast<std::size_t>(ctx.rank())]) + "/" +
           (gpu.bus_id.empty() ? "cuda:" + std::to_string(gpu.device) : gpu.bus_id);
  }
  const std::vector<std::string> all = allgather_strings(ctx.world(), mine);
  if (mine.empty()) return "";
  std::vector<std::string> with;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r] == mine) with.push_back(std::to_string(r));
  }
  if (with.size() < 2) return "";
  return "ranks " + join(with, ",") + " share GPU " + (gpu.bus_id.empty() ? "?" : gpu.bus_id);
}

}  // namespace

bool choose_gpu_path(const Context& ctx, const GpuChoice& gpu, const std::string& key,
                     const std::string& setting, const std::string& gpu_value,
                     const std::string& cpu_value, bool exclusive, bool say) {
  const std::string shared = exclusive ? shared_gpu(ctx, gpu) : "";
  if (setting == gpu_value) {
    agreed(ctx.world(), [&] {
      if (gpu.device < 0) {
        throw UsageError(key + ": " + gpu_value + " needs a GPU on every rank, and " +
                         ctx.describe_rank(ctx.rank()) + " has none (" + gpu.why_not + "); use " +
                         cpu_value + " or auto");
      }
      if (!shared.empty()) {
        throw UsageError(key + ": " + gpu_value + " needs one GPU per rank, and on " +
                         ctx.describe_rank(ctx.rank()) + "'s host " + shared +
                         "; start one rank per GPU or use " + cpu_value + " or auto");
      }
    });
    return true;
  }
  if (setting != "auto") return false;
  // Every rank has a GPU; and, when the path needs one per rank, none is shared.
  int every[2] = {gpu.device >= 0 ? 1 : 0, shared.empty() ? 1 : 0};
  SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, every, 2, MPI_INT, MPI_MIN, ctx.world()));
  if (say && every[0] != 0 && every[1] == 0 && ctx.is_root()) {
    std::fprintf(stderr,
                 "shakedown: %s: auto uses %s, not %s: some GPU serves several ranks of its "
                 "host (%s needs one GPU per rank)\n",
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
