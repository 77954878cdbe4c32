// Model shapes, parameter counts and FLOPs against the published models, and the layout rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "train/model.hpp"

namespace shakedown::train {
namespace {

using ::testing::HasSubstr;

TrainConfig preset(const std::string& name) {
  TrainConfig t;
  t.model = name;
  return t;
}

std::string usage_message(const auto& call) {
  try {
    call();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return {};
}

TEST(TrainModel, PresetParameterCountsMatchThePublishedModels) {
  // Llama: L (2h^2 + 2 h g d + 3 h f + 2h) + 2 V h + h.
  // 7B: 32 x (2 x 4096^2 + 2 x 4096 x 4096 + 3 x 4096 x 11008 + 2 x 4096) + 2 x 32000 x 4096 + 4096
  //   = 32 x 202,383,360 + 262,144,000 + 4,096 = 6,738,415,616.
  EXPECT_EQ(parameter_count(model_shape(preset("llama2-7b"))), 6'738'415'616ull);
  // 70B: g d = 8 x 128 = 1024; 80 x (2 x 8192^2 + 2 x 8192 x 1024 + 3 x 8192 x 28672 + 16384)
  //   + 2 x 32000 x 8192 + 8192 = 68,976,648,192.
  EXPECT_EQ(parameter_count(model_shape(preset("llama2-70b"))), 68'976'648'192ull);
  // GPT-3: L (12 h^2 + 13 h) + V h + 2048 h + 2 h with h = 12288, V = 50257 (tied, biases,
  // LayerNorm, learned positions) = 174,604,259,328 (about 174.6 B).
  EXPECT_EQ(parameter_count(model_shape(preset("gpt3-175b"))), 174'604'259'328ull);
}

TEST(TrainModel, GptThreeFlopsMatchNarayanan) {
  const ModelShape gpt3 = model_shape(preset("gpt3-175b"));
  const StepFlops f = step_flops(gpt3, 1, 2048, false, AttentionCount::kFull);
  const double h = 12288, s = 2048, l = 96, v = 50257;
  const double paper = 72 * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
  EXPECT_NEAR(f.total / paper, 1.0, 1e-12);
  EXPECT_NEAR(f.total / 2.2044e15, 1.0, 5e-5);
  // Full recomputation: 96 B s l h^2 (1 + s/6h + V/16lh) = 2.9367e15.
  const StepFlops r = step_flops(gpt3, 1, 2048, true, AttentionCount::kFull);
  EXPECT_NEAR(r.total / (96 * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))), 1.0, 1e-12);
  EXPECT_NEAR(r.total / 2.9367e15, 1.0, 5e-5);
}

TEST(TrainModel, CausalCountHalvesAttentionAsMegatronDoes) {
  // Llama-2-7B at s = 4096, per token: 6 x (L x GEMM weights + h V) = 3.964e10 and causal
  // attention 3 x 4 s h L / 2 = 3.22e9.
  const ModelShape llama = model_shape(preset("llama2-7b"));
  const StepFlops f = step_flops(llama, 1, 4096, false, AttentionCount::kCausal);
  const double per_token_linear = 3 * (f.gemm_forward + f.logits_forward) / 4096;
  const double per_token_attention = 3 * f.attention_forward / 4096;
  EXPECT_NEAR(per_token_linear / 3.964e10, 1.0, 1e-3);
  EXPECT_NEAR(per_token_attention / 3.22e9, 1.0, 1e-3);
  const StepFlops full = step_flops(llama, 1, 4096, false, AttentionCount::kFull);
  EXPECT_DOUBLE_EQ(full.attention_forward, 2 * f.attention_forward);
}

TEST(TrainModel, LayersCutAPresetAndNeverGrowIt) {
  TrainConfig t = preset("llama2-70b");
  t.layers = 2;
  const ModelShape cut = model_shape(t);
  EXPECT_EQ(cut.layers, 2);
  EXPECT_EQ(cut.preset_layers, 80);
  EXPECT_EQ(cut.kv_heads, 8);
  t.layers = 81;
  EXPECT_THAT(usage_message([&] { model_shape(t); }), HasSubstr("80 layers"));
}

TEST(TrainModel, CustomShapeDefaults) {
  TrainConfig t;  // custom: layers 0 -> 2, ffn 4h, kv_heads = heads
  ModelShape s = model_shape(t);
  EXPECT_EQ(s.layers, 2);
  EXPECT_EQ(s.ffn_hidden, 4 * t.hidden);
  EXPECT_EQ(s.kv_heads, t.heads);
  t.mlp = "swiglu";
  t.hidden = 4096;
  t.heads = 32;
  s = model_shape(t);
  EXPECT_EQ(s.ffn_hidden, 11008);  // Llama's rule gives Llama-2-7B's width
  EXPECT_EQ(s.fc1_width(), 2 * 11008);
  t.kv_heads = 5;
  EXPECT_THAT(usage_message([&] { model_shape(t); }), HasSubstr("4 or 8"));
}

TEST(TrainModel, LinearShapesPerTensorParallelRank) {
  const ModelShape s = model_shape(preset("llama2-70b"));
  const std::vector<LinearShape> l = layer_linears(s, 8);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0].n, (8192 + 2 * 1024) / 8);  // qkv, column
  EXPECT_EQ(l[0].k, 8192);
  EXPECT_EQ(l[1].k, 8192 / 8);  // proj, row
  EXPECT_EQ(l[2].n, 2 * 28672 / 8);
  EXPECT_EQ(l[3].k, 28672 / 8);
  EXPECT_FALSE(l[3].column);
}

TEST(TrainModel, ParallelLayoutRulesNameTheNearestValidValues) {
  const ModelShape s = model_shape(preset("llama2-70b"));  // 64 heads, 8 kv heads
  TrainConfig t = preset("llama2-70b");
  t.tp = 8;
  Parallel p = check_parallel(s, t, {128, 8, true});
  EXPECT_EQ(p.dp, 16);
  t.tp = 3;
  EXPECT_THAT(usage_message([&] {
                check_parallel(s, t, {128, 8, true});
              }),
              HasSubstr("nearest valid tp: 2 or 4"));
  t.tp = 16;  // more than the node
  EXPECT_THAT(usage_message([&] { check_parallel(s, t, {128, 8, true}); }), HasSubstr("kv_heads"));
  t.tp = 8;
  t.dp = 4;
  EXPECT_THAT(usage_message([&] {
                check_parallel(s, t, {128, 8, true});
              }),
              HasSubstr("use dp: 16"));
  t.dp = 0;
  t.tp = 2;
  EXPECT_THAT(usage_message([&] {
                check_parallel(s, t, {6, 0, false});
              }),
              HasSubstr("different numbers of ranks"));
}

TEST(TrainModel, GpuShapesMustBeMultiplesOfSixteen) {
  TrainConfig t;
  t.hidden = 1000;
  t.heads = 8;
  const ModelShape s = model_shape(t);
  EXPECT_NO_THROW(check_parallel(s, t, {2, 2, false}));  // the CPU engine takes any shape
  EXPECT_THAT(usage_message([&] {
                check_parallel(s, t, {2, 2, true});
              }),
              HasSubstr("nearest valid value: 992"));
  t.hidden = 1024;
  t.heads = 16;
  t.seq_len = 100;
  EXPECT_THAT(usage_message([&] {
                check_parallel(model_shape(t), t, {2, 2, true});
              }),
              HasSubstr("tokens"));
  // Core attention per head: head size and seq_len multiples of 8 (16-byte aligned bf16).
  t.seq_len = 128;
  t.hidden = 1200;  // 16 | 1200, but 12 heads of 100
  t.heads = 12;
  EXPECT_THAT(usage_message([&] {
                check_parallel(model_shape(t), t, {2, 2, true});
              }),
              HasSubstr("head size (hidden / heads) is 100"));
  t.hidden = 1024;
  t.heads = 16;
  t.seq_len = 100;
  t.micro_batch = 4;  // 400 tokens: a multiple of 16, but rows of 100 scores are not aligned
  EXPECT_THAT(usage_message([&] {
                check_parallel(model_shape(t), t, {2, 2, true});
              }),
              HasSubstr("seq_len is 100"));
  t.micro_batch = 1;
  t.seq_len = 101;
  t.tp = 2;
  t.sequence_parallel = true;
  EXPECT_THAT(usage_message([&] {
                check_parallel(model_shape(t), t, {2, 2, false});
              }),
              HasSubstr("multiple of 2"));
}

}  // namespace
}  // namespace shakedown::train
