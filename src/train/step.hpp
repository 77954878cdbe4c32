#pragma once
// One synthetic training step of a tensor- and data-parallel FP8 transformer, as Transformer
// Engine + Megatron run it, on the MPI backend (host memory, a GemmEngine for the FP8 GEMMs).
// A load skeleton: the GEMMs, the communication and the optimizer are real and in the real
// order with the real shapes; the elementwise parts are simplified (no softmax, no norms, no
// dropout, GeLU as x * sigmoid(1.702 x), its derivative left out of backward) - they cost little
// next to the GEMMs and change no shape or byte that moves.
//
// Per layer (train/model.hpp): QKV (column-parallel), core attention (scores and context as
// fp32 SGEMMs per head, heads / tp per rank), proj (row-parallel) + TP all-reduce, FC1
// (column-parallel), FC2 (row-parallel) + TP all-reduce. Backward in reverse: per Linear a
// dgrad (dX = dY W) and a wgrad (dW = dY^T X) as TN FP8 GEMMs on transposed FP8 copies (E5M2
// gradients under hybrid), the column-parallel dgrads reduced over TP without blocking while
// the wgrad runs (TE's async dgrad all-reduce); each wgrad lands in
// the flat gradient buffer and a full bucket is handed to the DP reducer at once (overlap) or
// everything is reduced after backward (no overlap). Then the amaxes are max-reduced over the
// TP group, the scales updated, Adam runs on the fp32 master weights (on this rank's shard with
// zero: 1, then the parameters are all-gathered), and the next step re-quantises the weights.
// With sequence parallelism the activations between blocks are [T / tp, h] shards: all-gathered
// before QKV and FC1, reduce-scattered after proj and FC2 (forward), and in backward the output
// gradient of a row-parallel Linear is all-gathered and a column-parallel dgrad reduce-scattered
// (Korthikanti et al. 2022; TE's placement). The gathered GEMM inputs are kept for wgrad rather
// than gathered again, and the gathers move fp32 (TE moves FP8 there).
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/mpi_comm.hpp"
#include "fp8/scaling.hpp"
#include "gemm/engine.hpp"
#include "train/buckets.hpp"
#include "train/dp_reducer.hpp"
#include "train/model.hpp"

