// The train phase's verdict from synthetic run files written with write_train (the real layout,
// read back by RunFile and judged by train_findings): the summary's arithmetic, a replica that
// diverges, two replicas that differ, broken scales, a slow rank, and a budget that does not fit.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "analysis/train_report.hpp"
#include "fake_ranks.hpp"
#include "record/reader.hpp"
#include "record/schema.hpp"
#include "record/train_rows.hpp"
#include "record/writer.hpp"
#include "temp_dir.hpp"

namespace shakedown {
namespace {

constexpr std::size_t kTrainSteps = 16;

std::vector<RankInfo> ranks(int world) {
  return testing_support::two_per_host(world);
}

// A healthy run: tp x dp ranks, forward 10 ms and backward 20 ms under 3% noise, 2 ms exposed of
// 8 ms DP communication, parameters equal across replicas. `slow` (or -1) computes `factor` x as
// long and finishes backward that much later; its replicas then wait for it.
TrainRecord healthy(int tp, int dp, int slow = -1, double factor = 1) {
  TrainRecord r;
  r.model = "custom";
  r.mlp = "gelu";
  r.recipe = "delayed";
  r.format = "hybrid";
  r.engine = "cpu";
  r.layers = 2;
  r.hidden = 256;
  r.tp = tp;
  r.dp = dp;
  r.rank_flop = 3e9;
  r.tokens_per_step = 128 * dp;
  r.memory_bytes = 2.5 * double(1ull << 30);
  r.steps = kTrainSteps;
  r.buckets = 2;
  r.world = static_cast<std::uint64_t>(tp * dp);
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 0.03);
  const auto w = static_cast<std::size_t>(tp * dp);
  for (std::size_t s = 0; s < kTrainSteps; ++s) {
    for (std::size_t k = 0; k < w; ++k) {
      const double f = static_cast<int>(k) == slow ? factor : 1.0;
      r.fwd_ms.push_back(10 * f * std::exp(noise(rng)));
      r.bwd_ms.push_back(20 * f * std::exp(noise(rng)));
      r.tp_comm_ms.push_back(1);
      r.dp_exposed_ms.push_back(2);
      r.dp_span_ms.push_back(8);
      r.optim_ms.push_back(3);
      r.step_ms.push_back(40 + (slow >= 0 ? 30 * (factor - 1) : 0) + static_cast<double>(k));
      const bool late = slow >= 0 && static_cast<int>(k) / tp == slow / tp;  // its TP group
      r.dp_arrival_us.push_back((late ? 30e3 * (factor - 1) : 0) + 100 * std::exp(noise(rng)));
      r.zero_grad_share.push_back(0);
      r.param_hash.push_back(1000 * s + k % static_cast<std::size_t>(tp));
    }
  }
  r.bucket_start_us.assign(kTrainSteps * 2 * w, -5000);
  r.bucket_end_us.assign(kTrainSteps * 2 * w, 1000);
  r.bucket_bytes = {1 << 20, 4 << 20};
  for (std::size_t k = 0; k < w; ++k) {
    r.tp_rank.push_back(static_cast<std::int64_t>(k) % tp);
    r.dp_rank.push_back(static_cast<std::int64_t>(k) / tp);
    r.scales_finite.push_back(1);
  }
  return r;
}

struct Judged {
  TrainFindings findings;
  std::vector<const Finding*> of(const std::string& check) const {
    std::vector<const Finding*> out;
    for (const Finding& f : findings.findings) {
      if (f.check == check) out.push_back(&f);
    }
    return out;
  }
};

Judged judge(const TrainRecord& rec, const std::string& extra_yaml = "") {
  testing_support::TempDir dir;
  RunMeta meta;
  meta.shakedown_version = "test";
  meta.config_yaml = "phases: [train]\n" + extra_yaml;
  meta.world_size = static_cast<std::int64_t>(rec.world);
  meta.node_count = static_cast<std::int64_t>(rec.world / 2);
  const auto path = dir.path() / "train.h5";
  {
    RunWriter w = RunWriter::create(path, meta, 0);
    w.write_topology(ranks(static_cast<int>(rec.world)), {});
    write_train(w, rec);
    w.finish(schema::kStatusComplete);
  }
  const RunFile file = RunFile::open(path);
  const RunFacts facts = read_run_facts(file);
  return {train_findings(file, facts, GemmFindings{})};
}

TEST(TrainVerdict, HealthyRunPassesAndTheSummaryIsTheArithmetic) {
  const Judged j = judge(healthy(2, 2), "cost:\n  gpu_hour_usd: 3.6\n");
  ASSERT_TRUE(j.findings.ran);
  for (const char* check :
       {"train.coverage", "train.replicas", "train.numerics", "train.stragglers"}) {
    const auto f = j.of(check);
    ASSERT_EQ(f.size(), 1u) << check;
    EXPECT_EQ(f[0]->status, CheckStatus::kPass) << check << ": " << f[0]->message;
  }
  // Two TP groups: which of them is late cannot be told from arrivals alone. Said, not passed.
  const auto late = j.of("train.dp_arrival");
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0]->status, CheckStatus::kSkip);
  EXPECT_NE(late[0]->message.find("fewer than 3"), std::string::npos) << late[0]->message;
  const TrainSummary& s = j.findings.summary;
  // A step lasts until its slowest rank (step_ms 40 + rank index: rank 3's 43 ms).
  EXPECT_DOUBLE_EQ(s.step_med_ms, 43);
  EXPECT_DOUBLE_EQ(s.overlap_efficiency, 1 - 2.0 / 8.0);
  EXPECT_DOUBLE_EQ(s.tokens_per_s, 256 / 0.043);
  // 4 GPUs at $3.6 an hour = $0.004 per second, for 43 ms.
  EXPECT_NEAR(s.usd_per_step, 0.004 * 0.043, 1e-12);
  EXPECT_NEAR(s.usd_per_million_tokens, 0.004 * 0.043 / 256 * 1e6, 1e-9);
  // No gemm phase, no platform: MFU has nothing to be against, and says so.
  EXPECT_EQ(s.peak_tflops, 0);
  const auto mfu = j.of("train.mfu");
  ASSERT_EQ(mfu.size(), 1u);
  EXPECT_EQ(mfu[0]->status, CheckStatus::kSkip);
  EXPECT_NE(mfu[0]->message.find("no peak to compare with"), std::string::npos);
  // No GPU on rank 0: the budget is stated, not compared.
  const auto mem = j.of("train.memory");
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0]->status, CheckStatus::kSkip);
  EXPECT_NE(mem[0]->message.find("2.50 GiB"), std::string::npos) << mem[0]->message;
}

