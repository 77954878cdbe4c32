// check_phases (phases/phase.hpp): the phases' own start-up checks, run before the run file
// exists.
#include <algorithm>

#include "config/config.hpp"
#include "phases/gpu.hpp"
#include "phases/phase.hpp"
#include "runtime/agree.hpp"
#include "train/model.hpp"

namespace shakedown {

void check_phases(const Context& ctx, const Config& config, const FaultPlan& faults) {
  const auto asked = [&](const char* phase) {
    return std::find(config.phases.begin(), config.phases.end(), phase) != config.phases.end();
  };
  const GpuChoice gpu = choose_gpu(ctx);
  // A forced GPU path fails on a rank without a GPU; auto chooses, and fails nothing.
  const auto forced = [&](bool phase_asked, const char* key, const std::string& setting,
                          const char* gpu_value, const char* cpu_value, bool exclusive) {
    if (phase_asked && setting == gpu_value) {
      (void)choose_gpu_path(ctx, gpu, key, setting, gpu_value, cpu_value, exclusive);
    }
  };
  forced(asked("devices"), "devices.path", config.devices.path, "cuda", "cpu", true);
  forced(asked("collectives"), "collectives.backend", config.collectives.backend, "nccl", "mpi",
         true);
  forced(asked("gemm"), "gemm.engine", config.gemm.engine, "cublaslt", "cpu", false);
  if (asked("train")) {
    const TrainConfig& cfg = config.train;
    const bool on_gpu = choose_gpu_path(ctx, gpu, "train.engine", cfg.engine, "cublaslt", "cpu",
                                        /*exclusive=*/true, /*say=*/false);
    const train::ModelShape shape = agreed(ctx.world(), [&] { return train::model_shape(cfg); });
    agreed(ctx.world(), [&] {
      (void)train::check_parallel(
          shape, cfg,
          train::LayoutFacts{ctx.world_size(), ctx.ranks_per_node(), on_gpu, /*known=*/true});
    });
    refuse_unreachable_steps(ctx, faults, "train", cfg.steps, "one per measured training step");
  }
  if (asked("checkpoint")) {
    refuse_unreachable_steps(ctx, faults, "checkpoint", config.checkpoint.iters,
                             "one per checkpoint iteration");
  }
}

}  // namespace shakedown
