#include "train/device_step.hpp"

#if SHAKEDOWN_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <exception>
#include <thread>
#include <utility>

#include "core/cuda_check.hpp"
#include "core/cuda_event.hpp"
#include "core/error.hpp"
#include "fp8/fp8.hpp"
#include "fp8/scaling.hpp"
#include "gemm/cublaslt_matmul.hpp"
#include "kernels/fp8_kernels.hpp"
#include "kernels/train_kernels.hpp"
#include "train/batch_fill.hpp"
#include "train/dp_reducer.hpp"

namespace shakedown::train {
namespace {

// Every GEMM operand here may start inside a larger buffer (a head's columns, a tensor's slice
// of the gradient buffer): cuBLASLt may assume 16 bytes, what FP8 and bf16 kernels need anyway.
constexpr std::uint32_t kAlignment = 16;

float* f32(const cublaslt::DeviceMemory& m, std::int64_t offset = 0) {
  return m.as<float>() + offset;
}

cublaslt::DeviceMemory floats(std::int64_t count) {
  return cublaslt::DeviceMemory(static_cast<std::size_t>(count) * sizeof(float));
}

}  // namespace

struct DeviceTrainStep::State {
  enum Part { kForward, kBackward, kOptimizer };

  using Event = CudaEvent;

  // Events handed out in order during a step and reused by the next.
  class EventPool {
   public:
    Event& next() {
      if (used_ == events_.size()) events_.push_back(std::make_unique<Event>());
      return *events_[used_++];
    }
    void reset() { used_ = 0; }

   private:
    std::vector<std::unique_ptr<Event>> events_;
    std::size_t used_ = 0;
  };

  StepConfig config;
  NcclComm& tp;
  NcclComm& dp;
  cublaslt::Stream compute_stream;   // GEMMs and kernels
  cudaStream_t compute = nullptr;    // compute_stream.get()
  cudaStream_t tp_stream = nullptr;  // the TP communicator's stream
  cudaStream_t reduce = nullptr;     // the DP communicator's stream
  int dp_size = 1;
  int dp_rank = 0;
  bool tp_active = false;  // the TP collectives run (tp > 1, or the tests' tp1_collectives)
  std::vector<LinearShape> linears;
  std::int64_t tokens = 0;  // T
  std::int64_t rows = 0;    // rows of the activations between blocks: T, or T / tp under SP
  AttentionGeometry attention;
  cublaslt::Handle handle;
  cublaslt::DeviceMemory workspace;
  // Flat fp32 buffers in the bucket layout (train/buckets.hpp).
  cublaslt::DeviceMemory master, grads, shard, adam_m, adam_v;
  // Per layer, per Linear, per role: the scaling state (kept on the host for delayed scaling)
  // and on the device this step's scale, scale_inv and amax.
  std::vector<fp8::ScalingState> scaling;
  cublaslt::DeviceMemory scale, scale_inv, amax;
  // Per layer x Linear: W and W^T in FP8.
  std::vector<cublaslt::DeviceMemory> weights, weights_t;
  // Forward values kept for backward: each Linear's fp32 input [T, k], the bf16 QKV output.
  std::vector<std::array<cublaslt::DeviceMemory, kLinears>> inputs;
  std::vector<cublaslt::DeviceMemory> qkv;
  // Scratch, every one `big` elements (so any two can swap roles).
  cublaslt::DeviceMemory x, norm, out_bf16, out_f32, reduced, dy, dx, residual, spare, transposed;
  cublaslt::DeviceMemory q_a, q_b;         // FP8 operands
  cublaslt::DeviceMemory scores, dscores;  // bf16 [s, s] of one head
  // GEMMs per layer x Linear, and core attention's six (the same for every head and layer).
  std::vector<std::unique_ptr<cublaslt::Matmul>> fwd, dgrad, wgrad;
  std::unique_ptr<cublaslt::Matmul> att_scores, att_ctx, att_dscores, att_dv, att_dq, att_dk;
  // Per step.
  EventPool events;
  // One TP collective: the compute stream blocked from `from` (recorded on it where it starts
  // to wait) to `end` (the collective done, on the TP stream); less than zero when the
  // collective was done before the compute stream got there (overlapped).
  struct TpCall {
    Event* from;
    Event* end;
    Part part;
  };
  std::vector<TpCall> tp_calls;
  std::vector<Event*> bucket_start, bucket_end;
  std::vector<int> bucket_pending;
  std::vector<bool> bucket_started;
  Part part = kForward;
  double slow_factor = 1.0;
  double mark = 0;
  int adam_step = 0;

  State(const StepConfig& c, NcclComm& t, NcclComm& d) : config(c), tp(t), dp(d) {}

  int slot(int layer, int linear, Role role) const { return scaling_slot(layer, linear, role); }
  fp8::Format format(Role role) const {
    return role == kGrad ? fp8::backward_format(config.recipe) : fp8::forward_format(config.recipe);
  }

  // The scaling states' scales to the device, for the next quantisations. A copy from pageable
  // memory returns once CUDA has staged it, so the local vector may go.
  void upload_scales() {
    std::vector<float> host(scaling.size());
    for (std::size_t i = 0; i < scaling.size(); ++i) host[i] = scaling[i].scale;
    SD_CUDA_CHECK(
        cudaMemcpyAsync(scale.get(), host.data(), scale.bytes(), cudaMemcpyHostToDevice, compute));
  }