TEST(TrainVerdict, LatenessIsJudgedFromThreeGroupsAndEnoughSteps) {
  EXPECT_EQ(judge(healthy(1, 4)).of("train.dp_arrival")[0]->status, CheckStatus::kPass);
  // Three steps of four groups cannot reach p < 0.01: skipped, saying how many would.
  TrainRecord r = healthy(1, 4);
  r.steps = 3;
  for (auto* v : {&r.step_ms, &r.fwd_ms, &r.bwd_ms, &r.tp_comm_ms, &r.dp_exposed_ms, &r.dp_span_ms,
                  &r.optim_ms, &r.dp_arrival_us, &r.zero_grad_share}) {
    v->resize(3 * 4);
  }
  r.param_hash.resize(3 * 4);
  r.bucket_start_us.resize(3 * 2 * 4);
  r.bucket_end_us.resize(3 * 2 * 4);
  const Judged j = judge(r);
  const auto late = j.of("train.dp_arrival");
  EXPECT_EQ(late[0]->status, CheckStatus::kSkip);
  EXPECT_NE(late[0]->message.find("run train.steps >= 7"), std::string::npos) << late[0]->message;
  const auto slow = j.of("train.stragglers");
  EXPECT_EQ(slow[0]->status, CheckStatus::kSkip);
  EXPECT_NE(slow[0]->message.find("run train.steps >= 7"), std::string::npos) << slow[0]->message;
}

