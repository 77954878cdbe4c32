#include "train/step.hpp"

#include <cblas.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "fp8/fp8.hpp"
#include "fp8/tensor.hpp"
#include "runtime/mpi.hpp"
#include "train/batch_fill.hpp"
#include "train/step_math.hpp"

namespace shakedown::train {
namespace {

// Uniform in [-a, a], a function of (key, i) only: the same on every rank that asks.
void fill_uniform(std::vector<float>& v, std::uint64_t key, float a) {
  const std::uint64_t k = mix(key);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = uniform_at(k, i, a);
}

// RMS normalisation of each row (the pre-norm before attention and before the MLP), no weight.
std::vector<float> rms_norm(const std::vector<float>& x, std::int64_t rows, std::int64_t cols) {
  std::vector<float> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::int64_t c = 0; c < cols; ++c)
      sum += static_cast<double>(x[r * cols + c] * x[r * cols + c]);
    const auto inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(cols) + 1e-6));
    for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * inv;
  }
  return y;
}

// The element an injected bit flip hits: the largest, so the flip is never lost in a zero.
float* largest(std::vector<float>& v) {
  return &*std::max_element(v.begin(), v.end(),
                            [](float a, float b) { return std::fabs(a) < std::fabs(b); });
}

std::vector<float> transpose(std::span<const float> v, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(v.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) t[c * rows + r] = v[r * cols + c];
  }
  return t;
}

}  // namespace

struct TrainStep::State {
  StepConfig config;
  GemmEngine& engine;
  MpiComm& tp;
  MPI_Comm dp;
  int dp_size = 1;
  int dp_rank = 0;
  std::vector<LinearShape> linears;
  std::int64_t tokens = 0;
  // Flat fp32 buffers in the bucket layout (train/buckets.hpp).
  std::vector<float> master, grads, shard, adam_m, adam_v;
  std::unique_ptr<DpReducer> reducer;
  std::vector<int> bucket_pending;  // tensors of each bucket not yet produced this step
  // Per layer, per Linear, per role: delayed-scaling state and this step's amax.
  std::vector<fp8::ScalingState> scaling;
  std::vector<float> step_amax;
  // Forward values kept for backward, per layer: each Linear's input (fp32) and its output.
  std::vector<std::array<std::vector<float>, kLinears>> inputs;
  std::vector<std::vector<float>> qkv_out;
  std::vector<fp8::Fp8Tensor> weights_t;  // per layer x Linear: W^T in FP8 (dgrad operand)
  std::vector<fp8::Fp8Tensor> weights;    // per layer x Linear: W in FP8 (forward operand)
  double tp_wait = 0;
  double slow_factor = 1.0;  // this step's injected slowdown (StepFault)
  double mark = 0;           // steady clock: compute began here (slow_down)
  int adam_step = 0;

  State(const StepConfig& c, GemmEngine& e, MpiComm& t, MPI_Comm d)
      : config(c), engine(e), tp(t), dp(d) {}

  int slot(int layer, int linear, Role role) const { return scaling_slot(layer, linear, role); }
  fp8::Format format(Role role) const {
    return role == kGrad ? fp8::backward_format(config.recipe) : fp8::forward_format(config.recipe);
  }

  fp8::Fp8Tensor quantize(std::span<const float> v, std::int64_t rows, std::int64_t cols, int index,
                          Role role) {
    const fp8::Format f = format(role);
    const float scale = config.current_scaling ? fp8::current_scale({}, f, fp8::amax(v))
                                               : scaling[static_cast<std::size_t>(index)].scale;
    fp8::Fp8Tensor t = fp8::quantize_tensor(v, rows, cols, f, scale);
    float& a = step_amax[static_cast<std::size_t>(index)];
    a = std::fmax(a, t.amax);
    return t;
  }
  // v^T quantised with the scale v itself uses (TE's column-wise copy).
  fp8::Fp8Tensor quantize_t(std::span<const float> v, std::int64_t rows, std::int64_t cols,
                            int index, Role role) {
    const std::vector<float> t = transpose(v, rows, cols);
    return quantize(t, cols, rows, index, role);
  }

