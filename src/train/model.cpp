#include "train/model.hpp"

#include <numeric>

#include "core/error.hpp"

namespace shakedown::train {
namespace {

ModelShape llama(std::string name, int layers, std::int64_t hidden, int heads, int kv_heads,
                 std::int64_t ffn) {
  ModelShape s;
  s.name = std::move(name);
  s.layers = s.preset_layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.ffn_hidden = ffn;
  s.vocab = 32000;
  s.mlp = Mlp::kSwiglu;
  s.context = 4096;
  return s;  // RMSNorm, no biases, untied embeddings, rotary positions
}

ModelShape gpt3_175b() {
  ModelShape s;
  s.name = "gpt3-175b";
  s.layers = s.preset_layers = 96;
  s.hidden = 12288;
  s.heads = s.kv_heads = 96;
  s.ffn_hidden = 4 * 12288;
  s.vocab = 50257;  // GPT-2's BPE vocabulary
  s.mlp = Mlp::kGelu;
  s.biases = true;
  s.layer_norm = true;
  s.tied_embeddings = true;
  s.positions = 2048;
  s.context = 2048;
  return s;
}

// Shapes from the models' published configurations (Touvron et al. 2023; Brown et al. 2020).
std::vector<ModelShape> presets() {
  return {llama("llama2-7b", 32, 4096, 32, 32, 11008), llama("llama2-70b", 80, 8192, 64, 8, 28672),
          gpt3_175b()};
}

std::string text(std::int64_t v) {
  return std::to_string(v);
}

// Nearest multiple of `step` to v that is at least step.
std::int64_t nearest_multiple(std::int64_t v, std::int64_t step) {
  const std::int64_t down = v / step * step;
  const std::int64_t up = down + step;
  if (down < step) return up;
  return v - down <= up - v ? down : up;
}

}  // namespace

std::int64_t preset_context(const std::string& name) {
  for (const ModelShape& shape : presets()) {
    if (shape.name == name) return shape.context;
  }
  return 0;
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> kNames = {"custom", "llama2-7b", "llama2-70b", "gpt3-175b"};
  return kNames;
}

ModelShape model_shape(const TrainConfig& train) {
  if (train.model != "custom") {
    for (ModelShape shape : presets()) {
      if (shape.name != train.model) continue;
      if (train.layers > shape.preset_layers) {
        throw UsageError("train.layers = " + text(train.layers) + " is more than " + train.model +
                         "'s " + text(shape.preset_layers) +
                         " layers; layers can only cut a preset (0: all of them)");
      }
      if (train.layers > 0) shape.layers = train.layers;
      return shape;
    }
    std::string names;
    for (const std::string& n : model_names()) names += (names.empty() ? "" : ", ") + n;
    throw UsageError("train.model: unknown model '" + train.model + "'; one of " + names);
  }
  ModelShape s;
  s.layers = train.layers > 0 ? train.layers : 2;
  s.hidden = train.hidden;
  s.heads = train.heads;
  s.kv_heads = train.kv_heads > 0 ? train.kv_heads : train.heads;
  s.vocab = train.vocab;
  s.mlp = train.mlp == "swiglu" ? Mlp::kSwiglu : Mlp::kGelu;
  if (train.ffn_hidden > 0) {
    s.ffn_hidden = train.ffn_hidden;
  } else if (s.mlp == Mlp::kSwiglu) {
    // Llama's rule (multiple_of 256, multiplier 1): 256 * ceil(floor(8h/3) / 256).
    s.ffn_hidden = (8 * s.hidden / 3 + 255) / 256 * 256;
  } else {
    s.ffn_hidden = 4 * s.hidden;
  }
  if (s.hidden % s.heads != 0) {
    throw UsageError("train.hidden = " + text(s.hidden) + " is not divisible by train.heads = " +
                     text(s.heads) + "; every attention head needs the same width");
  }
  if (s.heads % s.kv_heads != 0) {
    throw UsageError("train.heads = " + text(s.heads) + " is not divisible by train.kv_heads = " +
                     text(s.kv_heads) + "; use one of " + nearest_divisors(s.heads, s.kv_heads));
  }
  return s;
}

std::uint64_t layer_parameter_count(const ModelShape& s) {
  const auto h = static_cast<std::uint64_t>(s.hidden);
  const auto f = static_cast<std::uint64_t>(s.ffn_hidden);
  const auto qkv = static_cast<std::uint64_t>(s.qkv_width());
  const auto fc1 = static_cast<std::uint64_t>(s.fc1_width());
  std::uint64_t n = h * qkv + h * h + h * fc1 + f * h;
  if (s.biases) n += qkv + h + fc1 + h;
  n += (s.layer_norm ? 2 : 1) * 2 * h;  // two norms per layer
  return n;
}

std::uint64_t outside_layer_parameter_count(const ModelShape& s) {
  const auto h = static_cast<std::uint64_t>(s.hidden);
  const auto v = static_cast<std::uint64_t>(s.vocab);
  std::uint64_t n = v * h;             // input embedding
  if (!s.tied_embeddings) n += v * h;  // logit layer
  n += static_cast<std::uint64_t>(s.positions) * h;
  n += (s.layer_norm ? 2 : 1) * h;  // final norm
  return n;
}

std::uint64_t parameter_count(const ModelShape& s) {
  return static_cast<std::uint64_t>(s.layers) * layer_parameter_count(s) +
         outside_layer_parameter_count(s);
}

StepFlops step_flops(const ModelShape& s, std::int64_t sequences, std::int64_t seq_len,
                     bool full_recompute, AttentionCount count) {
  const double tokens = static_cast<double>(sequences) * static_cast<double>(seq_len);
  const double h = static_cast<double>(s.hidden);
  const double layers = s.layers;
  StepFlops f;
  const double weights = h * static_cast<double>(s.qkv_width()) + h * h +
                         h * static_cast<double>(s.fc1_width()) +
                         static_cast<double>(s.ffn_hidden) * h;
  f.gemm_forward = 2.0 * tokens * weights * layers;
  // Q K^T and P V: each 2 s^2 d per head and sequence, d x heads = h.
  const double attention = 4.0 * tokens * static_cast<double>(seq_len) * h * layers;
  f.attention_forward = count == AttentionCount::kCausal ? attention / 2 : attention;
  f.logits_forward = 2.0 * tokens * h * static_cast<double>(s.vocab);
  const double layer_forward = f.gemm_forward + f.attention_forward;
  f.total = 3.0 * (layer_forward + f.logits_forward) + (full_recompute ? layer_forward : 0.0);
  return f;
}

std::vector<LinearShape> layer_linears(const ModelShape& s, int tp) {
  return {{"qkv", s.qkv_width() / tp, s.hidden, true},
          {"proj", s.hidden, s.hidden / tp, false},
          {"fc1", s.fc1_width() / tp, s.hidden, true},
          {"fc2", s.hidden, s.ffn_hidden / tp, false}};
}

std::string nearest_divisors(std::int64_t n, std::int64_t wanted) {
  std::int64_t below = 1;
  std::int64_t above = n;
  for (std::int64_t d = 1; d <= n; ++d) {
    if (n % d != 0) continue;
    if (d <= wanted) below = d;
    if (d >= wanted) {
      above = d;
      break;
    }
  }
  if (below == above) return text(below);
  return text(below) + " or " + text(above);
}

Parallel check_parallel(const ModelShape& s, const TrainConfig& train, const LayoutFacts& layout) {
  Parallel p;
  p.tp = train.tp;
  p.sequence_parallel = train.sequence_parallel;
  p.zero = train.zero;
  const std::int64_t tp = p.tp;
  // The TP group lives inside a node (tensor-parallel traffic needs NVLink).
  if (tp > 1 && layout.node_known && layout.ranks_per_node == 0) {
    throw UsageError("train.tp = " + text(tp) +
                     ": the nodes of this run hold different numbers of ranks, so a "
                     "tensor-parallel group cannot stay inside a node; launch the same number "
                     "of ranks on every node, or use tp: 1");
  }
  const std::int64_t heads_common = std::gcd<std::int64_t>(s.heads, s.kv_heads);
  const std::int64_t rpn = layout.ranks_per_node > 0 ? layout.ranks_per_node : 1;
  const std::int64_t common = layout.node_known ? std::gcd(heads_common, rpn) : heads_common;
  auto bad_tp = [&](const std::string& what, std::int64_t n) {
    throw UsageError("train.tp = " + text(tp) + " does not divide " + what + " = " + text(n) +
                     "; tp must divide the heads, the kv heads and the ranks per node (nearest "
                     "valid tp: " +
                     nearest_divisors(common, tp) + ")");
  };
  if (s.heads % tp != 0) bad_tp("the model's heads", s.heads);
  if (s.kv_heads % tp != 0) bad_tp("the model's kv_heads", s.kv_heads);
  if (layout.node_known && rpn % tp != 0) bad_tp("the ranks per node", rpn);
  if (layout.world % tp != 0) bad_tp("the world size", layout.world);
  p.dp = train.dp > 0 ? train.dp : static_cast<int>(layout.world / tp);
  if (static_cast<std::int64_t>(p.dp) * tp != layout.world) {
    throw UsageError("train.dp = " + text(p.dp) + " x train.tp = " + text(tp) + " = " +
                     text(static_cast<std::int64_t>(p.dp) * tp) + " ranks, but the run has " +
                     text(layout.world) + "; use dp: " + text(layout.world / tp) +
                     " (or 0, which takes world / tp)");
  }
  const std::int64_t tokens = train.seq_len * train.micro_batch;
  if (p.sequence_parallel && tokens % tp != 0) {
    throw UsageError("train.sequence_parallel splits the " + text(tokens) +
                     " tokens of a micro-batch (seq_len x micro_batch) over tp = " + text(tp) +
                     " ranks, which does not divide them; use a seq_len that is a multiple of " +
                     text(tp));
  }
  if (layout.gpu) {
    struct Dim {
      std::string what;
      std::int64_t value;
      std::int64_t divisor;
    };
    const std::vector<Dim> dims = {{"seq_len x micro_batch (tokens)", tokens, 1},
                                   {"hidden", s.hidden, 1},
                                   {"hidden / tp", s.hidden, tp},
                                   {"the QKV width / tp", s.qkv_width(), tp},
                                   {"the FC1 width / tp", s.fc1_width(), tp},
                                   {"ffn_hidden / tp", s.ffn_hidden, tp}};
    for (const Dim& d : dims) {
      if (d.value % (16 * d.divisor) == 0) continue;
      const std::string shown = d.divisor == 1 ? text(d.value)
                                               : text(d.value) + " / " + text(d.divisor) + " = " +
                                                     text(d.value / d.divisor);
      throw UsageError("train: " + d.what + " is " + shown +
                       ", but FP8 GEMMs on a GPU (cuBLASLt) need every dimension to be a multiple "
                       "of 16; nearest valid value: " +
                       text(nearest_multiple(d.value, 16 * d.divisor)) +
                       (d.divisor == 1 ? "" : " (before dividing by tp)"));
    }
    // Core attention's bf16 GEMMs run per head on column blocks of the QKV output and on s x s
    // scores: 16-byte aligned heads and rows need multiples of 8 elements.
    const std::vector<Dim> attention = {{"the head size (hidden / heads)", s.head_dim(), 1},
                                        {"seq_len", train.seq_len, 1}};
    for (const Dim& d : attention) {
      if (d.value % 8 == 0) continue;
      throw UsageError("train: " + d.what + " is " + text(d.value) +
                       ", but core attention's bf16 GEMMs on a GPU (cuBLASLt) need it to be a "
                       "multiple of 8 (16-byte aligned heads and rows); nearest valid value: " +
                       text(nearest_multiple(d.value, 8)));
    }
  }
  return p;
}

}  // namespace shakedown::train