TEST(TrainVerdict, AReplicaOffTheMajorityIsNamedFromTheStepItDiverged) {
  TrainRecord r = healthy(2, 3);  // replicas of tp_rank 0: ranks 0, 2, 4
  for (std::size_t s = 2; s < kTrainSteps; ++s) r.param_hash[s * 6 + 4] ^= 1;
  const Judged j = judge(r);
  const auto f = j.of("train.replicas");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->status, CheckStatus::kFail);
  EXPECT_EQ(f[0]->rank, 4);
  EXPECT_EQ(f[0]->corruption, 1);
  EXPECT_EQ(f[0]->host, "gpu-2");
  EXPECT_DOUBLE_EQ(f[0]->value, 3);  // measured step 3 (index 2)
  EXPECT_NE(f[0]->message.find("3 data-parallel replicas (ranks 0,2,4) from measured step 3"),
            std::string::npos)
      << f[0]->message;
}

TEST(TrainVerdict, TwoReplicasThatDifferAreReportedTogether) {
  TrainRecord r = healthy(1, 2);
  r.param_hash[kTrainSteps * 2 - 1] ^= 1;  // rank 1, last step
  const Judged j = judge(r);
  const auto f = j.of("train.replicas");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->status, CheckStatus::kFail);
  EXPECT_EQ(f[0]->rank, -1);  // neither can be blamed alone
  EXPECT_EQ(f[0]->corruption, 1);
  EXPECT_EQ(f[0]->subject, "ranks 0,1");
}

TEST(TrainVerdict, OneReplicaIsAWarningNotAPass) {
  const Judged j = judge(healthy(2, 1));
  const auto f = j.of("train.replicas");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->status, CheckStatus::kWarn);
  EXPECT_EQ(j.of("train.dp_arrival")[0]->status, CheckStatus::kSkip);
}

TEST(TrainVerdict, BrokenScalesAndWipedOutGradientsFailNamingTheRank) {
  TrainRecord r = healthy(1, 4);
  r.scales_finite[1] = 0;
  r.zero_grad_share[3 * 4 + 2] = 0.4;  // rank 2, step 4
  const Judged j = judge(r);
  const auto f = j.of("train.numerics");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0]->rank, 1);
  EXPECT_NE(f[0]->message.find("not finite"), std::string::npos);
  EXPECT_EQ(f[1]->rank, 2);
  EXPECT_DOUBLE_EQ(f[1]->value, 0.4);
  for (const Finding* x : f) {
    EXPECT_EQ(x->status, CheckStatus::kFail);
    EXPECT_EQ(x->corruption, 0);
  }
}

TEST(TrainVerdict, ASlowRankIsTheStragglerAndTheOneTheOthersWaitedFor) {
  // tp 2: rank 3's TP peer (rank 2) finishes backward as late as it does, but only rank 3's
  // compute is slow: rank 3 is named, and no one else.
  const Judged j = judge(healthy(2, 3, /*slow=*/3, /*factor=*/2));
  const auto slow = j.of("train.stragglers");
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0]->rank, 3);
  EXPECT_EQ(slow[0]->status, CheckStatus::kFail);  // 100% slower on cores of its own
  EXPECT_NEAR(slow[0]->value, 1.0, 0.2);
  const auto late = j.of("train.dp_arrival");
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0]->rank, 3);
  EXPECT_EQ(late[0]->status, CheckStatus::kWarn);
  EXPECT_NE(late[0]->message.find("ranks 2,3"), std::string::npos) << late[0]->message;
  EXPECT_EQ(j.findings.summary.slowest_rank, 3);
}

TEST(TrainVerdict, ARankSlowInForwardOnlyIsNamed) {
  // As a tp 1 run on shared cores shows it: the slow rank's forward is twice the others', while
  // its backward looks like theirs (their backward carries the DP buckets' progress). Judged as
  // forward and backward separately it needed both and went unnamed.
  TrainRecord r = healthy(1, 4);
  for (std::size_t s = 0; s < kTrainSteps; ++s) r.fwd_ms[s * 4 + 2] *= 2.2;
  const Judged j = judge(r);  // of() points into it: it must outlive `slow`
  const auto slow = j.of("train.stragglers");
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0]->rank, 2);
  EXPECT_NEAR(slow[0]->value, 0.4, 0.1);  // 12 + 20 of 10 + 20 ms
  EXPECT_NE(slow[0]->message.find("(forward + backward, over"), std::string::npos)
      << slow[0]->message;
}