  std::vector<float> gemm(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b, GemmOut out) {
    GemmOptions options;
    options.out = out;
    return engine.run(a, b, options).values;
  }

  // slow_factor > 1 (the --inject slow self-test): all compute takes that many times longer, as
  // on a slow GPU. Before each point where other ranks may wait for this one (a TP collective, a
  // bucket posted, the end of forward and backward), the compute since the last such point is
  // stretched by sleeping: its TP peers then wait in the TP collectives and its replicas for its
  // buckets, and the sleep steals no CPU from ranks sharing its cores.
  void slow_down() {
    if (slow_factor <= 1.0) return;
    const double now = steady_seconds();
    std::this_thread::sleep_for(std::chrono::duration<double>((slow_factor - 1.0) * (now - mark)));
  }
  void resume() { mark = steady_seconds(); }  // compute starts (again) here

  // One TP collective, blocking: its time is TP wait, and the compute before it is stretched
  // under an injected slowdown.
  void timed_tp(CollectiveKind kind, const float* in, float* out, std::size_t count) {
    slow_down();
    const double t0 = steady_seconds();
    tp.run(kind, in, out, count, DType::kFloat32, ReduceOp::kSum, 0);
    tp.synchronize();
    tp_wait += steady_seconds() - t0;
    resume();
  }

  void tp_all_reduce(std::vector<float>& v) {
    if (tp.size() == 1) return;
    timed_tp(CollectiveKind::kAllReduce, v.data(), v.data(), v.size());
  }

