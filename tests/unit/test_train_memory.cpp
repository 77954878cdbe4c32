// The memory budget against examples worked out by hand (the arithmetic is in the comments).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "train/memory.hpp"

namespace shakedown::train {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

double item(const MemoryBudget& b, const std::string& name) {
  for (const MemoryItem& i : b.items) {
    if (i.name == name) return i.bytes;
  }
  ADD_FAILURE() << "no item " << name;
  return -1;
}

// h = 1024, 16 heads, 2 layers, GeLU with f = 4096, V = 32000, tp = 2, dp = 2, s = 512, b = 1.
TrainingRequest small_request() {
  TrainConfig t;
  t.layers = 2;
  TrainingRequest q;
  q.shape = model_shape(t);
  q.parallel = {2, 2, false, 0};
  q.micro_batch = 1;
  q.seq_len = 512;
  q.recompute = Recompute::kSelective;
  return q;
}

TEST(TrainMemory, RankParametersSplitTheLinearsAndTheVocabulary) {
  const RankParameters r = rank_parameters(small_request().shape, 2);
  // Per layer 12 h^2 / t = 12 x 1,048,576 / 2 = 6,291,456; two layers 12,582,912.
  EXPECT_EQ(r.linear, 12'582'912u);
  // Norms 2 layers x 2 x 1024 = 4,096; embedding + logit layer 2 x (32000 / 2) x 1024 =
  // 32,768,000; final norm 1,024: 32,773,120.
  EXPECT_EQ(r.other, 32'773'120u);
}

TEST(TrainMemory, TrainingBudgetByHand) {
  const MemoryBudget b = training_budget(small_request(), 0);
  // 45,356,032 parameters on this rank.
  EXPECT_DOUBLE_EQ(item(b, "weights bf16"), 2.0 * 45'356'032);  // 90,712,064
  EXPECT_DOUBLE_EQ(item(b, "FP8 weights + transposed copies"), 2.0 * 12'582'912);
  EXPECT_DOUBLE_EQ(item(b, "gradients fp32"), 4.0 * 45'356'032);       // 181,424,128
  EXPECT_DOUBLE_EQ(item(b, "master weights fp32"), 4.0 * 45'356'032);  // zero 0: whole
  EXPECT_DOUBLE_EQ(item(b, "Adam moments fp32"), 8.0 * 45'356'032);    // 362,848,256
  // TP + selective recompute: s b h (10 + 24 / t) = 512 x 1024 x (10 + 12) = 11,534,336 per
  // layer, x 2 layers.
  EXPECT_DOUBLE_EQ(item(b, "activations"), 2.0 * 11'534'336);
  EXPECT_DOUBLE_EQ(item(b, "logits fp32"), 4.0 * 512 * 16000);         // 32,768,000
  EXPECT_DOUBLE_EQ(item(b, "communication buffers"), 2 * 256 * kMiB);  // TP and DP
  // Sum 2,004,707,328 B, + 10% fragmentation = 2,205,178,060.8 B.
  EXPECT_NEAR(b.total_bytes, 2'205'178'060.8, 1e-3);
  EXPECT_FALSE(b.fits);  // no device given
}

TEST(TrainMemory, ZeroOneShardsMasterWeightsAndAdamOverDataParallelRanks) {
  TrainingRequest q = small_request();
  q.parallel.zero = 1;
  const MemoryBudget b = training_budget(q, 0);
  EXPECT_DOUBLE_EQ(item(b, "master weights fp32"), 4.0 * 45'356'032 / 2);
  EXPECT_DOUBLE_EQ(item(b, "Adam moments fp32"), 8.0 * 45'356'032 / 2);
}

TEST(TrainMemory, ActivationsFollowKorthikantiTable) {
  const TrainingRequest q = small_request();
  const double sbh = 512.0 * 1024;
  Parallel tp_only{2, 2, false, 0};
  Parallel tp_sp{2, 2, true, 0};
  // No recompute keeps the scores: 5 a s / (h t) = 5 x 16 x 512 / (1024 x 2) = 20.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(q.shape, tp_only, 1, 512, Recompute::kNone),
                   sbh * (10 + 12 + 20));
  // TP + SP: (s b h / t)(34 + 5 a s / h) = sbh / 2 x (34 + 40).
  EXPECT_DOUBLE_EQ(layer_activation_bytes(q.shape, tp_sp, 1, 512, Recompute::kNone), sbh / 2 * 74);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(q.shape, tp_sp, 1, 512, Recompute::kSelective),
                   sbh / 2 * 34);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(q.shape, tp_only, 1, 512, Recompute::kFull), 2 * sbh);
}