TEST(TrainVerdict, ALateGroupWithNormalComputeIsNamedAsAGroup) {
  TrainRecord r = healthy(2, 3);
  for (std::size_t s = 0; s < kTrainSteps; ++s) {
    r.dp_arrival_us[s * 6 + 4] += 20e3;
    r.dp_arrival_us[s * 6 + 5] += 20e3;
  }
  const Judged j = judge(r);
  const auto late = j.of("train.dp_arrival");
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0]->status, CheckStatus::kWarn);
  EXPECT_EQ(late[0]->rank, -1);
  EXPECT_EQ(late[0]->subject, "ranks 4,5");
  EXPECT_EQ(j.of("train.stragglers")[0]->status, CheckStatus::kPass);
}

TEST(TrainVerdict, ABudgetLargerThanTheGpuIsAWarning) {
  TrainRecord r = healthy(1, 2);
  r.memory_device = "NVIDIA H100 80GB HBM3";
  r.memory_device_bytes = 2.0 * double(1ull << 30);
  const Judged j = judge(r);
  const auto mem = j.of("train.memory");
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0]->status, CheckStatus::kWarn);
  EXPECT_NE(mem[0]->message.find("does NOT fit NVIDIA H100 80GB HBM3's 2.00 GiB"),
            std::string::npos)
      << mem[0]->message;
}

// A file of an earlier version: GEMMs on cuBLASLt with host-staged operands and MPI
// communication (here recorded as communication "mpi"; such files have no attribute, which the
// report reads as "mpi"): measured, but not a TE job's step; coverage says so rather than
// passing.
TEST(TrainVerdict, HostStagedGpuGemmsAreAWarningSayingWhy) {
  TrainRecord r = healthy(1, 2);
  r.engine = "cublaslt";
  r.communication = "mpi";
  const Judged j = judge(r);
  const auto cov = j.of("train.coverage");
  ASSERT_EQ(cov.size(), 1u);
  EXPECT_EQ(cov[0]->status, CheckStatus::kWarn);
  EXPECT_NE(cov[0]->message.find("operands staged through host memory"), std::string::npos)
      << cov[0]->message;
  EXPECT_EQ(j.findings.summary.engine, "cublaslt");
}

// The device-resident step (cuBLASLt and NCCL) passes coverage and says how it ran.
TEST(TrainVerdict, DeviceResidentStepPassesCoverageAndSaysSo) {
  TrainRecord r = healthy(1, 2);
  r.engine = "cublaslt";
  r.communication = "nccl";
  const Judged j = judge(r);
  const auto cov = j.of("train.coverage");
  ASSERT_EQ(cov.size(), 1u);
  EXPECT_EQ(cov[0]->status, CheckStatus::kPass) << cov[0]->message;
  EXPECT_NE(cov[0]->message.find("engine cublaslt with NCCL, device-resident"), std::string::npos)
      << cov[0]->message;
}

TEST(TrainVerdict, AskedForButNotRecordedFailsCoverage) {
  testing_support::TempDir dir;
  RunMeta meta;
  meta.shakedown_version = "test";
  meta.config_yaml = "phases: [train]\n";
  meta.world_size = 2;
  meta.node_count = 1;
  const auto path = dir.path() / "empty.h5";
  {
    RunWriter w = RunWriter::create(path, meta, 0);
    w.write_topology(ranks(2), {});
    w.finish(schema::kStatusComplete);
  }
  const RunFile file = RunFile::open(path);
  const TrainFindings t = train_findings(file, read_run_facts(file), GemmFindings{});
  ASSERT_EQ(t.findings.size(), 1u);
  EXPECT_EQ(t.findings[0].check, "train.coverage");
  EXPECT_EQ(t.findings[0].status, CheckStatus::kFail);
}

}  // namespace
}  // namespace shakedown