  // Sequence parallelism: [T/t, h] shards of the activations between blocks, gathered to
  // [T, h] before a column-parallel GEMM and reduce-scattered back after a row-parallel one.
  std::vector<float> tp_all_gather(const std::vector<float>& rows) {
    if (tp.size() == 1) return rows;
    std::vector<float> full(rows.size() * static_cast<std::size_t>(tp.size()));
    timed_tp(CollectiveKind::kAllGather, rows.data(), full.data(), rows.size());
    return full;
  }
  std::vector<float> tp_reduce_scatter(const std::vector<float>& full) {
    if (tp.size() == 1) return full;
    std::vector<float> mine(full.size() / static_cast<std::size_t>(tp.size()));
    timed_tp(CollectiveKind::kReduceScatter, full.data(), mine.data(), mine.size());
    return mine;
  }
  // A column-parallel dgrad's partial sums, reduced over TP without blocking (TE's async dgrad
  // all-reduce, or reduce-scatter under SP): posted as soon as the dgrad is done, moved along
  // during the wgrad that follows (progress()), and waited for after it (finish()), so the
  // reduction overlaps the wgrad; only the wait counts as TP wait.
  // Owns the request: one still in flight when it dies (an exception between post and finish)
  // is waited for, so MPI never writes into the freed buffers (declared after dx, it dies
  // before it).
  struct PartialReduction {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<float> shard;  // the result under SP
    PartialReduction() = default;
    PartialReduction(const PartialReduction&) = delete;
    PartialReduction& operator=(const PartialReduction&) = delete;
    PartialReduction(PartialReduction&& other) noexcept
        : request(std::exchange(other.request, MPI_REQUEST_NULL)), shard(std::move(other.shard)) {}
    PartialReduction& operator=(PartialReduction&& other) noexcept {
      if (this != &other) {
        wait();
        request = std::exchange(other.request, MPI_REQUEST_NULL);
        shard = std::move(other.shard);  // a vector's move keeps its storage: MPI's target
      }
      return *this;
    }
    ~PartialReduction() { wait(); }
    void wait() noexcept {
      if (request != MPI_REQUEST_NULL) (void)MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
  };
  PartialReduction post_partial(std::vector<float>& dx) {
    PartialReduction r;
    if (tp.size() == 1) return r;
    if (dx.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      throw UsageError("train: " + std::to_string(dx.size()) +
                       " dgrad elements per rank are more than one MPI call can reduce (2^31 - "
                       "1); use a shorter seq_len or micro_batch, or a larger tp");
    }
    slow_down();
    if (config.parallel.sequence_parallel) {
      r.shard.resize(dx.size() / static_cast<std::size_t>(tp.size()));
      SD_MPI_CHECK(MPI_Ireduce_scatter_block(dx.data(), r.shard.data(),
                                             static_cast<int>(r.shard.size()), MPI_FLOAT, MPI_SUM,
                                             tp.comm(), &r.request));
    } else {
      SD_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, dx.data(), static_cast<int>(dx.size()), MPI_FLOAT,
                                  MPI_SUM, tp.comm(), &r.request));
    }
    resume();
    return r;
  }
  static void progress(PartialReduction& r) {
    if (r.request == MPI_REQUEST_NULL) return;
    int done = 0;
    SD_MPI_CHECK(MPI_Test(&r.request, &done, MPI_STATUS_IGNORE));
  }
  void finish(PartialReduction& r, std::vector<float>& dx) {
    if (tp.size() == 1) return;
    slow_down();
    const double t0 = steady_seconds();
    SD_MPI_CHECK(MPI_Wait(&r.request, MPI_STATUS_IGNORE));
    tp_wait += steady_seconds() - t0;
    resume();
    if (config.parallel.sequence_parallel) dx = std::move(r.shard);
  }

  // Row-parallel output (partial sums): all-reduced, or reduce-scattered under SP.
  void reduce_partial(std::vector<float>& v) {
    if (config.parallel.sequence_parallel) {
      v = tp_reduce_scatter(v);
    } else {
      tp_all_reduce(v);
    }
  }

  AttentionGeometry attention;

  // Core attention of one layer, forward: ctx [T, h/t] from qkv [T, qkv/t].
  void attention_forward(const std::vector<float>& qkv, std::vector<float>& ctx) const {
    const AttentionGeometry& a = attention;
    const std::int64_t d = a.d, s = a.s, ld = a.ld, q_cols = a.q_cols, kv_cols = a.kv_cols;
    const int heads = a.heads, group = a.group;
    const float alpha = a.alpha;
    std::vector<float> scores(static_cast<std::size_t>(s * s));
    ctx.assign(static_cast<std::size_t>(tokens * q_cols), 0.0f);
    for (std::int64_t b = 0; b < config.micro_batch; ++b) {
      const float* base = qkv.data() + b * s * ld;
      for (int hh = 0; hh < heads; ++hh) {
        const float* q = base + hh * d;
        const float* k = base + q_cols + (hh / group) * d;
        const float* v = base + q_cols + kv_cols + (hh / group) * d;
        const auto si = static_cast<int>(s), di = static_cast<int>(d), li = static_cast<int>(ld);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, si, si, di, alpha, q, li, k, li, 0.0f,
                    scores.data(), si);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, si, di, si, 1.0f, scores.data(), si,
                    v, li, 0.0f, ctx.data() + b * s * q_cols + hh * d, static_cast<int>(q_cols));
      }
    }
  }

  // Backward of the above: dqkv [T, qkv/t] from dctx [T, h/t]; the scores are recomputed (as
  // fused attention does) rather than kept.
  void attention_backward(const std::vector<float>& qkv, const std::vector<float>& dctx,
                          std::vector<float>& dqkv) const {
    const AttentionGeometry& a = attention;
    const std::int64_t d = a.d, s = a.s, ld = a.ld, q_cols = a.q_cols, kv_cols = a.kv_cols;
    const int heads = a.heads, group = a.group;
    const float alpha = a.alpha;
    std::vector<float> scores(static_cast<std::size_t>(s * s)), dscores(scores.size());
    dqkv.assign(qkv.size(), 0.0f);
    const auto si = static_cast<int>(s), di = static_cast<int>(d), li = static_cast<int>(ld);
    const auto qi = static_cast<int>(q_cols);
    for (std::int64_t b = 0; b < config.micro_batch; ++b) {
      const float* base = qkv.data() + b * s * ld;
      float* dbase = dqkv.data() + b * s * ld;
      for (int hh = 0; hh < heads; ++hh) {
        const std::int64_t qo = hh * d, ko = q_cols + (hh / group) * d,
                           vo = q_cols + kv_cols + (hh / group) * d;
        const float* dc = dctx.data() + b * s * q_cols + hh * d;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, si, si, di, alpha, base + qo, li,
                    base + ko, li, 0.0f, scores.data(), si);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, si, si, di, 1.0f, dc, qi, base + vo,
                    li, 0.0f, dscores.data(), si);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, si, di, si, 1.0f, scores.data(), si,
                    dc, qi, 1.0f, dbase + vo, li);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, si, di, si, alpha, dscores.data(),
                    si, base + ko, li, 0.0f, dbase + qo, li);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, si, di, si, alpha, dscores.data(), si,
                    base + qo, li, 1.0f, dbase + ko, li);
      }
    }
  }

  void tensor_done(int tensor) {
    const int b = plan_bucket[static_cast<std::size_t>(tensor)];
    if (--bucket_pending[static_cast<std::size_t>(b)] == 0 && config.overlap) {
      slow_down();
      reducer->start(b);
      resume();
    }
    if (config.overlap) reducer->progress();
  }
  std::vector<int> plan_bucket;
};

