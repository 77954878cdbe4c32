#include "record/train_rows.hpp"

#include "record/schema.hpp"

namespace shakedown {

namespace t = schema::training;

void write_train_header(RunWriter& w, const TrainRecord& r) {
  const std::string path = schema::kTrainGroup;
  w.batch([&] {
    w.set_attr(path, t::kAttrModel, r.model);
    w.set_attr(path, t::kAttrLayers, r.layers);
    w.set_attr(path, t::kAttrHidden, r.hidden);
    w.set_attr(path, t::kAttrFfnHidden, r.ffn_hidden);
    w.set_attr(path, t::kAttrHeads, r.heads);
    w.set_attr(path, t::kAttrKvHeads, r.kv_heads);
    w.set_attr(path, t::kAttrSeqLen, r.seq_len);
    w.set_attr(path, t::kAttrMicroBatch, r.micro_batch);
    w.set_attr(path, t::kAttrMlp, r.mlp);
    w.set_attr(path, t::kAttrTp, r.tp);
    w.set_attr(path, t::kAttrDp, r.dp);
    w.set_attr(path, t::kAttrZero, r.zero);
    w.set_attr(path, t::kAttrSequenceParallel, r.sequence_parallel ? 1 : 0);
    w.set_attr(path, t::kAttrOverlap, r.overlap ? 1 : 0);
    w.set_attr(path, t::kAttrRecipe, r.recipe);
    w.set_attr(path, t::kAttrFormat, r.format);
    w.set_attr(path, t::kAttrEngine, r.engine);
    w.set_attr(path, t::kAttrCommunication, r.communication);
    w.set_attr(path, t::kAttrWarmupSteps, r.warmup_steps);
    w.set_attr(path, t::kAttrStepsPlanned,
               r.steps_planned > 0 ? r.steps_planned : static_cast<std::int64_t>(r.steps));
    w.set_attr(path, t::kAttrParameters, r.parameters);
    w.set_attr(path, t::kAttrRankFlop, r.rank_flop);
    w.set_attr(path, t::kAttrTokensPerStep, r.tokens_per_step);
    w.set_attr(path, t::kAttrMemoryBytes, r.memory_bytes);
    w.set_attr(path, t::kAttrMemoryDeviceBytes, r.memory_device_bytes);
    w.set_attr(path, t::kAttrMemoryDevice, r.memory_device);
    w.set_attr(path, t::kAttrMemoryItems, r.memory_items);
    w.write_array(path, t::kBucketBytes, r.bucket_bytes, {r.buckets});
    w.write_array(path, t::kTpRank, r.tp_rank, {r.world});
    w.write_array(path, t::kDpRank, r.dp_rank, {r.world});
  });
}

void append_train_step(RunWriter& w, const TrainStepRows& s, std::uint64_t world,
                       std::uint64_t buckets) {
  const std::string path = schema::kTrainGroup;
  w.batch([&] {
    for (const auto& [d, v] : {std::pair{&t::kStepMs, &s.step_ms},
                               {&t::kFwdMs, &s.fwd_ms},
                               {&t::kBwdMs, &s.bwd_ms},
                               {&t::kTpCommMs, &s.tp_comm_ms},
                               {&t::kDpExposedMs, &s.dp_exposed_ms},
                               {&t::kDpSpanMs, &s.dp_span_ms},
                               {&t::kOptimMs, &s.optim_ms},
                               {&t::kDpArrivalUs, &s.dp_arrival_us},
                               {&t::kZeroGradShare, &s.zero_grad_share}}) {
      w.append_rows(path, *d, *v, {world});
    }
    w.append_rows(path, t::kParamHash, s.param_hash, {world});
    w.append_rows(path, t::kBucketStartUs, s.bucket_start_us, {buckets, world});
    w.append_rows(path, t::kBucketEndUs, s.bucket_end_us, {buckets, world});
  });
}

void write_train_end(RunWriter& w, std::span<const std::int64_t> scales_finite) {
  w.write_array(schema::kTrainGroup, t::kScalesFinite, scales_finite, {scales_finite.size()});
}

void write_train(RunWriter& w, const TrainRecord& r) {
  write_train_header(w, r);
  const std::uint64_t n = r.world, b = r.buckets;
  for (std::uint64_t step = 0; step < r.steps; ++step) {
    const auto row = [&](const std::vector<double>& v, std::uint64_t width) {
      return std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(step * width),
                                 v.begin() + static_cast<std::ptrdiff_t>((step + 1) * width));
    };
    TrainStepRows s;
    s.step_ms = row(r.step_ms, n);
    s.fwd_ms = row(r.fwd_ms, n);
    s.bwd_ms = row(r.bwd_ms, n);
    s.tp_comm_ms = row(r.tp_comm_ms, n);
    s.dp_exposed_ms = row(r.dp_exposed_ms, n);
    s.dp_span_ms = row(r.dp_span_ms, n);
    s.optim_ms = row(r.optim_ms, n);
    s.dp_arrival_us = row(r.dp_arrival_us, n);
    s.zero_grad_share = row(r.zero_grad_share, n);
    s.param_hash.assign(r.param_hash.begin() + static_cast<std::ptrdiff_t>(step * n),
                        r.param_hash.begin() + static_cast<std::ptrdiff_t>((step + 1) * n));
    s.bucket_start_us = row(r.bucket_start_us, b * n);
    s.bucket_end_us = row(r.bucket_end_us, b * n);
    append_train_step(w, s, n, b);
  }
  write_train_end(w, r.scales_finite);
}

}  // namespace shakedown