  // ---- quantisation: `out` = FP8 of src [count] with the slot's scale; the slot's amax and
  // scale_inv written as the host step's quantize() keeps them.
  void quantize(const float* src, std::int64_t count, int index, Role role, std::uint8_t* out) {
    const fp8::Format f = format(role);
    float* a = f32(amax, index);
    float* sc = f32(scale, index);
    if (config.current_scaling) {
      kernels::launch_output_amax(src, count, kernels::OutType::kFP32, a, compute);
      kernels::launch_current_scale(a, fp8::info(f).max_finite, fp8::CurrentScaling{}.epsilon, sc,
                                    compute);
      a = nullptr;  // already this tensor's
    }
    kernels::launch_quantize_fp8(src, count, cublaslt::kernel_type(f), sc, out, a,
                                 f32(scale_inv, index), compute);
  }
  // src [r, c]^T quantised with the scale src itself used (TE's column-wise copy): same values,
  // so the amax and scale_inv are already the slot's.
  void quantize_t(const float* src, std::int64_t r, std::int64_t c, int index, Role role,
                  std::uint8_t* out) {
    kernels::launch_transpose(src, r, c, f32(transposed), compute);
    kernels::launch_quantize_fp8(f32(transposed), r * c, cublaslt::kernel_type(format(role)),
                                 f32(scale, index), out, nullptr, nullptr, compute);
  }

  // Waits for the compute stream (and with `all` the TP and DP streams too) by polling, checking
  // both communicators for a failed peer meanwhile: every stream may wait on another's NCCL
  // work, and cudaStreamSynchronize would wait forever for a peer that died.
  void wait_streams(bool all) {
    constexpr auto kCheckEvery = std::chrono::milliseconds(10);
    auto next_check = std::chrono::steady_clock::now();
    const auto idle = [](cudaStream_t stream) {
      const cudaError_t rc = cudaStreamQuery(stream);
      if (rc != cudaSuccess && rc != cudaErrorNotReady) {
        detail::throw_cuda_error(rc, "cudaStreamQuery", __FILE__, __LINE__);
      }
      return rc == cudaSuccess;
    };
    for (;;) {
      const bool done = idle(compute) && (!all || (idle(tp_stream) && idle(reduce)));
      if (done || std::chrono::steady_clock::now() >= next_check) {
        tp.check_async();
        dp.check_async();
        next_check = std::chrono::steady_clock::now() + kCheckEvery;
      }
      if (done) break;
      std::this_thread::yield();
    }
    if (all) {  // idle now: these return at once and clear the communicators' in-flight marks
      tp.synchronize();
      dp.synchronize();
    }
  }

  // ---- an injected slowdown (StepFault::slow_factor), as the host step: before each point
  // where others may wait for this rank, the compute since the last such point is stretched by
  // sleeping; the device is waited for first so that compute is what the host measures.
  void slow_down() {
    if (slow_factor <= 1.0) return;
    wait_streams(false);
    const double now = steady_seconds();
    std::this_thread::sleep_for(std::chrono::duration<double>((slow_factor - 1.0) * (now - mark)));
  }
  void resume() {
    if (slow_factor > 1.0) mark = steady_seconds();
  }

  // ---- TP collectives on the TP communicator's stream, after the compute stream's work so far.
  // post() enqueues one and returns the event of its end; wait() makes the compute stream wait
  // for it and records how long it blocked. A blocking collective is a post and a wait at once;
  // the column-parallel dgrad's reduction is posted before the wgrad and waited for after it
  // (TE's async dgrad all-reduce), so only what the wgrad did not hide counts as TP wait.
  Event& post(CollectiveKind kind, const float* in, float* out, std::int64_t unit, ReduceOp op) {
    slow_down();
    Event& ready = events.next();
    ready.record(compute);
    SD_CUDA_CHECK(cudaStreamWaitEvent(tp_stream, ready.get(), 0));
    tp.run(kind, in, out, static_cast<std::uint64_t>(unit), DType::kFloat32, op, 0);
    Event& end = events.next();
    end.record(tp_stream);
    resume();
    return end;
  }
  void wait(Event& end) {
    slow_down();
    Event& from = events.next();
    from.record(compute);
    SD_CUDA_CHECK(cudaStreamWaitEvent(compute, end.get(), 0));
    tp_calls.push_back({&from, &end, part});
    // Under an injected slowdown the collective's wait is not compute to stretch: the host
    // step's collective blocks, so its compute resumes after it; here the device is waited for.
    if (slow_factor > 1.0) wait_streams(false);
    resume();
  }
  void tp_run(CollectiveKind kind, const float* in, float* out, std::int64_t unit, ReduceOp op) {
    wait(post(kind, in, out, unit, op));
  }
  // Row-parallel output / column-parallel dgrad (fp32 [T, cols] in `v`): all-reduced in place,
  // or under SP reduce-scattered to this rank's [rows, cols] (into `reduced`; then finish()
  // swaps it into `v`). Returns the end of the reduction, or null when tp is 1.
  Event* post_partial(cublaslt::DeviceMemory& v, std::int64_t cols) {
    if (!tp_active) return nullptr;
    if (config.parallel.sequence_parallel) {
      return &post(CollectiveKind::kReduceScatter, f32(v), f32(reduced), rows * cols,
                   ReduceOp::kSum);
    }
    return &post(CollectiveKind::kAllReduce, f32(v), f32(v), tokens * cols, ReduceOp::kSum);
  }
  void finish_partial(Event* end, cublaslt::DeviceMemory& v) {
    if (end == nullptr) return;
    wait(*end);
    if (config.parallel.sequence_parallel) std::swap(v, reduced);
  }
  void reduce_partial(cublaslt::DeviceMemory& v, std::int64_t cols) {
    finish_partial(post_partial(v, cols), v);
  }
  // Under SP: this rank's [rows, cols] of `v` gathered to [T, cols] into `out`.
  void gather_rows(const float* v, std::int64_t cols, float* out) {
    tp_run(CollectiveKind::kAllGather, v, out, rows * cols, ReduceOp::kSum);
  }

