#pragma once
// The train phase's measurements as rank 0 stores them (schema.hpp /train): one writer for the
// phase and for tests that build a run file by hand, so both write the same layout.
#include <cstdint>
#include <string>
#include <vector>

#include "record/writer.hpp"

namespace shakedown {

struct TrainRecord {
  // The layout and the model that ran.
  std::string model, mlp, recipe, format, engine;
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
  // [steps, world]
  std::vector<double> step_ms, fwd_ms, bwd_ms, tp_comm_ms, dp_exposed_ms, dp_span_ms, optim_ms;
  std::vector<double> dp_arrival_us, zero_grad_share;
  std::vector<std::uint64_t> param_hash;
  std::vector<double> bucket_start_us, bucket_end_us;         // [steps, buckets, world]
  std::vector<std::int64_t> bucket_bytes;                     // [buckets]
  std::vector<std::int64_t> tp_rank, dp_rank, scales_finite;  // [world]
};

// Writes /train in one batch.
void write_train(RunWriter& w, const TrainRecord& r);

}  // namespace shakedown
