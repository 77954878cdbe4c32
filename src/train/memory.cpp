#include "train/memory.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "config/platforms.hpp"
#include "core/error.hpp"

namespace shakedown::train {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;
// TE's cuBLASLt workspace on Hopper (get_cublas_workspace_size_bytes: 32 MiB from SM 9.0).
constexpr double kGemmWorkspace = 32 * kMiB;
// The CUDA context, cuBLAS/NCCL kernels and their module images: about half a GiB on Hopper
// with CUDA 12-13 (what a process holds before its first allocation). A typical figure.
constexpr double kCudaContext = 0.5 * kGiB;
// NCCL keeps NCCL_BUFFSIZE (4 MiB) per channel and direction for each ring peer; 16 channels is
// the order of what it opens on an 8-GPU NVSwitch node. An estimate per communicator.
constexpr double kNcclPerCommunicator = 16 * 2 * 2 * 4 * kMiB;
// The caching allocator's fragmentation: a margin on everything allocated.
constexpr double kFragmentation = 0.10;

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / kGiB);
  return buf;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

void finish(MemoryBudget& b, double device_bytes, const std::string& device) {
  double allocated = 0;
  for (const MemoryItem& item : b.items) allocated += item.bytes;
  b.items.push_back(
      {"fragmentation margin", kFragmentation * allocated, "10% of the above (caching allocator)"});
  b.total_bytes = allocated * (1 + kFragmentation);
  b.device_bytes = device_bytes;
  b.device = device;
  b.fits = device_bytes > 0 && b.total_bytes <= device_bytes;
  b.headroom_bytes = device_bytes > 0 ? device_bytes - b.total_bytes : 0;
}