  // ---- DP buckets on the reduction stream.
  void start_bucket(int b) {
    const auto i = static_cast<std::size_t>(b);
    const Bucket& bucket = plan->buckets[i];
    slow_down();
    Event& ready = events.next();
    ready.record(compute);
    SD_CUDA_CHECK(cudaStreamWaitEvent(reduce, ready.get(), 0));
    bucket_start[i] = &events.next();
    bucket_start[i]->record(reduce);
    if (config.parallel.zero == 1) {
      dp.run(CollectiveKind::kReduceScatter, f32(grads, bucket.offset),
             f32(shard, bucket.offset / dp_size),
             static_cast<std::uint64_t>(bucket.padded / dp_size), DType::kFloat32, ReduceOp::kSum,
             0);
    } else {
      dp.run(CollectiveKind::kAllReduce, f32(grads, bucket.offset), f32(grads, bucket.offset),
             static_cast<std::uint64_t>(bucket.padded), DType::kFloat32, ReduceOp::kSum, 0);
    }
    bucket_end[i] = &events.next();
    bucket_end[i]->record(reduce);
    bucket_started[i] = true;
    resume();
  }
  void tensor_done(int tensor) {
    const int b = plan->tensor_bucket[static_cast<std::size_t>(tensor)];
    if (--bucket_pending[static_cast<std::size_t>(b)] == 0 && config.overlap) start_bucket(b);
  }
  // The compute stream waits for everything enqueued on the reduction stream so far.
  void join_reduce() {
    Event& done = events.next();
    done.record(reduce);
    SD_CUDA_CHECK(cudaStreamWaitEvent(compute, done.get(), 0));
  }

  // ---- core attention of one layer (bf16 GEMMs per head, as the host's SGEMMs).
  void attention_forward(const std::uint16_t* qkv_out, float* ctx) {
    const AttentionGeometry& a = attention;
    for (std::int64_t b = 0; b < config.micro_batch; ++b) {
      const std::uint16_t* base = qkv_out + b * a.s * a.ld;
      for (int hh = 0; hh < a.heads; ++hh) {
        const std::uint16_t* q = base + hh * a.d;
        const std::uint16_t* k = base + a.q_cols + (hh / a.group) * a.d;
        const std::uint16_t* v = base + a.q_cols + a.kv_cols + (hh / a.group) * a.d;
        att_scores->enqueue(q, k, scores.get(), workspace.get(), compute);
        att_ctx->enqueue(scores.get(), v, ctx + b * a.s * a.q_cols + hh * a.d, workspace.get(),
                         compute);
      }
    }
  }
  // dqkv (fp32 [T, qkv/t], zeroed here: K and V gradients accumulate over a group's heads) from
  // dctx (bf16 [T, h/t]); the scores are recomputed, as fused attention does.
  void attention_backward(const std::uint16_t* qkv_out, const std::uint16_t* dctx, float* dqkv) {
    const AttentionGeometry& a = attention;
    SD_CUDA_CHECK(
        cudaMemsetAsync(dqkv, 0, static_cast<std::size_t>(tokens * a.ld) * sizeof(float), compute));
    for (std::int64_t b = 0; b < config.micro_batch; ++b) {
      const std::uint16_t* base = qkv_out + b * a.s * a.ld;
      float* dbase = dqkv + b * a.s * a.ld;
      for (int hh = 0; hh < a.heads; ++hh) {
        const std::int64_t qo = hh * a.d, ko = a.q_cols + (hh / a.group) * a.d,
                           vo = a.q_cols + a.kv_cols + (hh / a.group) * a.d;
        const std::uint16_t* dc = dctx + b * a.s * a.q_cols + hh * a.d;
        void* ws = workspace.get();
        att_scores->enqueue(base + qo, base + ko, scores.get(), ws, compute);
        att_dscores->enqueue(dc, base + vo, dscores.get(), ws, compute);
        att_dv->enqueue(scores.get(), dc, dbase + vo, ws, compute);
        att_dq->enqueue(dscores.get(), base + ko, dbase + qo, ws, compute);
        att_dk->enqueue(dscores.get(), base + qo, dbase + ko, ws, compute);
      }
    }
  }

