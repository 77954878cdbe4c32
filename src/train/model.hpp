#pragma once
// The synthetic model: its shape (a preset or the config's own), parameter count, FLOPs per step,
// the per-TP-rank Linear shapes of one layer, and the rules a tensor/data-parallel layout must
// follow. Pure arithmetic: no MPI, no GPU (`shakedown plan` uses it too).
//
// Layer (pre-norm transformer, as Megatron / Transformer Engine build it):
//   QKV   column-parallel  [T, h] x [(h + 2 g d) / t, h]^T        (g kv heads, d = h / heads)
//   proj  row-parallel     [T, h / t] x [h, h / t]^T, partial sums reduced over the TP group
//   FC1   column-parallel  [T, h] x [f / t, h]^T                   (swiglu: 2 f / t)
//   FC2   row-parallel     [T, f / t] x [h, f / t]^T, partial sums reduced
// plus core attention (scores Q K^T and context P V, heads / t per rank) and, once per model, the
// logit layer [T, h] x [V, h]^T.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace shakedown::train {

enum class Mlp : std::uint8_t { kGelu, kSwiglu };

struct ModelShape {
  std::string name = "custom";  // preset name, or "custom"
  int layers = 2;
  std::int64_t hidden = 1024;
  std::int64_t ffn_hidden = 4096;
  int heads = 16;
  int kv_heads = 16;
  std::int64_t vocab = 32000;
  Mlp mlp = Mlp::kGelu;
  // What the parameter count needs beyond the GEMMs (GPT-3 style vs Llama style).
  bool biases = false;           // every Linear has a bias
  bool layer_norm = false;       // LayerNorm (weight + bias) instead of RMSNorm (weight)
  bool tied_embeddings = false;  // the logit layer reuses the input embedding
  std::int64_t positions = 0;    // learned position embeddings (0: rotary, none stored)
  int preset_layers = 0;         // the preset's own layer count (0 for custom)
  std::int64_t context = 0;      // the preset's trained sequence length (0 for custom)

  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t kv_width() const { return static_cast<std::int64_t>(kv_heads) * head_dim(); }
  std::int64_t qkv_width() const { return hidden + 2 * kv_width(); }
  // FC1's output width: the gate and the up projection side by side for SwiGLU.
  std::int64_t fc1_width() const { return mlp == Mlp::kSwiglu ? 2 * ffn_hidden : ffn_hidden; }
};

// The preset names, in the order `--model` lists them ("custom" first).
const std::vector<std::string>& model_names();
// The sequence length preset `name` was trained with (Llama 2: 4096, GPT-3: 2048); 0 for
// "custom" or an unknown name.
std::int64_t preset_context(const std::string& name);

// The shape a train config asks for: a preset's (layers cut to train.layers when that is set and
// smaller) or the config's own. UsageError naming the key when the shape is impossible (hidden
// not divisible by heads, heads not by kv_heads, a cut that adds layers).
ModelShape model_shape(const TrainConfig& train);

// Every parameter: Linear weights (and biases), norms, embeddings (twice unless tied), learned
// positions, the final norm. Llama-2-7B 6,738,415,616; Llama-2-70B 68,976,648,192.
std::uint64_t parameter_count(const ModelShape& shape);
// Parameters of one layer, and of the embedding/logit/final-norm part outside the layers.
std::uint64_t layer_parameter_count(const ModelShape& shape);
std::uint64_t outside_layer_parameter_count(const ModelShape& shape);

// How core attention's s^2 FLOPs are counted. kFull: Narayanan et al. 2021 (arXiv 2104.04473),
// full s x s scores, so GPT-3 175B at B = 1, s = 2048 is 72 B s l h^2 (1 + s/6h + V/12lh) =
// 2.2044e15. kCausal: halved for the causal mask, as Megatron-LM's current transformer_flops.
enum class AttentionCount : std::uint8_t { kFull, kCausal };

struct StepFlops {
  double gemm_forward = 0;       // Linear GEMMs of all layers, forward: 2 T x (weights)
  double attention_forward = 0;  // scores + context, all layers
  double logits_forward = 0;     // 2 T h V
  double total = 0;              // forward x 3 (fwd, dgrad, wgrad), + 1 forward under recompute
};

// FLOPs of one training step of `sequences` sequences of `seq_len` tokens over the whole model
// (divide by tp for a TP rank's share). full_recompute adds one more forward of the layers.
StepFlops step_flops(const ModelShape& shape, std::int64_t sequences, std::int64_t seq_len,
                     bool full_recompute, AttentionCount count);

// One Linear of a layer as a TP rank holds it: y [tokens, n] = x [tokens, k] W^T, W [n, k].
struct LinearShape {
  std::string name;  // qkv | proj | fc1 | fc2
  std::int64_t n = 0;
  std::int64_t k = 0;
  bool column = true;  // column-parallel (output split) or row-parallel (input split)
};
std::vector<LinearShape> layer_linears(const ModelShape& shape, int tp);

// The layout of one run, checked against the model and the world.
struct Parallel {
  int tp = 1;
  int dp = 1;
  bool sequence_parallel = false;
  int zero = 0;
};

struct LayoutFacts {
  int world = 1;
  int ranks_per_node = 1;  // 0 when nodes differ in size
  bool gpu = false;        // cuBLASLt FP8: every GEMM dimension a multiple of 16
  bool node_known = true;  // false (a plan without --ranks-per-node): no ranks-per-node rule
};

// tp divides heads, kv_heads and the ranks per node; dp x tp = world (dp 0: world / tp); with
// sequence parallelism tp divides the tokens; on a GPU every per-rank GEMM dimension (tokens,
// hidden / tp, qkv / tp, fc1 / tp, ffn / tp) is a multiple of 16. UsageError (exit 2) naming the
// rule, the keys and the nearest valid values otherwise.
Parallel check_parallel(const ModelShape& shape, const TrainConfig& train,
                        const LayoutFacts& layout);

// Divisors of n nearest below and above `wanted` ("2 or 4"), for the messages above.
std::string nearest_divisors(std::int64_t n, std::int64_t wanted);

}  // namespace shakedown::train