namespace shakedown::train {

// The Linears of a layer (train/model.hpp layer_linears: qkv, proj, fc1, fc2) and the roles of
// each one's FP8 tensors; a tensor's delayed-scaling slot is (layer x kLinears + linear) x
// kRoles + role, in both steps.
inline constexpr int kLinears = 4;
enum Role { kInput = 0, kWeight = 1, kGrad = 2, kRoles = 3 };
inline int scaling_slot(int layer, int linear, Role role) {
  return (layer * kLinears + linear) * kRoles + role;
}

struct StepConfig {
  ModelShape shape;
  Parallel parallel;
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 128;
  fp8::Recipe recipe = fp8::Recipe::kHybrid;
  bool current_scaling = false;  // else delayed
  fp8::DelayedScaling delayed;
  bool overlap = true;
  double bucket_mb = 25;
  double first_bucket_mb = 1;  // DDP's first bucket (kDefaultFirstBucketBytes)
  std::uint64_t seed = 1;
  // Tests only, device step: run the TP collectives through a 1-rank group too (they are
  // skipped at tp 1), so one GPU exercises their streams and events; no result changes.
  bool tp1_collectives = false;
};

struct StepTimes {
  double step_s = 0;
  double fwd_s = 0;  // forward compute (the weights' FP8 casts, GEMMs, attention, quantisation),
                     // no TP waits
  double bwd_s = 0;  // backward compute, likewise
  double tp_comm_s = 0;       // blocked in TP collectives: forward, backward and the
                              // optimizer's amax reduction
  double dp_exposed_s = 0;    // blocked waiting for DP reductions after backward
  double dp_span_s = 0;       // first DP bucket posted to last completed
  double optim_s = 0;         // scale update, Adam, parameter all-gather (not the amax wait)
  double backward_end_s = 0;  // steady clock when backward's compute ended (the DP arrival)
};

// What --inject asks of this rank for one step.
struct StepFault {
  // A silent data corruption: one bit of the reduced gradient (zero 0) or, under zero 1, of the
  // parameters after their all-gather (a corrupted shard would reach every replica alike).
  bool flip_gradient_bit = false;
  double slow_factor = 1.0;  // forward and backward compute take this many times longer (sleeps)
};

// What the train phase asks of a step, whichever memory it runs in: TrainStep (host memory, MPI)
// or DeviceTrainStep (train/device_step.hpp: GPU memory, cuBLASLt, NCCL).
class Step {
 public:
  virtual ~Step() = default;
  virtual StepTimes run(int step, const StepFault& fault) = 0;
  // A hash of this rank's fp32 master weights: equal on every replica of a TP rank.
  virtual std::uint64_t parameter_hash() const = 0;
  // Every scale and scale_inv finite and > 0, every amax history entry finite.
  virtual bool scales_finite() const = 0;
  // Share of the last step's gradient buffer that is exactly 0 (counted after the timed step;
  // under zero 0 the buffer holds the reduced gradients): near 0 while activations and
  // gradients flow, 1 when FP8 underflow wiped a layer out.
  virtual double zero_gradient_share() const = 0;
  virtual const BucketPlan& buckets() const = 0;
  virtual const std::vector<BucketTiming>& bucket_timings() const = 0;
  virtual double flops_per_step() const = 0;         // this rank's share (model FLOPs / tp)
  virtual std::int64_t tokens_per_step() const = 0;  // this replica's tokens
  // For tests comparing the two steps: the fp32 master weights and the last step's gradient
  // buffer (reduced under zero 0), both in the bucket layout (the same in both steps), and each
  // FP8 tensor's scale (in scaling_slot order) as the next step will use it under delayed
  // scaling; under current scaling the device step gives the last step's own scales and the
  // host step its unused delayed state (1), so tests compare them under delayed scaling only.
  virtual std::vector<float> master_weights() const = 0;
  virtual std::vector<float> gradients() const = 0;
  virtual std::vector<float> scales() const = 0;
  // "cpu" or the GEMM engine's name, and the communication backend ("mpi", "nccl").
  virtual std::string engine() const = 0;
  virtual std::string communication() const = 0;
};

// Shared by both steps: this rank's model FLOPs per step (every Linear forward, dgrad and wgrad
// at 2 m n k each, and core attention's scores and context, forward x 3; the backward's
// recomputed scores are not model FLOPs, as MFU counts them).
double rank_flops_per_step(const StepConfig& config);
// The gradient buckets of the step (the forward-order tensors of every layer), each padded to a
// multiple of 64 elements and of `dp_size` (ZeRO 1's equal shards): every tensor then starts
// 256-byte aligned, as cuBLASLt's fastest kernels want for D, and the host and device steps
// lay their parameters and gradients out alike.
BucketPlan plan_step_buckets(const StepConfig& config, std::int64_t dp_size);
// UsageError when sequence parallelism is asked and tp does not divide the tokens.
void check_step(const StepConfig& config);

// Core attention's layout in the QKV output [T, qkv/t] of one TP rank: Q columns, then K, then
// V; `group` query heads share a kv head.
struct AttentionGeometry {
  std::int64_t d = 0, s = 0, ld = 0, q_cols = 0, kv_cols = 0;
  int heads = 0, group = 1;
  float alpha = 1;  // 1 / (sqrt(d) s): keeps the unnormalised scores' products bounded
};
AttentionGeometry attention_geometry(const StepConfig& config);

class TrainStep : public Step {
 public:
  // tp: the tensor-parallel group; dp: the data-parallel group. UsageError when SP is asked
  // and tp does not divide the tokens.
  TrainStep(const StepConfig& config, GemmEngine& engine, MpiComm& tp, MPI_Comm dp);
  ~TrainStep();
  TrainStep(const TrainStep&) = delete;
  TrainStep& operator=(const TrainStep&) = delete;

  StepTimes run(int step, const StepFault& fault) override;
  StepTimes run(int step) { return run(step, StepFault{}); }

  // xxh3 of this rank's fp32 master weights.
  std::uint64_t parameter_hash() const override;
  bool scales_finite() const override;
  double zero_gradient_share() const override { return zero_share_; }
  const BucketPlan& buckets() const override { return plan_; }
  const std::vector<BucketTiming>& bucket_timings() const override;
  double flops_per_step() const override { return flops_; }
  std::int64_t tokens_per_step() const override;
  std::vector<float> master_weights() const override;
  std::vector<float> gradients() const override;
  std::vector<float> scales() const override;
  std::string engine() const override;
  std::string communication() const override { return "mpi"; }

  struct State;

 private:
  // plan_ first: the State's reducer refers to it, so it must outlive the State.
  BucketPlan plan_;
  std::unique_ptr<State> s_;
  double flops_ = 0;
  double zero_share_ = 0;
};

}  // namespace shakedown::train