  const BucketPlan* plan = nullptr;
};

// A device allocation that fails names what to shrink (the step allocates everything here, none
// in a step); `shakedown plan` gives the budget before a run.
DeviceTrainStep::DeviceTrainStep(const StepConfig& config, NcclComm& tp, NcclComm& dp) try
    : s_(std::make_unique<State>(config, tp, dp)) {
  State& s = *s_;
  check_step(config);
  if (tp.size() != config.parallel.tp) {
    throw InternalError("DeviceTrainStep: tp group size mismatch");
  }
  if (fp8::forward_format(config.recipe) == fp8::Format::kE5M2 &&
      fp8::backward_format(config.recipe) == fp8::Format::kE5M2) {
    throw UsageError(
        "train: E5M2 in both operands of a GEMM, which cuBLASLt's FP8 kernels do not take; use "
        "train.format hybrid (E4M3 forward, E5M2 gradients) or e4m3");
  }
  s.compute = s.compute_stream.get();
  s.tp_stream = static_cast<cudaStream_t>(tp.stream());
  s.reduce = static_cast<cudaStream_t>(dp.stream());
  s.tp_active = tp.size() > 1 || config.tp1_collectives;
  s.dp_size = dp.size();
  s.dp_rank = dp.rank();
  s.linears = layer_linears(config.shape, config.parallel.tp);
  s.tokens = config.micro_batch * config.seq_len;
  if (s.tokens > kernels::kMaxTransposeRows) {
    throw UsageError("train: micro_batch x seq_len is " + std::to_string(s.tokens) +
                     " tokens per step; the GPU step takes at most " +
                     std::to_string(kernels::kMaxTransposeRows) +
                     " (its transposes' grid): lower train.micro_batch or train.seq_len");
  }
  s.rows = config.parallel.sequence_parallel ? s.tokens / config.parallel.tp : s.tokens;
  s.attention = attention_geometry(config);
  const ModelShape& m = config.shape;
  const int layers = m.layers;
  const std::int64_t T = s.tokens;

  plan_ = plan_step_buckets(config, s.dp_size);
  s.plan = &plan_;
  const std::int64_t total = plan_.total_padded;
  s.master = floats(total);
  s.grads = floats(total);
  s.adam_m = floats(total);
  s.adam_v = floats(total);
  if (config.parallel.zero == 1) s.shard = floats(total / s.dp_size);
  for (cublaslt::DeviceMemory* d : {&s.master, &s.grads, &s.adam_m, &s.adam_v}) {
    SD_CUDA_CHECK(cudaMemsetAsync(d->get(), 0, d->bytes(), s.compute));
  }
  // The same weights as the host step's, filled on the device.
  for (int l = 0; l < layers; ++l) {
    for (int j = 0; j < kLinears; ++j) {
      const LinearShape& lin = s.linears[static_cast<std::size_t>(j)];
      kernels::launch_fill_uniform(
          f32(s.master, plan_.tensor_offset[static_cast<std::size_t>(l * kLinears + j)]),
          lin.n * lin.k, weight_key(config.seed, l * kLinears + j, tp.rank()),
          std::sqrt(3.0f / static_cast<float>(lin.k)), s.compute);
    }
  }

  const int slots = layers * kLinears * kRoles;
  s.scaling.assign(static_cast<std::size_t>(slots), fp8::make_scaling_state(config.delayed));
  s.scale = floats(slots);
  s.scale_inv = floats(slots);
  s.amax = floats(slots);
  s.upload_scales();  // 1, as the scaling states start
  SD_CUDA_CHECK(cudaMemcpyAsync(s.scale_inv.get(), s.scale.get(), s.scale.bytes(),
                                cudaMemcpyDeviceToDevice, s.compute));

  std::int64_t widest = m.hidden, largest_weight = 0;
  for (const LinearShape& lin : s.linears) {
    widest = std::max({widest, lin.n, lin.k});
    largest_weight = std::max(largest_weight, lin.n * lin.k);
  }
  const std::int64_t big = std::max(T * widest, largest_weight);
  for (cublaslt::DeviceMemory* d : {&s.x, &s.norm, &s.out_f32, &s.reduced, &s.dy, &s.dx,
                                    &s.residual, &s.spare, &s.transposed}) {
    *d = floats(big);
  }
  s.out_bf16 = cublaslt::DeviceMemory(static_cast<std::size_t>(big) * 2);
  s.q_a = cublaslt::DeviceMemory(static_cast<std::size_t>(big));
  s.q_b = cublaslt::DeviceMemory(static_cast<std::size_t>(big));
  s.weights.resize(static_cast<std::size_t>(layers * kLinears));
  s.weights_t.resize(static_cast<std::size_t>(layers * kLinears));
  s.inputs.resize(static_cast<std::size_t>(layers));
  s.qkv.resize(static_cast<std::size_t>(layers));
  for (int l = 0; l < layers; ++l) {
    for (int j = 0; j < kLinears; ++j) {
      const LinearShape& lin = s.linears[static_cast<std::size_t>(j)];
      s.weights[static_cast<std::size_t>(l * kLinears + j)] =
          cublaslt::DeviceMemory(static_cast<std::size_t>(lin.n * lin.k));
      s.weights_t[static_cast<std::size_t>(l * kLinears + j)] =
          cublaslt::DeviceMemory(static_cast<std::size_t>(lin.n * lin.k));
      s.inputs[static_cast<std::size_t>(l)][static_cast<std::size_t>(j)] = floats(T * lin.k);
    }
    s.qkv[static_cast<std::size_t>(l)] =
        cublaslt::DeviceMemory(static_cast<std::size_t>(T * s.linears[0].n) * 2);
  }
  const AttentionGeometry& a = s.attention;
  s.scores = cublaslt::DeviceMemory(static_cast<std::size_t>(a.s * a.s) * 2);
  s.dscores = cublaslt::DeviceMemory(static_cast<std::size_t>(a.s * a.s) * 2);
  s.workspace = cublaslt::DeviceMemory(cublaslt::kWorkspaceBytes);

  // The GEMMs. Forward: D [T, n] = X [T, k] . W [n, k]^T; dgrad: dX [T, k] = dY [T, n] .
  // (W^T [k, n])^T; wgrad: dW [n, k] = dY^T [n, T] . (X^T [k, T])^T, fp32 into the gradients.
  const auto name = [](int l, int j, const char* what) {
    return std::string(what) + " of layer " + std::to_string(l) + " Linear " + std::to_string(j);
  };
  for (int l = 0; l < layers; ++l) {
    for (int j = 0; j < kLinears; ++j) {
      const LinearShape& lin = s.linears[static_cast<std::size_t>(j)];
      cublaslt::MatmulSpec f;
      f.m = T;
      f.n = lin.n;
      f.k = lin.k;
      f.a_type = cublaslt::cuda_type(s.format(kInput));
      f.b_type = cublaslt::cuda_type(s.format(kWeight));
      f.d_type = CUDA_R_16BF;
      f.fast_accum = true;
      f.a_scale = f32(s.scale_inv, s.slot(l, j, kInput));
      f.b_scale = f32(s.scale_inv, s.slot(l, j, kWeight));
      f.min_alignment_bytes = kAlignment;
      s.fwd.push_back(std::make_unique<cublaslt::Matmul>(
          s.handle.get(), f, cublaslt::kWorkspaceBytes, name(l, j, "forward")));
      cublaslt::MatmulSpec d = f;
      d.n = lin.k;
      d.k = lin.n;
      d.a_type = cublaslt::cuda_type(s.format(kGrad));
      d.fast_accum = false;
      d.a_scale = f32(s.scale_inv, s.slot(l, j, kGrad));
      s.dgrad.push_back(std::make_unique<cublaslt::Matmul>(
          s.handle.get(), d, cublaslt::kWorkspaceBytes, name(l, j, "dgrad")));
      cublaslt::MatmulSpec w = d;
      w.m = lin.n;
      w.n = lin.k;
      w.k = T;
      w.b_type = cublaslt::cuda_type(s.format(kInput));
      w.b_scale = f32(s.scale_inv, s.slot(l, j, kInput));
      w.d_type = CUDA_R_32F;
      s.wgrad.push_back(std::make_unique<cublaslt::Matmul>(
          s.handle.get(), w, cublaslt::kWorkspaceBytes, name(l, j, "wgrad")));
    }
  }
  // Core attention per head (bf16, fp32 accumulation): S = alpha Q K^T [s, s]; ctx = S V;
  // backward dS = dC V^T, dV += S^T dC, dQ = alpha dS K, dK += alpha dS^T Q.
  const auto bf16 = [&](std::int64_t mm, std::int64_t nn, std::int64_t kk) {
    cublaslt::MatmulSpec spec;
    spec.m = mm;
    spec.n = nn;
    spec.k = kk;
    spec.a_type = CUDA_R_16BF;
    spec.b_type = CUDA_R_16BF;
    spec.d_type = CUDA_R_16BF;
    spec.min_alignment_bytes = kAlignment;
    return spec;
  };
  const auto make = [&](const cublaslt::MatmulSpec& spec, const char* what) {
    return std::make_unique<cublaslt::Matmul>(s.handle.get(), spec, cublaslt::kWorkspaceBytes,
                                              std::string("attention ") + what);
  };
  cublaslt::MatmulSpec sc = bf16(a.s, a.s, a.d);
  sc.lda = a.ld;
  sc.ldb = a.ld;
  sc.alpha = a.alpha;
  s.att_scores = make(sc, "scores");
  cublaslt::MatmulSpec ctx = bf16(a.s, a.d, a.s);
  ctx.b_transposed = true;
  ctx.ldb = a.ld;
  ctx.d_type = CUDA_R_32F;
  ctx.ldd = a.q_cols;
  s.att_ctx = make(ctx, "context");
  cublaslt::MatmulSpec ds = bf16(a.s, a.s, a.d);
  ds.lda = a.q_cols;
  ds.ldb = a.ld;
  s.att_dscores = make(ds, "score gradient");
  cublaslt::MatmulSpec dv = bf16(a.s, a.d, a.s);
  dv.a_transposed = true;
  dv.b_transposed = true;
  dv.ldb = a.q_cols;
  dv.d_type = CUDA_R_32F;
  dv.ldd = a.ld;
  dv.beta = 1.0f;
  s.att_dv = make(dv, "value gradient");
  cublaslt::MatmulSpec dq = bf16(a.s, a.d, a.s);
  dq.b_transposed = true;
  dq.ldb = a.ld;
  dq.d_type = CUDA_R_32F;
  dq.ldd = a.ld;
  dq.alpha = a.alpha;
  s.att_dq = make(dq, "query gradient");
  cublaslt::MatmulSpec dk = dq;
  dk.a_transposed = true;
  dk.beta = 1.0f;
  s.att_dk = make(dk, "key gradient");

  const std::size_t nb = plan_.buckets.size();
  s.bucket_start.assign(nb, nullptr);
  s.bucket_end.assign(nb, nullptr);
  timings_.assign(nb, {});
  flops_ = rank_flops_per_step(config);
  s.wait_streams(true);
} catch (const OutOfMemory& e) {
  throw OutOfMemory(
      std::string(e.what()) +
          "; the GPU step's weights, gradients, Adam state and activations do not fit "
          "this GPU (`shakedown plan` gives the memory budget): lower train.layers, "
          "train.seq_len or train.micro_batch, raise train.tp, or set train.zero: 1",
      e.detail());
}

DeviceTrainStep::~DeviceTrainStep() {
  // Nothing in flight may still use the buffers freed next. Left by an exception (a failed
  // peer, the watchdog) with collectives posted and not seen to finish, NCCL kernels may wait
  // forever: those communicators are aborted first, as they would be next when the phase's
  // unwinding reaches them. One with nothing in flight is left alone (NcclComm's own rule:
  // aborting may wait for ranks that never come), whatever the exception was.
  if (s_) {
    if (std::uncaught_exceptions() > 0) {
      if (s_->tp.in_flight()) s_->tp.abort();
      if (s_->dp.in_flight()) s_->dp.abort();
    }
    (void)cudaStreamSynchronize(s_->compute);
    (void)cudaStreamSynchronize(s_->tp_stream);
    (void)cudaStreamSynchronize(s_->reduce);
  }
}

std::int64_t DeviceTrainStep::tokens_per_step() const {
  return s_->tokens;
}

StepTimes DeviceTrainStep::run(int step, const StepFault& fault) {
  State& s = *s_;
  const StepConfig& c = s.config;
  const ModelShape& m = c.shape;
  const int layers = m.layers;
  const std::int64_t T = s.tokens, rows = s.rows;
  const bool sp = c.parallel.sequence_parallel;
  const std::size_t nb = plan_.buckets.size();
  const cudaStream_t cs = s.compute;
  s.events.reset();
  s.tp_calls.clear();
  s.slow_factor = fault.slow_factor;
  s.bucket_started.assign(nb, false);
  s.bucket_pending.assign(nb, 0);
  for (int b : plan_.tensor_bucket) ++s.bucket_pending[static_cast<std::size_t>(b)];

  // Every stream is idle here (the last step, or the constructor, waited for them), so the
  // start event completes at once and t0 is its time on this host's clock.
  State::Event& ev_start = s.events.next();
  ev_start.record(cs);
  const double t0 = steady_seconds();
  s.mark = t0;
  SD_CUDA_CHECK(cudaMemsetAsync(s.amax.get(), 0, s.amax.bytes(), cs));
  SD_CUDA_CHECK(cudaMemsetAsync(s.grads.get(), 0, s.grads.bytes(), cs));
  // The batch, and (below) the output gradient: the host step's values; this rank's rows
  // under SP.
  const auto fill_rows = [&](cublaslt::DeviceMemory& out, std::uint64_t key, float a) {
    if (!sp) {
      kernels::launch_fill_uniform(f32(out), T * m.hidden, key, a, cs);
      return;
    }
    kernels::launch_fill_uniform(f32(s.spare), T * m.hidden, key, a, cs);
    SD_CUDA_CHECK(cudaMemcpyAsync(f32(out), f32(s.spare, s.tp.rank() * rows * m.hidden),
                                  static_cast<std::size_t>(rows * m.hidden) * sizeof(float),
                                  cudaMemcpyDeviceToDevice, cs));
  };
  fill_rows(s.x, batch_key(c.seed, s.dp_rank, step), 1.0f);

  // ---- forward ----
  s.part = State::kForward;
  State::Event& ev_fwd = s.events.next();
  ev_fwd.record(cs);
  // The weights' FP8 copies and transposes, as TE casts them in the forward of each step: in
  // the forward's time (outside every component, they were a quarter to half of a large
  // layer's step that no part of the breakdown showed).
  for (int l = 0; l < layers; ++l) {
    for (int j = 0; j < kLinears; ++j) {
      const LinearShape& lin = s.linears[static_cast<std::size_t>(j)];
      const auto t = static_cast<std::size_t>(l * kLinears + j);
      const float* w = f32(s.master, plan_.tensor_offset[t]);
      s.quantize(w, lin.n * lin.k, s.slot(l, j, kWeight), kWeight, s.weights[t].as<std::uint8_t>());
      s.quantize_t(w, lin.n, lin.k, s.slot(l, j, kWeight), kWeight,
                   s.weights_t[t].as<std::uint8_t>());
    }
  }
  std::uint8_t* qa = s.q_a.as<std::uint8_t>();
  std::uint8_t* qb = s.q_b.as<std::uint8_t>();
  auto* out16 = s.out_bf16.as<std::uint16_t>();
  const auto weight = [&](int l, int j) {
    return s.weights[static_cast<std::size_t>(l * kLinears + j)].get();
  };
  const auto norm_input = [&](int l, int j) {
    float* in = f32(s.inputs[static_cast<std::size_t>(l)][static_cast<std::size_t>(j)]);
    if (!sp) {
      kernels::launch_rms_norm(f32(s.x), rows, m.hidden, in, cs);
      return;
    }
    kernels::launch_rms_norm(f32(s.x), rows, m.hidden, f32(s.norm), cs);
    if (s.tp_active) {
      s.gather_rows(f32(s.norm), m.hidden, in);
    } else {
      SD_CUDA_CHECK(cudaMemcpyAsync(in, f32(s.norm),
                                    static_cast<std::size_t>(T * m.hidden) * sizeof(float),
                                    cudaMemcpyDeviceToDevice, cs));
    }
  };
  // A row-parallel GEMM's bf16 output [T, h] reduced over TP and added to the residual stream.
  const auto add_partial = [&]() {
    kernels::launch_widen_bf16(out16, T * m.hidden, f32(s.out_f32), cs);
    s.reduce_partial(s.out_f32, m.hidden);
    kernels::launch_add(f32(s.x), f32(s.out_f32), rows * m.hidden, cs);
  };
  for (int l = 0; l < layers; ++l) {
    auto& in = s.inputs[static_cast<std::size_t>(l)];
    const auto fwd = [&](int j) -> const cublaslt::Matmul& {
      return *s.fwd[static_cast<std::size_t>(l * kLinears + j)];
    };
    norm_input(l, 0);
    s.quantize(f32(in[0]), T * m.hidden, s.slot(l, 0, kInput), kInput, qa);
    auto* qkv = s.qkv[static_cast<std::size_t>(l)].as<std::uint16_t>();
    fwd(0).enqueue(qa, weight(l, 0), qkv, s.workspace.get(), cs);
    s.attention_forward(qkv, f32(in[1]));
    s.quantize(f32(in[1]), T * s.linears[1].k, s.slot(l, 1, kInput), kInput, qa);
    fwd(1).enqueue(qa, weight(l, 1), out16, s.workspace.get(), cs);
    add_partial();
    norm_input(l, 2);
    s.quantize(f32(in[2]), T * m.hidden, s.slot(l, 2, kInput), kInput, qa);
    fwd(2).enqueue(qa, weight(l, 2), out16, s.workspace.get(), cs);
    const std::int64_t f = s.linears[3].k;
    kernels::launch_mlp_activation(out16, T, s.linears[2].n, f, m.mlp == Mlp::kSwiglu, f32(in[3]),
                                   cs);
    s.quantize(f32(in[3]), T * f, s.slot(l, 3, kInput), kInput, qa);
    fwd(3).enqueue(qa, weight(l, 3), out16, s.workspace.get(), cs);
    add_partial();
  }
  s.slow_down();
  State::Event& ev_fwd_end = s.events.next();
  ev_fwd_end.record(cs);
  s.resume();

  // ---- backward ----
  s.part = State::kBackward;
  State::Event& ev_bwd = s.events.next();
  ev_bwd.record(cs);
  fill_rows(s.dy, output_grad_key(c.seed, s.dp_rank, step), 1e-2f);
  for (int l = layers - 1; l >= 0; --l) {
    auto& in = s.inputs[static_cast<std::size_t>(l)];
    // The gradient that skips the block (residual path).
    SD_CUDA_CHECK(cudaMemcpyAsync(f32(s.residual), f32(s.dy),
                                  static_cast<std::size_t>(rows * m.hidden) * sizeof(float),
                                  cudaMemcpyDeviceToDevice, cs));
    for (int j = kLinears - 1; j >= 0; --j) {
      const LinearShape& lin = s.linears[static_cast<std::size_t>(j)];
      const int tensor = l * kLinears + j;
      const auto t = static_cast<std::size_t>(tensor);
      const int g = s.slot(l, j, kGrad);
      // Under SP a row-parallel Linear's output gradient arrives as this rank's rows: gathered.
      if (sp && !lin.column && s.tp_active) {
        s.gather_rows(f32(s.dy), lin.n, f32(s.spare));
        std::swap(s.dy, s.spare);
      }
      // dY [T, n]: FC1's is FC2's dgrad widened to SwiGLU's two halves.
      if (j == 2 && m.mlp == Mlp::kSwiglu) {
        kernels::launch_widen_swiglu_grad(f32(s.dy), T, lin.n / 2, f32(s.spare), cs);
        std::swap(s.dy, s.spare);
      }
      s.quantize(f32(s.dy), T * lin.n, g, kGrad, qa);
      s.dgrad[t]->enqueue(qa, s.weights_t[t].get(), out16, s.workspace.get(), cs);
      // Column-parallel dgrad: partial sums over TP, all-reduced (reduce-scattered under SP) on
      // the TP stream while the wgrad runs. The proj's dgrad stays bf16 for attention.
      State::Event* partial = nullptr;
      if (j != 1) {
        kernels::launch_widen_bf16(out16, T * lin.k, f32(s.dx), cs);
        if (lin.column) partial = s.post_partial(s.dx, lin.k);
      }
      // wgrad: dW [n, k] = dY^T X, fp32 into the gradient buffer (TE's main_grad).
      s.quantize_t(f32(s.dy), T, lin.n, g, kGrad, qa);
      s.quantize_t(f32(in[static_cast<std::size_t>(j)]), T, lin.k, s.slot(l, j, kInput), kInput,
                   qb);
      s.wgrad[t]->enqueue(qa, qb, f32(s.grads, plan_.tensor_offset[t]), s.workspace.get(), cs);
      s.tensor_done(tensor);
      if (j == 1) {
        s.attention_backward(s.qkv[static_cast<std::size_t>(l)].as<std::uint16_t>(), out16,
                             f32(s.spare));
        std::swap(s.dy, s.spare);
        continue;
      }
      if (lin.column) {
        // The reduced dgrad, through the norm (its derivative left out) and the residual join.
        s.finish_partial(partial, s.dx);
        kernels::launch_add(f32(s.dx), f32(s.residual), rows * lin.k, cs);
        SD_CUDA_CHECK(cudaMemcpyAsync(f32(s.residual), f32(s.dx),
                                      static_cast<std::size_t>(rows * lin.k) * sizeof(float),
                                      cudaMemcpyDeviceToDevice, cs));
      }
      std::swap(s.dy, s.dx);
    }
  }
  s.slow_down();
  State::Event& ev_bwd_end = s.events.next();
  ev_bwd_end.record(cs);
  s.resume();
  if (!c.overlap) {
    for (std::size_t b = 0; b < nb; ++b) s.start_bucket(static_cast<int>(b));
  }
  for (std::size_t b = 0; b < nb; ++b) {
    if (!s.bucket_started[b]) {
      throw InternalError("DeviceTrainStep: bucket " + std::to_string(b) + " never started");
    }
  }
  s.join_reduce();
  State::Event& ev_dp_waited = s.events.next();
  ev_dp_waited.record(cs);

  // ---- optimizer ----
  s.part = State::kOptimizer;
  State::Event& ev_opt = s.events.next();
  ev_opt.record(cs);
  const bool zero = c.parallel.zero == 1;
  // The injected corruption, as the host step: the reduced gradient (zero 0), or this rank's
  // parameters after their all-gather (zero 1).
  if (fault.flip_gradient_bit && !zero) {
    kernels::launch_flip_largest(f32(s.grads), plan_.total_padded, 22, cs);
  }
  if (s.tp_active) {
    s.tp_run(CollectiveKind::kAllReduce, f32(s.amax), f32(s.amax),
             static_cast<std::int64_t>(s.scaling.size()), ReduceOp::kMax);
  }
  if (!c.current_scaling) {
    // The reduced amaxes, once the compute stream has them (a copy into pageable memory would
    // block the host inside CUDA, without the failed-peer checks of the wait).
    s.wait_streams(false);
    std::vector<float> step_amax(s.scaling.size());
    SD_CUDA_CHECK(cudaMemcpyAsync(step_amax.data(), s.amax.get(), s.amax.bytes(),
                                  cudaMemcpyDeviceToHost, cs));
    SD_CUDA_CHECK(cudaStreamSynchronize(cs));
    for (std::size_t i = 0; i < s.scaling.size(); ++i) {
      fp8::record_amax(s.scaling[i], step_amax[i]);
      fp8::update_scale(c.delayed, s.format(static_cast<Role>(i % kRoles)), s.scaling[i]);
    }
    s.upload_scales();
  }
  // Adam (lr 1e-4, betas 0.9 / 0.999, eps 1e-8) on the mean gradient.
  ++s.adam_step;
  const AdamParams adam = adam_params(s.adam_step, 1.0f / static_cast<float>(s.dp_size));
  if (zero) {
    for (const Bucket& b : plan_.buckets) {
      const std::int64_t part = b.padded / s.dp_size;
      const std::int64_t at = b.offset + s.dp_rank * part;
      kernels::launch_adam(f32(s.master, at), f32(s.adam_m, at), f32(s.adam_v, at),
                           f32(s.shard, b.offset / s.dp_size), part, adam, cs);
    }
    // The updated shards all-gathered on the reduction stream, after Adam.
    State::Event& updated = s.events.next();
    updated.record(cs);
    SD_CUDA_CHECK(cudaStreamWaitEvent(s.reduce, updated.get(), 0));
    for (const Bucket& b : plan_.buckets) {
      const std::int64_t part = b.padded / s.dp_size;
      s.dp.run(CollectiveKind::kAllGather, f32(s.master, b.offset + s.dp_rank * part),
               f32(s.master, b.offset), static_cast<std::uint64_t>(part), DType::kFloat32,
               ReduceOp::kSum, 0);
    }
    s.join_reduce();
    if (fault.flip_gradient_bit) {
      kernels::launch_flip_largest(f32(s.master), plan_.total_padded, 22, cs);
    }
  } else {
    kernels::launch_adam(f32(s.master), f32(s.adam_m), f32(s.adam_v), f32(s.grads),
                         plan_.total_padded, adam, cs);
  }
  State::Event& ev_end = s.events.next();
  ev_end.record(cs);
  s.wait_streams(true);

  StepTimes times;
  double tp_part[3] = {0, 0, 0};
  for (const State::TpCall& call : s.tp_calls) {
    tp_part[call.part] += std::max(0.0, State::Event::seconds(*call.from, *call.end));
  }
  times.fwd_s = State::Event::seconds(ev_fwd, ev_fwd_end) - tp_part[State::kForward];
  times.bwd_s = State::Event::seconds(ev_bwd, ev_bwd_end) - tp_part[State::kBackward];
  times.tp_comm_s =
      tp_part[State::kForward] + tp_part[State::kBackward] + tp_part[State::kOptimizer];
  times.dp_exposed_s = State::Event::seconds(ev_bwd_end, ev_dp_waited);
  // Without its amax all-reduce's wait, which tp_comm_s counts.
  times.optim_s = State::Event::seconds(ev_opt, ev_end) - tp_part[State::kOptimizer];
  times.step_s = State::Event::seconds(ev_start, ev_end);
  times.backward_end_s = t0 + State::Event::seconds(ev_start, ev_bwd_end);
  double first = 0, last = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    const double start = State::Event::seconds(ev_start, *s.bucket_start[b]);
    const double end = State::Event::seconds(ev_start, *s.bucket_end[b]);
    timings_[b] = {t0 + start, t0 + end};
    first = b == 0 ? start : std::min(first, start);
    last = b == 0 ? end : std::max(last, end);
  }
  times.dp_span_s = nb == 0 ? 0.0 : last - first;

