#include "record/train_rows.hpp"

#include "record/schema.hpp"

namespace shakedown {

void write_train(RunWriter& w, const TrainRecord& r) {
  namespace t = schema::training;
  const std::string path = schema::kTrainGroup;
  const std::uint64_t s = r.steps, b = r.buckets, n = r.world;
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
    w.set_attr(path, t::kAttrWarmupSteps, r.warmup_steps);
    w.set_attr(path, t::kAttrParameters, r.parameters);
    w.set_attr(path, t::kAttrRankFlop, r.rank_flop);
    w.set_attr(path, t::kAttrTokensPerStep, r.tokens_per_step);
    w.set_attr(path, t::kAttrMemoryBytes, r.memory_bytes);
    w.set_attr(path, t::kAttrMemoryDeviceBytes, r.memory_device_bytes);
    w.set_attr(path, t::kAttrMemoryDevice, r.memory_device);
    w.set_attr(path, t::kAttrMemoryItems, r.memory_items);
    for (const auto& [d, v] : {std::pair{&t::kStepMs, &r.step_ms},
                               {&t::kFwdMs, &r.fwd_ms},
                               {&t::kBwdMs, &r.bwd_ms},
                               {&t::kTpCommMs, &r.tp_comm_ms},
                               {&t::kDpExposedMs, &r.dp_exposed_ms},
                               {&t::kDpSpanMs, &r.dp_span_ms},
                               {&t::kOptimMs, &r.optim_ms},
                               {&t::kDpArrivalUs, &r.dp_arrival_us},
                               {&t::kZeroGradShare, &r.zero_grad_share}}) {
      w.write_array(path, *d, *v, {s, n});
    }
    w.write_array(path, t::kParamHash, r.param_hash, {s, n});
    w.write_array(path, t::kBucketStartUs, r.bucket_start_us, {s, b, n});
    w.write_array(path, t::kBucketEndUs, r.bucket_end_us, {s, b, n});
    w.write_array(path, t::kBucketBytes, r.bucket_bytes, {b});
    w.write_array(path, t::kTpRank, r.tp_rank, {n});
    w.write_array(path, t::kDpRank, r.dp_rank, {n});
    w.write_array(path, t::kScalesFinite, r.scales_finite, {n});
  });
}

}  // namespace shakedown