void check_step(const StepConfig& config) {
  if (config.parallel.sequence_parallel &&
      (config.micro_batch * config.seq_len) % config.parallel.tp != 0) {
    throw UsageError("train.sequence_parallel: tp must divide seq_len x micro_batch");
  }
}

AttentionGeometry attention_geometry(const StepConfig& config) {
  const ModelShape& m = config.shape;
  const int t = config.parallel.tp;
  AttentionGeometry a;
  a.d = m.head_dim();
  a.s = config.seq_len;
  a.ld = m.qkv_width() / t;
  a.q_cols = m.hidden / t;
  a.kv_cols = m.kv_width() / t;
  a.heads = m.heads / t;
  a.group = m.heads / m.kv_heads;
  a.alpha = 1.0f / (std::sqrt(static_cast<float>(a.d)) * static_cast<float>(a.s));
  return a;
}

BucketPlan plan_step_buckets(const StepConfig& config, std::int64_t dp_size) {
  std::vector<std::int64_t> sizes;
  const std::vector<LinearShape> linears = layer_linears(config.shape, config.parallel.tp);
  for (int l = 0; l < config.shape.layers; ++l) {
    for (const LinearShape& lin : linears) sizes.push_back(lin.n * lin.k);
  }
  return plan_buckets(sizes, 4, config.first_bucket_mb * 1024.0 * 1024.0,
                      config.bucket_mb * 1024.0 * 1024.0, std::lcm<std::int64_t>(64, dp_size));
}

double rank_flops_per_step(const StepConfig& config) {
  const std::int64_t tokens = config.micro_batch * config.seq_len;
  double linear = 0;
  for (const LinearShape& lin : layer_linears(config.shape, config.parallel.tp))
    linear += 2.0 * static_cast<double>(tokens * lin.n * lin.k);
  const double attention = 4.0 * static_cast<double>(tokens) * static_cast<double>(config.seq_len) *
                           static_cast<double>(config.shape.hidden / config.parallel.tp);
  return 3.0 * (linear + attention) * config.shape.layers;
}