  // After the timed step: the zero share of the gradient buffer's tensors (its padding is
  // always 0, so it is taken off).
  std::int64_t tensor_elements = 0;
  for (const LinearShape& lin : s.linears) tensor_elements += lin.n * lin.k;
  tensor_elements *= layers;
  const std::uint64_t zeros = kernels::count_zeros(f32(s.grads), plan_.total_padded, cs);
  const std::int64_t padding = plan_.total_padded - tensor_elements;
  zero_share_ = static_cast<double>(static_cast<std::int64_t>(zeros) - padding) /
                static_cast<double>(plan_.total_padded);
  return times;
}

std::uint64_t DeviceTrainStep::parameter_hash() const {
  return kernels::output_hash(s_->master.get(), plan_.total_padded, kernels::OutType::kFP32,
                              s_->compute);
}

namespace {

std::vector<float> to_host(const cublaslt::DeviceMemory& m, cudaStream_t stream) {
  std::vector<float> out(m.bytes() / sizeof(float));
  SD_CUDA_CHECK(cudaMemcpyAsync(out.data(), m.get(), m.bytes(), cudaMemcpyDeviceToHost, stream));
  SD_CUDA_CHECK(cudaStreamSynchronize(stream));
  return out;
}

}  // namespace

std::vector<float> DeviceTrainStep::master_weights() const {
  return to_host(s_->master, s_->compute);
}

std::vector<float> DeviceTrainStep::gradients() const {
  return to_host(s_->grads, s_->compute);
}

std::vector<float> DeviceTrainStep::scales() const {
  return to_host(s_->scale, s_->compute);
}

bool DeviceTrainStep::scales_finite() const {
  const State& s = *s_;
  for (const fp8::ScalingState& st : s.scaling) {
    for (float a : st.amax_history) {
      if (!std::isfinite(a)) return false;
    }
  }
  // The scales the GEMMs used, as the device holds them (current scaling computes them there).
  const std::vector<float> scale = to_host(s.scale, s.compute);
  const std::vector<float> scale_inv = to_host(s.scale_inv, s.compute);
  for (std::size_t i = 0; i < scale.size(); ++i) {
    if (!std::isfinite(scale[i]) || !(scale[i] > 0) || !std::isfinite(scale_inv[i]) ||
        !(scale_inv[i] > 0)) {
      return false;
    }
  }
  return true;
}

}  // namespace shakedown::train

#endif  // SHAKEDOWN_HAVE_CUDA
