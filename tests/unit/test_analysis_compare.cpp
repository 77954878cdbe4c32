// shakedown compare on synthetic run files written through RunWriter (the real layout, read back
// by RunFile): train runs with one rank computing longer, checkpoint runs with a slower write,
// too few checkpoints to judge, and the machine-readable formats of what was found.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "analysis/compare.hpp"
#include "analysis/reporters/formats.hpp"
#include "fake_ranks.hpp"
#include "record/checkpoint_rows.hpp"
#include "record/gemm_rows.hpp"
#include "record/reader.hpp"
#include "record/schema.hpp"
#include "record/train_rows.hpp"
#include "record/writer.hpp"
#include "temp_dir.hpp"

namespace shakedown {
namespace {

constexpr std::size_t kSteps = 16;
constexpr int kWorld = 4;

// tp 2 x dp 2; forward 10 ms and backward 20 ms under 3% noise (seed `seed`); rank `slow`
// computes `factor` x as long, and every step then lasts that much longer.
TrainRecord train(unsigned seed, int slow = -1, double factor = 1) {
  TrainRecord r;
  r.model = "custom";
  r.mlp = "gelu";
  r.recipe = "delayed";
  r.format = "hybrid";
  r.engine = "cpu";
  r.layers = 2;
  r.hidden = 256;
  r.tp = 2;
  r.dp = 2;
  r.rank_flop = 3e9;
  r.tokens_per_step = 256;
  r.memory_bytes = 1e9;
  r.steps = kSteps;
  r.buckets = 1;
  r.world = kWorld;
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.03);
  for (std::size_t s = 0; s < kSteps; ++s) {
    for (int k = 0; k < kWorld; ++k) {
      const double f = k == slow ? factor : 1.0;
      r.fwd_ms.push_back(10 * f * std::exp(noise(rng)));
      r.bwd_ms.push_back(20 * f * std::exp(noise(rng)));
      r.tp_comm_ms.push_back(1 * std::exp(noise(rng)));
      r.dp_exposed_ms.push_back(2 * std::exp(noise(rng)));
      r.dp_span_ms.push_back(8);
      r.optim_ms.push_back(3 * std::exp(noise(rng)));
      r.step_ms.push_back((40 + 30 * (factor - 1)) * std::exp(noise(rng)));
      r.dp_arrival_us.push_back(100);
      r.zero_grad_share.push_back(0);
      r.param_hash.push_back(1000 * s + static_cast<std::size_t>(k % 2));
    }
  }
  r.bucket_start_us.assign(kSteps * kWorld, -5000);
  r.bucket_end_us.assign(kSteps * kWorld, 1000);
  r.bucket_bytes = {1 << 20};
  for (int k = 0; k < kWorld; ++k) {
    r.tp_rank.push_back(k % 2);
    r.dp_rank.push_back(k / 2);
    r.scales_finite.push_back(1);
  }
  return r;
}

// `iters` checkpoints of 4 x 64 MiB, each rank writing for ~0.2 s x `write_factor` (3% noise)
// and restoring its neighbour's shard in ~0.1 s.
CheckpointRecord checkpoint(unsigned seed, std::size_t iters, double write_factor = 1) {
  CheckpointRecord r;
  r.layout = "file_per_process";
  r.api = "posix";
  r.dir = "/ckpt";
  r.fs_type = "lustre";
  r.kept = "no";
  r.iters = iters;
  r.world = kWorld;
  r.block_size = 1 << 20;
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.03);
  for (int k = 0; k < kWorld; ++k) {
    r.bytes.push_back(64LL << 20);
    r.reads_shard_of.push_back((k + 1) % kWorld);
  }
  for (std::size_t i = 0; i < iters; ++i) {
    for (int k = 0; k < kWorld; ++k) {
      const double w = 0.2 * write_factor * std::exp(noise(rng)), rd = 0.1 * std::exp(noise(rng));
      r.open_s.push_back(0.001);
      r.write_s.push_back(w);
      r.fsync_s.push_back(0.01);
      r.close_s.push_back(0.001);
      r.read_s.push_back(rd);
      r.write_start_s.push_back(0.001 * k);
      r.write_end_s.push_back(0.001 * k + w);
      r.read_start_s.push_back(1 + 0.001 * k);
      r.read_end_s.push_back(1 + 0.001 * k + rd);
      r.verify_ok.push_back(1);
      r.bad_offset.push_back(-1);
      r.cache_dropped.push_back(1);
    }
    r.write_gbps.push_back(1);
    r.read_gbps.push_back(2);
    r.restore_s.push_back(0.1);
  }
  return r;
}