// The largest n in [1, limit] whose budget fits the device (0 if none): every budget grows with
// n (micro-batch, concurrency), so a doubling then a bisection finds it.
template <class BudgetFor>
std::int64_t last_fitting(BudgetFor budget_for, double device_bytes, std::int64_t limit) {
  auto fits = [&](std::int64_t n) {
    MemoryBudget t = budget_for(n);
    finish(t, device_bytes, "");
    return t.fits;
  };
  std::int64_t lo = 0, hi = 1;
  while (hi <= limit && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  hi = std::min(hi, limit + 1);
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

// What every GPU process holds whatever the workload.
void push_fixed_items(MemoryBudget& b) {
  b.items.push_back({"GEMM workspace", kGemmWorkspace, "cuBLASLt, 32 MiB"});
  b.items.push_back({"CUDA context and kernels", kCudaContext, "typical, 0.5 GiB"});
}
}  // namespace

Recompute parse_recompute(const std::string& text) {
  if (text == "none") return Recompute::kNone;
  if (text == "selective") return Recompute::kSelective;
  if (text == "full") return Recompute::kFull;
  throw UsageError("--recompute: unknown value '" + text + "'; one of none, selective, full");
}

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

RankParameters rank_parameters(const ModelShape& s, int tp) {
  const auto t = static_cast<std::uint64_t>(tp);
  const auto h = static_cast<std::uint64_t>(s.hidden);
  const auto L = static_cast<std::uint64_t>(s.layers);
  RankParameters r;
  for (const LinearShape& l : layer_linears(s, tp)) {
    r.linear += L * static_cast<std::uint64_t>(l.n * l.k);
    if (s.biases) r.other += L * static_cast<std::uint64_t>(l.n);  // row-parallel: n = h, whole
  }
  r.other += L * (s.layer_norm ? 4 : 2) * h;
  const auto v = static_cast<std::uint64_t>(s.vocab);
  r.other += (v + t - 1) / t * h * (s.tied_embeddings ? 1 : 2);
  r.other += static_cast<std::uint64_t>(s.positions) * h + (s.layer_norm ? 2 : 1) * h;
  return r;
}

double layer_activation_bytes(const ModelShape& s, const Parallel& p, std::int64_t micro_batch,
                              std::int64_t seq_len, Recompute recompute) {
  const double sbh = static_cast<double>(seq_len) * static_cast<double>(micro_batch) *
                     static_cast<double>(s.hidden);
  const double t = p.tp;
  const double mlp = (s.mlp == Mlp::kSwiglu ? 6.0 : 4.0) * static_cast<double>(s.ffn_hidden) /
                     static_cast<double>(s.hidden);
  const double scores =
      5.0 * s.heads * static_cast<double>(seq_len) / static_cast<double>(s.hidden);
  if (recompute == Recompute::kFull) return p.sequence_parallel ? 2 * sbh / t : 2 * sbh;
  const double kept_scores = recompute == Recompute::kNone ? scores : 0.0;
  if (p.sequence_parallel) return sbh / t * (18 + mlp + kept_scores);
  return sbh * (10 + (8 + mlp) / t + kept_scores / t);
}

MemoryBudget training_budget(const TrainingRequest& q, double device_bytes) {
  auto budget_for = [&](std::int64_t micro_batch) {
    MemoryBudget b;
    const RankParameters r = rank_parameters(q.shape, q.parallel.tp);
    const double params = static_cast<double>(r.total());
    const double shard = q.parallel.zero == 1 ? q.parallel.dp : 1;
    const std::string per = q.parallel.zero == 1 ? "/ dp = " + std::to_string(q.parallel.dp) : "";
    b.items.push_back({"weights bf16", 2 * params, "2 B x " + num(params) + " parameters"});
    b.items.push_back({"FP8 weights + transposed copies", 2 * static_cast<double>(r.linear),
                       "1 + 1 B x " + num(static_cast<double>(r.linear)) +
                           " Linear weights (Hopper FP8 GEMMs are TN only)"});
    b.items.push_back({"gradients fp32", 4 * params, "4 B x parameters (main_grad)"});
    b.items.push_back({"master weights fp32", 4 * params / shard, "4 B x parameters " + per});
    b.items.push_back({"Adam moments fp32", 8 * params / shard, "8 B x parameters " + per});
    const double per_layer =
        layer_activation_bytes(q.shape, q.parallel, micro_batch, q.seq_len, q.recompute);
    double activations = per_layer * q.shape.layers;
    std::string basis = num(per_layer / kMiB) + " MiB/layer x " + std::to_string(q.shape.layers) +
                        " (recompute " + recompute_name(q.recompute) + ")";
    if (q.recompute == Recompute::kFull) {
      const double working = layer_activation_bytes(q.shape, q.parallel, micro_batch, q.seq_len,
                                                    Recompute::kSelective);
      activations += working;
      basis += " + one layer recomputed";
    }
    // The loss works on fp32 logits of this rank's vocabulary slice.
    const double logits = 4.0 * static_cast<double>(q.seq_len) * static_cast<double>(micro_batch) *
                          std::ceil(static_cast<double>(q.shape.vocab) / q.parallel.tp);
    b.items.push_back({"activations", activations, basis});
    b.items.push_back({"logits fp32", logits, "4 B x tokens x vocab / tp"});
    const int communicators = (q.parallel.tp > 1 ? 1 : 0) + (q.parallel.dp > 1 ? 1 : 0);
    b.items.push_back({"communication buffers", communicators * kNcclPerCommunicator,
                       std::to_string(communicators) +
                           (communicators == 1 ? " NCCL communicator" : " NCCL communicators") +
                           " x 16 channels x 2 peers x 2 directions x 4 MiB"});
    push_fixed_items(b);
    return b;
  };
  MemoryBudget b = budget_for(q.micro_batch);
  finish(b, device_bytes, "");
  if (device_bytes > 0) b.largest_fitting = last_fitting(budget_for, device_bytes, 65536);
  return b;
}

MemoryBudget inference_budget(const InferenceRequest& q, double device_bytes) {
  auto budget_for = [&](std::int64_t concurrency) {
    MemoryBudget b;
    b.inference = true;
    const RankParameters r = rank_parameters(q.shape, q.tp);
    const double params = static_cast<double>(r.total());
    b.items.push_back({"weights", q.weight_bytes * params,
                       num(q.weight_bytes) + " B x " + num(params) + " parameters"});
    // K and V per layer, per kv head this rank holds, per token of context, per sequence; bf16.
    const double kv = 2.0 * q.shape.layers * (static_cast<double>(q.shape.kv_heads) / q.tp) *
                      static_cast<double>(q.shape.head_dim()) * static_cast<double>(q.context) *
                      static_cast<double>(concurrency) * 2.0;
    b.items.push_back({"KV cache bf16", kv,
                       "2 x layers x kv_heads / tp x head_dim x context x concurrency x 2 B"});
    // One layer's forward working set for a decode step of every sequence, and the logits.
    const double work =
        static_cast<double>(concurrency) * (4.0 * static_cast<double>(q.shape.fc1_width()) / q.tp +
                                            4.0 * static_cast<double>(q.shape.vocab) / q.tp);
    b.items.push_back(
        {"activations (decode step)", work, "fp32 FC1 output and logits per sequence"});
    b.items.push_back({"communication buffers", q.tp > 1 ? kNcclPerCommunicator : 0.0,
                       q.tp > 1 ? "1 NCCL communicator (TP)" : "none (tp = 1)"});
    push_fixed_items(b);
    return b;
  };
  MemoryBudget b = budget_for(q.concurrency);
  finish(b, device_bytes, "");
  if (device_bytes > 0) b.largest_fitting = last_fitting(budget_for, device_bytes, 1 << 30);
  return b;
}

DeviceMemory parse_device_memory(const std::string& text) {
  if (const std::optional<Platform> p = find_platform(text); p && p->gpu_memory_GiB > 0) {
    return {text, p->gpu_memory_GiB * kGiB};
  }
  double gib_value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), gib_value);
  if (ec == std::errc() && end == text.data() + text.size() && gib_value > 0 &&
      std::isfinite(gib_value)) {
    return {gib(gib_value * kGiB), gib_value * kGiB};
  }
  std::string names;
  for (const Platform& p : builtin_platforms()) {
    if (p.gpu_memory_GiB > 0) names += (names.empty() ? "" : ", ") + p.name;
  }
  throw UsageError("--gpu: '" + text + "' is neither a GPU (" + names +
                   ") nor a memory size in GiB (e.g. 80)");
}

CheckpointShard checkpoint_shard(const ModelShape& shape, const Parallel& parallel, int dp_rank) {
  const std::uint64_t n = rank_parameters(shape, parallel.tp).total();
  CheckpointShard out;
  if (dp_rank == 0) out.model_bytes = 2 * n;
  const std::uint64_t dp = static_cast<std::uint64_t>(std::max(1, parallel.dp));
  out.optimizer_bytes = parallel.zero > 0 ? 12 * ((n + dp - 1) / dp) : 12 * n;
  return out;
}

std::uint64_t checkpoint_bytes(const ModelShape& shape, const Parallel& parallel) {
  std::uint64_t total = 0;
  for (int d = 0; d < std::max(1, parallel.dp); ++d) {
    total += checkpoint_shard(shape, parallel, d).total() * static_cast<std::uint64_t>(parallel.tp);
  }
  return total;
}

}  // namespace shakedown::train