TEST(TrainMemory, LargestMicroBatchIsTheLastThatFits) {
  TrainingRequest q = small_request();
  const double device = 4 * kGiB;
  const MemoryBudget b = training_budget(q, device);
  ASSERT_GT(b.largest_fitting, 1);
  q.micro_batch = b.largest_fitting;
  EXPECT_TRUE(training_budget(q, device).fits);
  q.micro_batch = b.largest_fitting + 1;
  EXPECT_FALSE(training_budget(q, device).fits);
}

TEST(TrainMemory, LlamaSevenBKvCacheIsHalfAMebibytePerToken) {
  TrainConfig t;
  t.model = "llama2-7b";
  InferenceRequest q;
  q.shape = model_shape(t);
  q.context = 4096;
  q.concurrency = 1;
  // 2 (K, V) x 32 layers x 32 kv heads x 128 x 2 B = 524,288 B per token; 4096 tokens = 2 GiB.
  const MemoryBudget b = inference_budget(q, 140.40 * kGiB);
  EXPECT_DOUBLE_EQ(item(b, "KV cache bf16"), 2 * kGiB);
  EXPECT_TRUE(b.fits);
  // Weights 2 B x 6,738,415,616 = 12.55 GiB leave room for a few dozen 4k-token sequences.
  EXPECT_GT(b.largest_fitting, 40);
  EXPECT_LT(b.largest_fitting, 70);
  q.concurrency = b.largest_fitting;
  EXPECT_TRUE(inference_budget(q, 140.40 * kGiB).fits);
  q.concurrency = b.largest_fitting + 1;
  EXPECT_FALSE(inference_budget(q, 140.40 * kGiB).fits);
}

TEST(TrainMemory, DeviceMemoryByNameOrGiB) {
  EXPECT_NEAR(parse_device_memory("h200-sxm").bytes / kGiB, 140.40, 1e-9);
  EXPECT_NEAR(parse_device_memory("h100-sxm").bytes / kGiB, 79.65, 1e-9);
  EXPECT_DOUBLE_EQ(parse_device_memory("24").bytes, 24 * kGiB);
  try {
    parse_device_memory("h300");
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("h200-sxm"));
  }
}

// checkpoint.from_train, DLIO's sizing. Llama-2-7B on one rank (tp 1, dp 1): 6,738,415,616
// parameters x (2 B bf16 model + 12 B fp32 master and two Adam moments) = 94,337,818,624 B.
TEST(TrainMemory, CheckpointShardsAsDlioSizesThem) {
  TrainConfig t;
  t.model = "llama2-7b";
  const ModelShape shape = model_shape(t);
  const CheckpointShard one = checkpoint_shard(shape, Parallel{1, 1, false, 0}, 0);
  EXPECT_EQ(one.model_bytes, 2ull * 6'738'415'616ull);
  EXPECT_EQ(one.optimizer_bytes, 12ull * 6'738'415'616ull);
  EXPECT_EQ(checkpoint_bytes(shape, Parallel{1, 1, false, 0}), 94'337'818'624ull);
  // tp 2 x dp 4, zero 0: each TP slice of n parameters; DP rank 0 writes 2n + 12n, the other
  // replicas 12n (their optimizer state; the model state is DP rank 0's alone).
  const std::uint64_t n = rank_parameters(shape, 2).total();
  const Parallel zero0{2, 4, false, 0};
  EXPECT_EQ(checkpoint_shard(shape, zero0, 0).total(), 14 * n);
  EXPECT_EQ(checkpoint_shard(shape, zero0, 3).total(), 12 * n);
  EXPECT_EQ(checkpoint_bytes(shape, zero0), 2 * (14 * n + 3 * 12 * n));
  // zero 1: the optimizer state is sharded over the 4 replicas (rounded up per shard).
  const Parallel zero1{2, 4, false, 1};
  EXPECT_EQ(checkpoint_shard(shape, zero1, 0).total(), 2 * n + 12 * ((n + 3) / 4));
  EXPECT_EQ(checkpoint_shard(shape, zero1, 2).total(), 12 * ((n + 3) / 4));
}

}  // namespace
}  // namespace shakedown::train
