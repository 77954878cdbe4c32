#pragma once
// Device-memory budget of one GPU (one rank) for training or inference: what `shakedown plan
// --model` prints and what the train phase stores in its run file. Pure arithmetic; the
// conventions are in docs/architecture.md "Memory budget" and next to each item.
#include <cstdint>
#include <string>
#include <vector>

#include "train/model.hpp"

namespace shakedown::train {

enum class Recompute : std::uint8_t { kNone, kSelective, kFull };
Recompute parse_recompute(const std::string& text);  // none | selective | full; UsageError
const char* recompute_name(Recompute r);

// Parameters one tensor-parallel rank holds. Linear weights (the FP8 GEMM operands) and the
// column-parallel biases are split over tp, row-parallel biases and norms are replicated, the
// embedding and logit layer are vocabulary-parallel (split over tp).
struct RankParameters {
  std::uint64_t linear = 0;  // Linear weights: FP8 copies exist for these
  std::uint64_t other = 0;   // biases, norms, embeddings, positions
  std::uint64_t total() const { return linear + other; }
};
RankParameters rank_parameters(const ModelShape& shape, int tp);

// Activation bytes one rank keeps for the backward pass of one layer (Korthikanti et al. 2022,
// arXiv 2205.05198, Table 2, 16-bit activations), with the MLP term generalised as Megatron's
// estimator does: 34 = 18 + 4 f / h at f = 4h (SwiGLU stores 6 f / h: FC1's doubled output and
// the gated product). kNone keeps the attention scores (5 a s / h); kSelective recomputes them
// (what fused / flash attention also gives); kFull keeps the layer input only (2 s b h).
double layer_activation_bytes(const ModelShape& shape, const Parallel& p, std::int64_t micro_batch,
                              std::int64_t seq_len, Recompute recompute);

struct MemoryItem {
  std::string name;
  double bytes = 0;
  std::string basis;  // how it was counted, for the table and the JSON
};

struct MemoryBudget {
  bool inference = false;
  std::vector<MemoryItem> items;  // the last is the fragmentation margin
  double total_bytes = 0;
  double device_bytes = 0;  // 0: no device given
  std::string device;       // h200-sxm, or "<N> GiB"
  bool fits = false;        // total <= device (false when no device is given)
  double headroom_bytes = 0;
  // The largest micro-batch (training) or concurrency (inference) that fits; 0 if none does or no
  // device is given.
  std::int64_t largest_fitting = 0;
};

struct TrainingRequest {
  ModelShape shape;
  Parallel parallel;
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 2048;
  Recompute recompute = Recompute::kSelective;
  double bucket_mb = 25;
};
MemoryBudget training_budget(const TrainingRequest& request, double device_bytes);

struct InferenceRequest {
  ModelShape shape;
  int tp = 1;
  std::int64_t context = 4096;   // tokens of KV cache per sequence
  std::int64_t concurrency = 1;  // sequences served at once
  double weight_bytes = 2;       // per parameter: 2 bf16, 1 FP8
};
MemoryBudget inference_budget(const InferenceRequest& request, double device_bytes);

// A GPU's memory as nvidia-smi reports it (h100-sxm, h100-nvl, h200-sxm) or a number of GiB
// ("80", "141.5"). UsageError naming both forms otherwise.
struct DeviceMemory {
  std::string name;
  double bytes = 0;
};
DeviceMemory parse_device_memory(const std::string& text);

// One rank's share of a training checkpoint, as DLIO sizes it (checkpoint.from_train): model state
// in bf16 (2 B per parameter of the rank's TP slice), written by DP rank 0 only (the replicas
// hold the same weights); optimizer state in fp32, master weights and Adam's two moments (12 B
// per parameter), written by every rank: its TP slice's in full with zero 0, a 1/dp shard of it
// with zero 1.
struct CheckpointShard {
  std::uint64_t model_bytes = 0, optimizer_bytes = 0;
  std::uint64_t total() const { return model_bytes + optimizer_bytes; }
};
CheckpointShard checkpoint_shard(const ModelShape& shape, const Parallel& parallel, int dp_rank);
// The whole checkpoint over tp x dp ranks.
std::uint64_t checkpoint_bytes(const ModelShape& shape, const Parallel& parallel);

}  // namespace shakedown::train
