// A slow rank's finding gains what its own GPU was doing in that phase, when the telemetry saw
// it throttled (analysis/telemetry_report.hpp, attach_throttling); other ranks' findings, other
// phases and healthy GPUs are left as they were.
#include <gtest/gtest.h>

#include "analysis/telemetry_report.hpp"

namespace {

using namespace shakedown;
namespace tg = telemetry::gpu;

// One node, two GPUs, two phases (inventory, gemm); gpu1 throttled (power cap) in gemm only.
TelemetryFindings one_node() {
  TelemetryNode n;
  n.node = 0;
  n.host = "gpu-a";
  for (const char* gpu : {"gpu0", "gpu1"}) {
    n.channels.push_back({gpu, tg::kPower, "W", telemetry::Kind::kGauge});
    n.channels.push_back({gpu, tg::kPowerLimit, "W", telemetry::Kind::kGauge});
    n.channels.push_back({gpu, tg::kClockReasons, "bits", telemetry::Kind::kBits});
  }
  n.gpu_bus_ids = {"0000:1b:00.0", "0000:1c:00.0"};
  n.phases = {"inventory", "gemm"};
  n.phase_start_us = {0, 1e6};
  n.phase_end_us = {1e6, 3e6};
  n.phase_samples = {10, 20};
  n.base.assign(6, 0);
  // stats [2 phases, 6 channels, 3]: power 300..690 W, limit 700 W.
  for (int p = 0; p < 2; ++p) {
    for (double v : {300.0, 400.0, 690.0, 700.0, 700.0, 700.0, 0.0, 0.0, 4.0}) n.stats.push_back(v);
    for (double v : {300.0, 400.0, 690.0, 700.0, 700.0, 700.0, 0.0, 0.0, 4.0}) n.stats.push_back(v);
  }
  // Decimated rows at 0.5 s (inventory) and 1.5 s, 2.5 s (gemm): gpu1's reasons 0x4 in gemm.
  n.decimated_time_us = {0.5e6, 1.5e6, 2.5e6};
  for (double reasons1 : {0.0, 4.0, 0.0}) {
    for (double v : {300.0, 700.0, 0.0, 690.0, 700.0, reasons1}) n.decimated.push_back(v);
  }
  TelemetryFindings t;
  t.ran = true;
  t.nodes.push_back(n);
  return t;
}

RunFacts two_ranks() {
  RunFacts facts;
  for (int r = 0; r < 2; ++r) {
    RankInfo info;
    info.rank = r;
    info.node_index = 0;
    info.hostname = "gpu-a";
    info.gpu.pci_bus_id = r == 0 ? "00000000:1B:00.0" : "00000000:1C:00.0";
    facts.ranks.push_back(info);
  }
  return facts;
}

Finding slow(int rank, const std::string& check) {
  Finding f;
  f.check = check;
  f.status = CheckStatus::kWarn;
  f.rank = rank;
  f.message = "rank " + std::to_string(rank) + " is 30% slower";
  return f;
}

TEST(AnalysisTelemetry, ASlowRanksThrottledGpuIsNamedInItsFinding) {
  std::vector<Finding> findings = {slow(1, "gemm.stragglers"), slow(0, "gemm.stragglers"),
                                   slow(1, "train.stragglers")};
  attach_throttling(findings, one_node(), two_ranks());
  EXPECT_EQ(findings[0].message,
            "rank 1 is 30% slower; its GPU (gpu1, 0000:1c:00.0) ran below its clocks in gemm "
            "(sw_power_cap; power up to 690 W of 700 W)");
  EXPECT_EQ(findings[1].message, "rank 0 is 30% slower") << "rank 0's GPU was not throttled";
  EXPECT_EQ(findings[2].message, "rank 1 is 30% slower") << "no telemetry of a train phase";
}

TEST(AnalysisTelemetry, OnlyWarnedOrFailedRankFindingsOfSlownessChange) {
  std::vector<Finding> findings = {slow(1, "gemm.stragglers"), slow(1, "gemm.output_hash"),
                                   slow(-1, "gemm.stragglers")};
  findings[0].status = CheckStatus::kPass;
  attach_throttling(findings, one_node(), two_ranks());
  for (const Finding& f : findings) EXPECT_EQ(f.message.find("its GPU"), std::string::npos);
  // Without telemetry nothing changes either.
  std::vector<Finding> more = {slow(1, "gemm.stragglers")};
  attach_throttling(more, TelemetryFindings{}, two_ranks());
  EXPECT_EQ(more[0].message, "rank 1 is 30% slower");
}

TEST(AnalysisTelemetry, APretendNodesRankUsesItsHostsSampler) {
  // One sampler per host: a rank of the host's second pretend node (node 1) finds its GPU in the
  // telemetry filed under node 0.
  RunFacts facts = two_ranks();
  facts.ranks[1].node_index = 1;
  std::vector<Finding> findings = {slow(1, "gemm.stragglers")};
  attach_throttling(findings, one_node(), facts);
  EXPECT_NE(findings[0].message.find("its GPU (gpu1, 0000:1c:00.0) ran below its clocks in gemm"),
            std::string::npos)
      << findings[0].message;
  // A rank of another host is not told about this host's GPUs.
  facts.ranks[1].hostname = "gpu-b";
  findings = {slow(1, "gemm.stragglers")};
  attach_throttling(findings, one_node(), facts);
  EXPECT_EQ(findings[0].message, "rank 1 is 30% slower");
}

}  // namespace