// One 64x128x128 shape on `engine`, `iters` iterations of ~100 us per rank.
GemmShapeRecord gemm(const std::string& engine, unsigned seed, std::size_t iters = 20) {
  GemmShapeRecord g;
  g.order = 1;
  g.m = 64;
  g.n = 128;
  g.k = 128;
  g.a_format = g.b_format = "e4m3";
  g.out_dtype = "bf16";
  g.engine = engine;
  g.flop = 2.0 * 64 * 128 * 128;
  g.iters = static_cast<std::int64_t>(iters);
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.03);
  for (std::size_t i = 0; i < iters * kWorld; ++i) g.time_us.push_back(100 * std::exp(noise(rng)));
  g.max_rel_err.assign(kWorld, 1e-3);
  g.err_bound_ratio.assign(kWorld, 0.1);
  g.worst_expected.assign(kWorld, 1);
  g.worst_got.assign(kWorld, 1);
  g.worst_index.assign(kWorld, 0);
  g.rows_checked.assign(kWorld, 64);
  g.hash_group.assign(kWorld, 0);
  g.output_hash.assign(kWorld, 42);
  g.hash_groups = {engine};
  return g;
}

class Files {
 public:
  std::filesystem::path write(const std::string& name, const TrainRecord* t,
                              const CheckpointRecord* ck, const GemmShapeRecord* g = nullptr) {
    std::vector<std::pair<std::string, GemmShapeRecord>> shapes;
    if (g) shapes.emplace_back("64x128x128", *g);
    return write_shapes(name, t, ck, shapes);
  }
  // The GEMM phase as several shapes (name, record).
  std::filesystem::path write_shapes(
      const std::string& name, const TrainRecord* t, const CheckpointRecord* ck,
      const std::vector<std::pair<std::string, GemmShapeRecord>>& shapes) {
    RunMeta meta;
    meta.shakedown_version = "test";
    meta.config_yaml = "phases: [train, checkpoint]\n";
    meta.world_size = kWorld;
    meta.node_count = kWorld / 2;
    const auto path = dir_.path() / name;
    RunWriter w = RunWriter::create(path, meta, 0);
    w.write_topology(testing_support::two_per_host(kWorld), {});
    if (t) write_train(w, *t);
    if (ck) write_checkpoint(w, *ck);
    for (const auto& [shape, g] : shapes) {
      w.set_attr(schema::kGemmGroup, schema::gemm::kAttrEngine, g.engine);
      write_gemm_shape(w, schema::gemm_group(shape), g);
    }
    w.finish(schema::kStatusComplete);
    return path;
  }

 private:
  testing_support::TempDir dir_;
};

Comparison compare(const std::filesystem::path& before, const std::filesystem::path& after) {
  return compare_runs(RunFile::open(before), RunFile::open(after), CompareOptions{});
}

std::vector<std::string> slower_places(const Comparison& c) {
  std::vector<std::string> out;
  for (const CompareGroup& g : c.groups) {
    if (g.result == CompareGroup::Result::kSlower) out.push_back(g.name);
  }
  return out;
}

const CompareItem* find_item(const Comparison& c, const std::string& phase, const std::string& what,
                             const std::string& where = "") {
  for (const CompareItem& i : c.items) {
    if (i.phase == phase && i.what == what && i.where == where) return &i;
  }
  return nullptr;
}

