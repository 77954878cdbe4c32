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
// gradients under hybrid), the column-parallel dgrads all-reduced over TP; each wgrad lands in
// the flat gradient buffer and a full bucket is handed to the DP reducer at once (overlap) or
// everything is reduced after backward (no overlap). Then the amaxes are max-reduced over the
// world, the scales updated, Adam runs on the fp32 master weights (on this rank's shard with
// zero: 1, then the parameters are all-gathered), and the next step re-quantises the weights.
// With sequence parallelism the activations between blocks are [T / tp, h] shards: all-gathered
// before QKV and FC1, reduce-scattered after proj and FC2 (forward), and in backward the output
// gradient of a row-parallel Linear is all-gathered and a column-parallel dgrad reduce-scattered
// (Korthikanti et al. 2022; TE's placement). The gathered GEMM inputs are kept for wgrad rather
// than gathered again, and the gathers move fp32 (TE moves FP8 there).
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/comm.hpp"
#include "fp8/scaling.hpp"
#include "gemm/engine.hpp"
#include "train/buckets.hpp"
#include "train/dp_reducer.hpp"
#include "train/model.hpp"

namespace shakedown::train {

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
};

struct StepTimes {
  double step_s = 0;
  double fwd_s = 0;         // forward compute (GEMMs, attention, quantisation), no TP waits
  double bwd_s = 0;         // backward compute, likewise
  double tp_comm_s = 0;     // blocked in TP collectives, forward and backward
  double dp_exposed_s = 0;  // blocked waiting for DP reductions after backward
  double dp_span_s = 0;     // first DP bucket posted to last completed
  double optim_s = 0;       // amax reduction, scale update, Adam, parameter all-gather
  double backward_end_s = 0;  // steady clock when backward's compute ended (the DP arrival)
};

// What --inject asks of this rank for one step.
struct StepFault {
  // A silent data corruption: one bit of the reduced gradient (zero 0) or, under zero 1, of the
  // parameters after their all-gather (a corrupted shard would reach every replica alike).
  bool flip_gradient_bit = false;
  double slow_factor = 1.0;  // forward and backward compute take this many times longer (sleeps)
};

class TrainStep {
 public:
  // tp: the tensor-parallel group (a Comm over host memory); dp: the data-parallel group.
  // UsageError for what this backend cannot run (a non-host Comm; SP with tp not dividing the
  // tokens).
  TrainStep(const StepConfig& config, GemmEngine& engine, Comm& tp, MPI_Comm dp);
  ~TrainStep();
  TrainStep(const TrainStep&) = delete;
  TrainStep& operator=(const TrainStep&) = delete;

  StepTimes run(int step, const StepFault& fault = {});

  // xxh3 of this rank's fp32 master weights: equal on every replica of a TP rank.
  std::uint64_t parameter_hash() const;
  // Every scale and scale_inv finite and > 0, every amax history entry finite.
  bool scales_finite() const;
  // Share of the last step's gradient buffer that is exactly 0 (counted after the timed step;
  // under zero 0 the buffer holds the reduced gradients): near 0 while activations and
  // gradients flow, 1 when FP8 underflow wiped a layer out.
  double zero_gradient_share() const { return zero_share_; }
  const BucketPlan& buckets() const { return plan_; }
  const std::vector<BucketTiming>& bucket_timings() const;
  double flops_per_step() const { return flops_; }  // this rank's share (model FLOPs / tp)
  std::int64_t tokens_per_step() const;             // this replica's tokens

  struct State;

 private:
  // plan_ first: the State's reducer refers to it, so it must outlive the State.
  BucketPlan plan_;
  std::unique_ptr<State> s_;
  double flops_ = 0;
  double zero_share_ = 0;
};

}  // namespace shakedown::train