TrainStep::TrainStep(const StepConfig& config, GemmEngine& engine, MpiComm& tp, MPI_Comm dp)
    : s_(std::make_unique<State>(config, engine, tp, dp)) {
  State& s = *s_;
  check_step(config);
  if (tp.size() != config.parallel.tp) throw InternalError("TrainStep: tp group size mismatch");
  s.dp_size = comm_size(dp);
  s.dp_rank = comm_rank(dp);
  s.linears = layer_linears(config.shape, config.parallel.tp);
  s.tokens = config.micro_batch * config.seq_len;
  s.attention = attention_geometry(config);
  const int layers = config.shape.layers;
  plan_ = plan_step_buckets(config, s.dp_size);
  s.plan_bucket = plan_.tensor_bucket;
  const auto total = static_cast<std::size_t>(plan_.total_padded);
  s.master.assign(total, 0.0f);
  s.grads.assign(total, 0.0f);
  s.adam_m.assign(total, 0.0f);
  s.adam_v.assign(total, 0.0f);
  if (config.parallel.zero == 1) s.shard.assign(total / static_cast<std::size_t>(s.dp_size), 0.0f);
  // Weights depend on (seed, layer, Linear, TP rank) only: every replica starts identical.
  for (int l = 0; l < layers; ++l) {
    for (int j = 0; j < kLinears; ++j) {
      const LinearShape& lin = s.linears[static_cast<std::size_t>(j)];
      std::vector<float> w(static_cast<std::size_t>(lin.n * lin.k));
      fill_uniform(w, weight_key(config.seed, l * kLinears + j, tp.rank()),
                   std::sqrt(3.0f / static_cast<float>(lin.k)));
      std::copy(w.begin(), w.end(),
                s.master.begin() + plan_.tensor_offset[static_cast<std::size_t>(l * kLinears + j)]);
    }
  }
  s.reducer = std::make_unique<DpReducer>(dp, plan_, config.parallel.zero == 1, s.grads.data(),
                                          s.shard.empty() ? nullptr : s.shard.data());
  const int slots = layers * kLinears * kRoles;
  s.scaling.assign(static_cast<std::size_t>(slots), fp8::make_scaling_state(config.delayed));
  s.step_amax.assign(static_cast<std::size_t>(slots), 0.0f);
  s.inputs.resize(static_cast<std::size_t>(layers));
  s.qkv_out.resize(static_cast<std::size_t>(layers));
  s.weights.resize(static_cast<std::size_t>(layers * kLinears));
  s.weights_t.resize(static_cast<std::size_t>(layers * kLinears));
  flops_ = rank_flops_per_step(config);
}

std::vector<float> TrainStep::master_weights() const {
  return s_->master;
}

std::vector<float> TrainStep::gradients() const {
  return s_->grads;
}

std::vector<float> TrainStep::scales() const {
  std::vector<float> out;
  for (const fp8::ScalingState& st : s_->scaling) out.push_back(st.scale);
  return out;
}

std::string TrainStep::engine() const {
  return s_->engine.name();
}

TrainStep::~TrainStep() = default;

std::int64_t TrainStep::tokens_per_step() const {
  return s_->tokens;
}

const std::vector<BucketTiming>& TrainStep::bucket_timings() const {
  return s_->reducer->timings();
}

