#pragma once
// The train phase's measurements as rank 0 stores them (schema.hpp /train): one writer for the
// phase and for tests that build a run file by hand, so both write the same layout. The phase
// writes the header before its first step and appends each step as it completes, so a run that
// stops mid-phase (a hung rank, Ctrl-C, a killed rank) keeps every step measured until then.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "record/writer.hpp"

namespace shakedown {

struct TrainRecord {
  // The layout and the model that ran.
  std::string model, mlp, recipe, format, engine;
  std::string communication = "mpi";  // or "nccl": the device-resident step
  std::int64_t layers = 0, hidden = 0, ffn_hidden = 0, heads = 0, kv_heads = 0;
  std::int64_t seq_len = 0, micro_batch = 0, tp = 1, dp = 1, zero = 0, warmup_steps = 0;
  bool sequence_parallel = false, overlap = true;
  std::int64_t parameters = 0;  // int64, as the schema declares it
  double rank_flop = 0;         // one rank's model FLOPs per step
  std::int64_t tokens_per_step = 0;
  // The memory budget of this config on one GPU (train/memory.hpp).
  double memory_bytes = 0, memory_device_bytes = 0;
  std::string memory_device, memory_items;

  std::uint64_t steps = 0, buckets = 0, world = 0;
  std::int64_t steps_planned = 0;  // train.steps; 0: as many as `steps`
  // [steps, world]
  std::vector<double> step_ms, fwd_ms, bwd_ms, tp_comm_ms, dp_exposed_ms, dp_span_ms, optim_ms;
  std::vector<double> dp_arrival_us, zero_grad_share;
  std::vector<std::uint64_t> param_hash;
  std::vector<double> bucket_start_us, bucket_end_us;         // [steps, buckets, world]
  std::vector<std::int64_t> bucket_bytes;                     // [buckets]
  std::vector<std::int64_t> tp_rank, dp_rank, scales_finite;  // [world]
};

// One measured step of every rank: [world] each, the buckets [buckets, world].
struct TrainStepRows {
  std::vector<double> step_ms, fwd_ms, bwd_ms, tp_comm_ms, dp_exposed_ms, dp_span_ms, optim_ms;
  std::vector<double> dp_arrival_us, zero_grad_share;
  std::vector<std::uint64_t> param_hash;
  std::vector<double> bucket_start_us, bucket_end_us;
};

// Before the first step: the attributes (layout, model, budget, steps planned), bucket_bytes,
// tp_rank and dp_rank (r's step arrays and scales_finite are not written).
void write_train_header(RunWriter& w, const TrainRecord& r);
// One step appended to the [steps, ...] datasets (created by the first).
void append_train_step(RunWriter& w, const TrainStepRows& s, std::uint64_t world,
                       std::uint64_t buckets);
// After the last step: whether each rank's FP8 scales stayed finite.
void write_train_end(RunWriter& w, std::span<const std::int64_t> scales_finite);
// The whole of r as the phase writes it: header, every step, end (tests and generators).
void write_train(RunWriter& w, const TrainRecord& r);

}  // namespace shakedown