TEST(CompareTrain, ARerunChangesNothing) {
  Files f;
  const TrainRecord a = train(1), b = train(2);
  const Comparison c = compare(f.write("a.h5", &a, nullptr), f.write("b.h5", &b, nullptr));
  EXPECT_EQ(c.exit_code(), 0);
  EXPECT_TRUE(slower_places(c).empty());
  // Six step components and four ranks' compute, each judged on 16 steps against 16.
  EXPECT_EQ(c.items.size(), 10u);
  EXPECT_EQ(c.judged, 10u);
  const CompareItem* fwd = find_item(c, "train", "forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->unit, "ms");
  EXPECT_NEAR(fwd->before_us, 10, 0.5);
  EXPECT_EQ(fwd->n_before, kSteps);
}

TEST(CompareTrain, ARankThatComputesLongerIsNamedAndTheStepWithIt) {
  Files f;
  const TrainRecord a = train(1), b = train(2, /*slow=*/3, /*factor=*/1.6);
  const Comparison c = compare(f.write("a.h5", &a, nullptr), f.write("b.h5", &b, nullptr));
  EXPECT_EQ(c.exit_code(), 1);
  const std::vector<std::string> slower = slower_places(c);
  // Rank 3 against its peers, and the step (it lasts until rank 3 is done); the median rank's
  // forward and backward did not change.
  ASSERT_EQ(slower.size(), 2u) << ::testing::PrintToString(slower);
  EXPECT_NE(std::find(slower.begin(), slower.end(),
                      "rank 3 (host gpu-1, node 1): train compute against its run's other ranks"),
            slower.end())
      << ::testing::PrintToString(slower);
  EXPECT_NE(std::find(slower.begin(), slower.end(), "train step (slowest rank)"), slower.end());
  const CompareItem* r3 =
      find_item(c, "train", "compute (forward + backward)", "rank 3 (host gpu-1, node 1)");
  ASSERT_NE(r3, nullptr);
  EXPECT_EQ(r3->unit, "x median");
  EXPECT_NEAR(r3->ratio, 1.6, 0.1);
  EXPECT_LE(r3->lo, r3->ratio);
  EXPECT_GE(r3->hi, r3->ratio);
  const CompareItem* fwd = find_item(c, "train", "forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->result, CompareItem::Result::kSame);
}

TEST(CompareCheckpoint, ThreeCheckpointsAreNotJudgedAndSaySo) {
  Files f;
  const CheckpointRecord a = checkpoint(1, 3), b = checkpoint(2, 3, 2.0);
  const Comparison c = compare(f.write("a.h5", nullptr, &a), f.write("b.h5", nullptr, &b));
  // The smallest two-sided exact p of 3 against 3 is 0.1: no test could reach alpha. Nothing
  // judged is no answer, not a clean one: exit 2, and a run or report that embeds it keeps its
  // own code.
  EXPECT_TRUE(c.nothing_judged());
  EXPECT_EQ(c.exit_code(), 2);
  EXPECT_EQ(c.regression_code(), 0);
  EXPECT_STREQ(c.verdict_name(), "nothing_judged");
  EXPECT_EQ(c.judged, 0u);
  EXPECT_EQ(c.not_judged, 2u);
  const std::string text = format_comparison(c, /*detail=*/true);
  EXPECT_NE(text.find("too few samples for the test to reach alpha"), std::string::npos) << text;
  EXPECT_NE(text.find("verdict: NOTHING JUDGED: none of the 2 item(s) both runs measured could be "
                      "judged"),
            std::string::npos)
      << text;
}

TEST(CompareCheckpoint, ASlowerWriteOnEnoughCheckpointsRegresses) {
  Files f;
  const CheckpointRecord a = checkpoint(1, 8), b = checkpoint(2, 8, 2.0);
  const Comparison c = compare(f.write("a.h5", nullptr, &a), f.write("b.h5", nullptr, &b));
  EXPECT_EQ(c.exit_code(), 1);
  bool write_slower = false, restore_same = false;
  for (const CompareItem& i : c.items) {
    EXPECT_EQ(i.phase, "checkpoint");
    if (i.result == CompareItem::Result::kSlower && i.what.find("write") != std::string::npos) {
      write_slower = true;
      EXPECT_NEAR(i.ratio, 2.0, 0.15);
    }
    if (i.result == CompareItem::Result::kSame && i.what.find("restore") != std::string::npos) {
      restore_same = true;
    }
  }
  EXPECT_TRUE(write_slower) << format_comparison(c, true);
  EXPECT_TRUE(restore_same) << format_comparison(c, true);
}

TEST(CompareCheckpoint, AnotherLayoutIsOnlyInOneFile) {
  Files f;
  CheckpointRecord a = checkpoint(1, 8), b = checkpoint(2, 8);
  b.layout = "shared_file";
  TrainRecord t = train(1);
  const Comparison c = compare(f.write("a.h5", &t, &a), f.write("b.h5", &t, &b));
  ASSERT_EQ(c.only_in_before.size(), 1u);
  EXPECT_EQ(c.only_in_before[0], "checkpoint posix file_per_process");
  ASSERT_EQ(c.only_in_after.size(), 1u);
  EXPECT_EQ(c.only_in_after[0], "checkpoint posix shared_file");
}

TEST(CompareGemm, AShapeIsMatchedByNameAndEngine) {
  Files f;
  const TrainRecord t = train(1);
  const GemmShapeRecord cpu = gemm("cpu", 1), cpu2 = gemm("cpu", 2), gpu = gemm("cublaslt", 3);
  const Comparison same =
      compare(f.write("a.h5", &t, nullptr, &cpu), f.write("b.h5", &t, nullptr, &cpu2));
  EXPECT_NE(find_item(same, "gemm", "64x128x128"), nullptr);
  EXPECT_TRUE(same.only_in_before.empty());
  const Comparison other =
      compare(f.write("c.h5", &t, nullptr, &cpu), f.write("d.h5", &t, nullptr, &gpu));
  EXPECT_EQ(find_item(other, "gemm", "64x128x128"), nullptr);
  ASSERT_EQ(other.only_in_before.size(), 1u);
  EXPECT_EQ(other.only_in_before[0], "gemm 64x128x128 (cpu)");
  ASSERT_EQ(other.only_in_after.size(), 1u);
  EXPECT_EQ(other.only_in_after[0], "gemm 64x128x128 (cublaslt)");
}

// Bonferroni over every item: 5 GEMM iterations against 5 give p = 0.0079 at best, above 0.05 /
// 15 items, so not one of the GEMM's could count. They are "not judged" (never "unchanged",
// which said NO REGRESSION for a rank 3x slower), and the train step's 10 items, which can, are
// held to 0.05 / 10. With 10 GEMM iterations against 10 the rank 3x slower is named.
TEST(CompareGemm, ItemsThatCannotReachTheCorrectedAlphaAreNotJudged) {
  Files f;
  const TrainRecord t = train(1);
  GemmShapeRecord a = gemm("cpu", 1, 5), b = gemm("cpu", 2, 5);
  for (std::size_t i = 0; i < 5; ++i) b.time_us[i * kWorld + 2] *= 3;  // rank 2, 3x slower
  const Comparison few =
      compare(f.write("a.h5", &t, nullptr, &a), f.write("b.h5", &t, nullptr, &b));
  auto rank_item = [](const Comparison& c, const std::string& rank) -> const CompareItem* {
    for (const CompareItem& i : c.items) {
      if (i.phase == "gemm" && i.where.rfind(rank + " (", 0) == 0) return &i;
    }
    return nullptr;
  };
  const CompareItem* rank2 = rank_item(few, "rank 2");
  ASSERT_NE(rank2, nullptr);
  EXPECT_EQ(rank2->result, CompareItem::Result::kNotJudged);
  EXPECT_EQ(rank2->not_judged_why, "too few samples for the test to reach alpha");
  EXPECT_TRUE(slower_places(few).empty());
  EXPECT_EQ(few.not_judged, 5u) << format_comparison(few, true);  // the shape and its 4 ranks
  EXPECT_EQ(few.judged, 10u);  // the train step's items (10 samples each) are held to 0.05 / 10

  GemmShapeRecord c = gemm("cpu", 3, 10), d = gemm("cpu", 4, 10);
  for (std::size_t i = 0; i < 10; ++i) d.time_us[i * kWorld + 2] *= 3;
  const Comparison enough =
      compare(f.write("c.h5", &t, nullptr, &c), f.write("d.h5", &t, nullptr, &d));
  const CompareItem* judged = rank_item(enough, "rank 2");
  ASSERT_NE(judged, nullptr);
  EXPECT_EQ(judged->result, CompareItem::Result::kSlower) << format_comparison(enough, true);
  EXPECT_EQ(enough.exit_code(), 1);
}

// A rank slowed in gemm shows it clearly in 2 of 4 shapes while its other 2 are too noisy to
// tell either way: the rank is slower (it was "unchanged" when a place needed most of its
// items). When its other 2 shapes show it unchanged, 2 for and 2 against: not named.
TEST(CompareGemm, ARankIsSlowerInMoreItemsThanRuleItOutNotInMostOfAll) {
  Files f;
  const TrainRecord t = train(1);
  auto shapes = [](unsigned seed, double factor, double noisy_sigma) {
    std::vector<std::pair<std::string, GemmShapeRecord>> out;
    for (int s = 0; s < 4; ++s) {
      GemmShapeRecord g = gemm("cpu", seed * 10 + static_cast<unsigned>(s));
      g.order = s + 1;
      std::mt19937 rng(seed * 100 + static_cast<unsigned>(s));
      std::normal_distribution<double> noise(0, noisy_sigma);
      for (std::size_t i = 0; i < 20; ++i) {
        double& rank2 = g.time_us[i * kWorld + 2];
        if (s < 2)
          rank2 *= factor;  // shows the slowdown
        else
          rank2 *= std::exp(noise(rng)) * 1.3;  // noise (or not) around a small shift
      }
      out.emplace_back("64x128x" + std::to_string(128 * (s + 1)), g);
    }
    return out;
  };
  const Comparison noisy = compare(f.write_shapes("a.h5", &t, nullptr, shapes(1, 1, 0.8)),
                                   f.write_shapes("b.h5", &t, nullptr, shapes(2, 3, 0.8)));
  const auto named = slower_places(noisy);
  ASSERT_EQ(named.size(), 1u) << format_comparison(noisy, true);
  EXPECT_EQ(named[0].rfind("rank 2 (", 0), 0u) << named[0];
  EXPECT_EQ(noisy.exit_code(), 1);

  const Comparison clear = compare(f.write_shapes("c.h5", &t, nullptr, shapes(3, 1, 0.01)),
                                   f.write_shapes("d.h5", &t, nullptr, shapes(4, 3, 0.01)));
  EXPECT_TRUE(slower_places(clear).empty()) << format_comparison(clear, true);
}

TEST(CompareFormats, JsonJunitAndPrometheusSayTheSame) {
  Files f;
  const TrainRecord a = train(1), b = train(2, 3, 1.6);
  const Comparison c = compare(f.write("a.h5", &a, nullptr), f.write("b.h5", &b, nullptr));
  const nlohmann::json j = nlohmann::json::parse(format_compare(ReportFormat::kJson, c, false));
  EXPECT_EQ(j["kind"], "compare");
  EXPECT_EQ(j["verdict"], "regressed");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["counts"]["slower_places"], 2);
  EXPECT_EQ(j["items"].size(), c.items.size());
  EXPECT_EQ(j["places"][0]["result"], "slower");
  const std::string junit = format_compare(ReportFormat::kJunit, c, false);
  EXPECT_NE(junit.find("failures=\"2\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<testsuite name=\"compare.train\""), std::string::npos) << junit;
  const std::string prom = format_compare(ReportFormat::kPrometheus, c, false);
  EXPECT_NE(prom.find("shakedown_compare_places{result=\"slower\"} 2"), std::string::npos) << prom;
}

}  // namespace
}  // namespace shakedown