StepTimes TrainStep::run(int step, const StepFault& fault) {
  State& s = *s_;
  const StepConfig& c = s.config;
  const ModelShape& m = c.shape;
  const int layers = m.layers;
  const std::int64_t T = s.tokens;
  StepTimes times;
  const double t_start = steady_seconds();
  s.tp_wait = 0;
  s.slow_factor = fault.slow_factor;
  std::fill(s.step_amax.begin(), s.step_amax.end(), 0.0f);
  std::fill(s.grads.begin(), s.grads.end(), 0.0f);
  s.bucket_pending.assign(plan_.buckets.size(), 0);
  for (int b : plan_.tensor_bucket) ++s.bucket_pending[static_cast<std::size_t>(b)];

  // ---- forward ----
  const bool sp = c.parallel.sequence_parallel;
  // The activations between blocks: [T, h], or this rank's [T/t, h] rows under SP.
  const std::int64_t rows = sp ? T / c.parallel.tp : T;
  std::vector<float> x(static_cast<std::size_t>(T * m.hidden));
  // The batch: the same on the ranks of a TP group, different per replica and step.
  fill_uniform(x, batch_key(c.seed, s.dp_rank, step), 1.0f);
  if (sp) {
    x.erase(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(s.tp.rank() * rows * m.hidden));
    x.resize(static_cast<std::size_t>(rows * m.hidden));
  }
  const double t_fwd = steady_seconds();
  s.resume();
  // The weights' FP8 copies and transposes, as TE casts them in the forward of each step: in
  // the forward's time (outside every component, they were a quarter to half of a large
  // layer's step that no part of the breakdown showed).
  for (int l = 0; l < layers; ++l) {
    for (int j = 0; j < kLinears; ++j) {
      const LinearShape& lin = s.linears[static_cast<std::size_t>(j)];
      const std::size_t at = plan_.tensor_offset[static_cast<std::size_t>(l * kLinears + j)];
      const std::span<const float> w(s.master.data() + at, static_cast<std::size_t>(lin.n * lin.k));
      s.weights[static_cast<std::size_t>(l * kLinears + j)] =
          s.quantize(w, lin.n, lin.k, s.slot(l, j, kWeight), kWeight);
      s.weights_t[static_cast<std::size_t>(l * kLinears + j)] =
          s.quantize_t(w, lin.n, lin.k, s.slot(l, j, kWeight), kWeight);
    }
  }
  for (int l = 0; l < layers; ++l) {
    auto& in = s.inputs[static_cast<std::size_t>(l)];
    auto W = [&](int j) -> const fp8::Fp8Tensor& {
      return s.weights[static_cast<std::size_t>(l * kLinears + j)];
    };
    in[0] = rms_norm(x, rows, m.hidden);
    if (sp) in[0] = s.tp_all_gather(in[0]);
    s.qkv_out[static_cast<std::size_t>(l)] =
        s.gemm(s.quantize(in[0], T, m.hidden, s.slot(l, 0, kInput), kInput), W(0), GemmOut::kBF16);
    s.attention_forward(s.qkv_out[static_cast<std::size_t>(l)], in[1]);
    std::vector<float> y = s.gemm(
        s.quantize(in[1], T, s.linears[1].k, s.slot(l, 1, kInput), kInput), W(1), GemmOut::kBF16);
    s.reduce_partial(y);
    for (std::size_t i = 0; i < y.size(); ++i) x[i] += y[i];  // residual
    in[2] = rms_norm(x, rows, m.hidden);
    if (sp) in[2] = s.tp_all_gather(in[2]);
    std::vector<float> h1 =
        s.gemm(s.quantize(in[2], T, m.hidden, s.slot(l, 2, kInput), kInput), W(2), GemmOut::kBF16);
    // GeLU (x sigmoid(1.702 x)) or SwiGLU (gate sigmoid(gate) up) down to [T, ffn / tp].
    const std::int64_t f = s.linears[3].k, w1 = s.linears[2].n;
    std::vector<float> act(static_cast<std::size_t>(T * f));
    for (std::int64_t r = 0; r < T; ++r) {
      for (std::int64_t k = 0; k < f; ++k) {
        const float g = h1[r * w1 + k];
        const float a = gelu_sigmoid(g);
        act[r * f + k] = m.mlp == Mlp::kSwiglu ? a * h1[r * w1 + f + k] : a;
      }
    }
    in[3] = std::move(act);
    std::vector<float> z =
        s.gemm(s.quantize(in[3], T, f, s.slot(l, 3, kInput), kInput), W(3), GemmOut::kBF16);
    s.reduce_partial(z);
    for (std::size_t i = 0; i < z.size(); ++i) x[i] += z[i];  // residual
  }
  s.slow_down();
  const double fwd_wait = s.tp_wait;
  times.fwd_s = steady_seconds() - t_fwd - fwd_wait;

  // ---- backward ----
  const double t_bwd = steady_seconds();
  s.resume();
  std::vector<float> dy(static_cast<std::size_t>(T * m.hidden));
  fill_uniform(dy, output_grad_key(c.seed, s.dp_rank, step), 1e-2f);
  if (sp) {
    dy.erase(dy.begin(), dy.begin() + static_cast<std::ptrdiff_t>(s.tp.rank() * rows * m.hidden));
    dy.resize(static_cast<std::size_t>(rows * m.hidden));
  }
  for (int l = layers - 1; l >= 0; --l) {
    auto& in = s.inputs[static_cast<std::size_t>(l)];
    std::vector<float> residual = dy;  // the gradient that skips the block (residual path)
    for (int j = kLinears - 1; j >= 0; --j) {
      const LinearShape& lin = s.linears[static_cast<std::size_t>(j)];
      const int tensor = l * kLinears + j;
      const int g = s.slot(l, j, kGrad);
      // Under SP a row-parallel Linear's output gradient arrives as this rank's rows: gathered.
      if (sp && !lin.column) dy = s.tp_all_gather(dy);
      // dY [T, n]: FC1's is FC2's dgrad widened to SwiGLU's two halves.
      if (j == 2 && m.mlp == Mlp::kSwiglu) {
        std::vector<float> wide(static_cast<std::size_t>(T * lin.n));
        const std::int64_t f = lin.n / 2;
        for (std::int64_t r = 0; r < T; ++r) {
          std::copy_n(dy.data() + r * f, f, wide.data() + r * lin.n);
          std::copy_n(dy.data() + r * f, f, wide.data() + r * lin.n + f);
        }
        dy = std::move(wide);
      }
      const fp8::Fp8Tensor dyq = s.quantize(dy, T, lin.n, g, kGrad);
      std::vector<float> dx =
          s.gemm(dyq, s.weights_t[static_cast<std::size_t>(tensor)], GemmOut::kBF16);
      // Column-parallel dgrad: partial sums over TP, all-reduced (reduce-scattered under SP)
      // while the wgrad runs.
      State::PartialReduction partial;
      if (lin.column) partial = s.post_partial(dx);
      if (c.overlap) s.reducer->progress();
      // wgrad: dW [n, k] = dY^T X, fp32 into the gradient buffer (TE's main_grad).
      const fp8::Fp8Tensor dyt = s.quantize_t(dy, T, lin.n, g, kGrad);
      State::progress(partial);
      const fp8::Fp8Tensor xt =
          s.quantize_t(in[static_cast<std::size_t>(j)], T, lin.k, s.slot(l, j, kInput), kInput);
      State::progress(partial);
      const std::vector<float> dw = s.gemm(dyt, xt, GemmOut::kFP32);
      std::copy(dw.begin(), dw.end(),
                s.grads.begin() + plan_.tensor_offset[static_cast<std::size_t>(tensor)]);
      s.tensor_done(tensor);
      if (lin.column) {
        s.finish(partial, dx);
        // Through the norm (its derivative left out) and the residual join.
        for (std::size_t i = 0; i < dx.size(); ++i) dx[i] += residual[i];
        residual = dx;
      }
      if (j == 1) {
        std::vector<float> dqkv;
        s.attention_backward(s.qkv_out[static_cast<std::size_t>(l)], dx, dqkv);
        dy = std::move(dqkv);
      } else {
        dy = std::move(dx);
      }
    }
  }
  s.slow_down();
  const double bwd_wait = s.tp_wait - fwd_wait;
  times.backward_end_s = steady_seconds();
  times.bwd_s = times.backward_end_s - t_bwd - bwd_wait;
  times.tp_comm_s = s.tp_wait;
  if (c.overlap) {
    times.dp_exposed_s = s.reducer->wait_all();
  } else {
    times.dp_exposed_s = s.reducer->reduce_blocking();
  }
  times.dp_span_s = s.reducer->communication_span_s();

  // ---- optimizer ----
  const double t_opt = steady_seconds();
  const bool zero = c.parallel.zero == 1;
  auto flip = [](float* at) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, at, sizeof bits);
    bits ^= 1u << 22;
    std::memcpy(at, &bits, sizeof bits);
  };
  // The injected corruption: zero 0 flips a bit of this rank's reduced gradient, which only its
  // own Adam step reads. Under zero 1 a corrupted gradient shard is all-gathered to every
  // replica alike (no replica comparison can see that), so the bit flips in this rank's
  // parameters after the all-gather instead: memory that goes bad under a replica.
  if (fault.flip_gradient_bit && !zero) flip(largest(s.grads));
  double amax_wait = 0;
  if (s.tp.size() > 1) {
    const double t0 = steady_seconds();
    s.tp.run(CollectiveKind::kAllReduce, s.step_amax.data(), s.step_amax.data(), s.step_amax.size(),
             DType::kFloat32, ReduceOp::kMax, 0);
    s.tp.synchronize();
    amax_wait = steady_seconds() - t0;
    times.tp_comm_s += amax_wait;
  }
  if (!c.current_scaling) {
    for (std::size_t i = 0; i < s.scaling.size(); ++i) {
      fp8::record_amax(s.scaling[i], s.step_amax[i]);
      fp8::update_scale(c.delayed, s.format(static_cast<Role>(i % kRoles)), s.scaling[i]);
    }
  }
  // Adam (lr 1e-4, betas 0.9 / 0.999, eps 1e-8) on the mean gradient.
  ++s.adam_step;
  const AdamParams params = adam_params(s.adam_step, 1.0f / static_cast<float>(s.dp_size));
  auto adam = [&](std::size_t p, float grad) {
    adam_update(s.master[p], s.adam_m[p], s.adam_v[p], grad, params);
  };
  if (zero) {
    for (const Bucket& b : plan_.buckets) {
      const std::int64_t part = b.padded / s.dp_size;
      for (std::int64_t k = 0; k < part; ++k) {
        adam(static_cast<std::size_t>(b.offset + s.dp_rank * part + k),
             s.shard[static_cast<std::size_t>(b.offset / s.dp_size + k)]);
      }
      SD_MPI_CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s.master.data() + b.offset,
                                 static_cast<int>(part), MPI_FLOAT, s.dp));
    }
    if (fault.flip_gradient_bit) flip(largest(s.master));
  } else {
    for (std::size_t p = 0; p < s.master.size(); ++p) adam(p, s.grads[p]);
  }
  times.optim_s = steady_seconds() - t_opt - amax_wait;  // the amax wait is in tp_comm_s
  times.step_s = steady_seconds() - t_start;
  // After the timed step, so the count costs the step nothing.
  std::int64_t zeros = 0;
  for (int t = 0; t < layers * kLinears; ++t) {
    const LinearShape& lin = s.linears[static_cast<std::size_t>(t % kLinears)];
    const float* g = s.grads.data() + plan_.tensor_offset[static_cast<std::size_t>(t)];
    for (std::int64_t i = 0; i < lin.n * lin.k; ++i) zeros += g[i] == 0.0f ? 1 : 0;
  }
  zero_share_ = static_cast<double>(zeros) / static_cast<double>(plan_.total_padded);
  return times;
}

std::uint64_t TrainStep::parameter_hash() const {
  return XXH3_64bits(s_->master.data(), s_->master.size() * sizeof(float));
}

bool TrainStep::scales_finite() const {
  for (const fp8::ScalingState& st : s_->scaling) {
    if (!std::isfinite(st.scale) || !(st.scale > 0) || !std::isfinite(st.scale_inv)) return false;
    for (float a : st.amax_history) {
      if (!std::isfinite(a)) return false;
    }
  }
  return true;
}

}  // namespace shakedown::train
