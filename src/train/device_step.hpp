#pragma once
// The synthetic training step on the GPU, device-resident as Transformer Engine + Megatron run
// it: weights, activations, gradients and optimizer state in GPU memory; the FP8 GEMMs on
// cuBLASLt (TN only, so transposed FP8 copies for dgrad and wgrad, as TE keeps them; fast
// accumulation in forward, split accumulation in backward, as TE's defaults); core attention's
// score and context GEMMs in bf16 on cuBLASLt; the elementwise parts as kernels
// (kernels/train_kernels.hpp), all on the step's compute stream; TP collectives on the TP
// group's NCCL communicator and its stream, after the compute stream's work so far, the compute
// stream waiting for each at once except for the column-parallel dgrad's reduction, which runs
// while the wgrad does (TE's async dgrad all-reduce); DP reductions bucket by bucket on the DP
// communicator's stream, each started as soon as backward's compute stream has filled its
// bucket (overlap: true) or all after backward (overlap: false), and waited for by the compute
// stream at the end of backward. The same step as train/step.hpp (the host step, the reference):
// the same order, shapes, fills, scaling recipe and load-skeleton simplifications.
//
// Times come from CUDA events on the streams (the host does not wait inside a step, except
// under an injected slowdown and for the delayed-scaling update, which reads the step's amaxes
// once): compute time is the compute stream's time less how long it waited for TP collectives
// (for the overlapped dgrad reduction, only what the wgrad did not hide); the exposed DP time is
// how long the compute stream waited for the DP stream after backward.
// Only built with CUDA (SHAKEDOWN_HAVE_CUDA).
#if SHAKEDOWN_HAVE_CUDA

#include <memory>
#include <string>
#include <vector>

#include "comm/nccl_comm.hpp"
#include "train/step.hpp"

namespace shakedown::train {

class DeviceTrainStep : public Step {
 public:
  // tp: the TP group's NCCL communicator (its stream is the compute stream); dp: the DP group's.
  // Both on the current CUDA device. UsageError for what cannot run here (a shape cuBLASLt has
  // no FP8 kernel for, e5m2 in both GEMM operands); OutOfMemory when the GPU lacks the memory.
  DeviceTrainStep(const StepConfig& config, NcclComm& tp, NcclComm& dp);
  ~DeviceTrainStep() override;
  DeviceTrainStep(const DeviceTrainStep&) = delete;
  DeviceTrainStep& operator=(const DeviceTrainStep&) = delete;

  StepTimes run(int step, const StepFault& fault) override;
  // The device's own order-independent hash of the master weights (kernels::output_hash).
  std::uint64_t parameter_hash() const override;
  bool scales_finite() const override;
  double zero_gradient_share() const override { return zero_share_; }
  const BucketPlan& buckets() const override { return plan_; }
  const std::vector<BucketTiming>& bucket_timings() const override { return timings_; }
  double flops_per_step() const override { return flops_; }
  std::int64_t tokens_per_step() const override;
  std::vector<float> master_weights() const override;
  std::vector<float> gradients() const override;
  std::vector<float> scales() const override;
  std::string engine() const override { return "cublaslt"; }
  std::string communication() const override { return "nccl"; }

  struct State;

 private:
  BucketPlan plan_;
  std::unique_ptr<State> s_;
  std::vector<BucketTiming> timings_;
  double flops_ = 0;
  double zero_share_ = 0;
};

}  // namespace shakedown::train

#endif  // SHAKEDOWN_HAVE_CUDA
