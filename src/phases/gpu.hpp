#pragma once
// Which GPU this rank uses, shared by the phases that run on GPUs (collectives, gemm).
#include <string>

#include "runtime/context.hpp"

namespace shakedown {

// This rank's GPU (a CUDA device index), or why there is none.
struct GpuChoice {
  int device = -1;
  std::string why_not;
  std::string bus_id;  // the chosen GPU's PCI bus id: the same GPU whatever a rank's CUDA index
};

// As discovery does: the rank's slot among the ranks of its host picks the GPU (PCI bus order).
GpuChoice choose_gpu(const Context& ctx);

// A phase's choice between its GPU path and its CPU path, the same on every rank (collective).
// `setting` is the config value of `key`: "auto" takes the GPU path when every rank has a GPU
// (and, when `exclusive`, no GPU serves two ranks: NCCL); `gpu_value` forces it, and a rank that
// cannot follow is a usage error naming the key; anything else is the CPU path.
// `say`: rank 0 says why auto took the CPU path where GPUs are shared (once per run: the phase
// says it, not the check before the run).
bool choose_gpu_path(const Context& ctx, const GpuChoice& gpu, const std::string& key,
                     const std::string& setting, const std::string& gpu_value,
                     const std::string& cpu_value, bool exclusive, bool say = true);

// Makes `device` the calling thread's current CUDA device (no-op without CUDA).
void use_gpu(int device);

}  // namespace shakedown
