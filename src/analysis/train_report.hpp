#pragma once
// The train phase's findings and summary block, from the run file alone (/train):
//  - train.coverage: how many steps ran on which layout (and on which engine);
//  - train.replicas: each rank's parameter hash against its DP replicas' after every step; a rank
//    off the majority is a silent-data-corruption or desync suspect (corruption: exit 3);
//  - train.numerics: FP8 scales finite, gradients not wiped out by underflow;
//  - train.stragglers: ranks whose compute (forward, backward; TP waits excluded) is slower than
//    the others', with the noise-aware rule of analysis/stragglers.hpp - not step time, which
//    every rank shares because everyone waits for the slowest;
//  - train.dp_arrival: TP groups that reach the DP reduction late (who the others waited for),
//    and whose compute explains it;
//  - train.mfu and train.memory: achieved TFLOP/s against the platform's (or the gemm phase's
//    measured) peak, and the memory budget against rank 0's GPU.
#include <string>
#include <vector>

#include "analysis/gemm_report.hpp"
#include "analysis/run_facts.hpp"
#include "record/findings.hpp"
#include "record/reader.hpp"

namespace shakedown {

struct TrainSummary {
  std::string layout;  // "custom 2 layers h256, tp 2 x dp 2, zero 0, overlap; engine cpu"
  std::string engine;  // the step's GEMM engine: cpu | cublaslt
  std::size_t steps = 0, world = 0;
  double step_med_ms = 0, step_p95_ms = 0;  // the step lasts until its slowest rank is done
  // Medians over every rank's steps.
  double fwd_ms = 0, bwd_ms = 0, tp_comm_ms = 0, dp_exposed_ms = 0, dp_span_ms = 0, optim_ms = 0;
  // Median over every rank's steps of what no component holds: step - (fwd + bwd + TP + exposed
  // DP + optimizer). The parts are medians of their own, so they need not add up to the step.
  double other_ms = 0;
  // The overlap efficiency's own terms: exposed and DP communication per rank and step, means
  // over all of them (the medians above can hide a group that waits while another does not).
  double dp_exposed_mean_ms = 0, dp_span_mean_ms = 0;
  bool overlap = true;
  int tp = 1;                     // tensor-parallel ranks (1: no TP communication)
  int dp = 1;                     // replicas (1: no DP reduction, nobody waits for anybody)
  double overlap_efficiency = 0;  // 1 - exposed / DP communication time, over all samples
  double tokens_per_s = 0;
  double rank_tflops = 0;   // median over ranks of model FLOPs / step time
  double peak_tflops = 0;   // what MFU is against (0: nothing to compare with)
  std::string peak_source;  // "h100-sxm's FP8 figure", "the gemm phase's best shape"
  double mfu = 0;           // NaN when there is no peak
  int slowest_rank = -1;    // largest median compute
  double slowest_compute_ms = 0;
  int waited_for_rank = -1;  // most often the last to reach the DP reduction
  int waited_for_steps = 0;  // in this many steps
  double waited_for_ms = 0;  // its median lead over the step's earliest arrival
  double gpu_hour_usd = 0;   // cost.gpu_hour_usd (0: not set)
  double usd_per_step = 0, usd_per_million_tokens = 0;
  double memory_gib = 0;  // the config's budget per GPU
};

struct TrainFindings {
  bool ran = false;  // the file has /train
  TrainSummary summary;
  std::vector<Finding> findings;
};

// Reads /train once; nothing when the config did not ask for train. `gemm` (already read) gives
// the measured peak for MFU when no platform does.
TrainFindings train_findings(const RunFile& file, const RunFacts& facts, const GemmFindings& gemm);
// The summary block under its title line (train_title), "" when the run has no /train;
// `explain` adds what the numbers mean.
// "train (<layout>; N steps)"
std::string train_title(const TrainFindings& findings);
std::string format_train(const TrainFindings& findings, const RunFacts& facts, bool explain);

}  // namespace shakedown
