// shakedown compare on the link scan: synthetic run files written through RunWriter in the
// phase's layout (/linkscan, /linkscan/rail0), 6 nodes of one rank, every pair once with 5
// windows under 3% noise. A node whose links got 40% slower is named; a rerun names nothing;
// other message sizes are not compared, and said so.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "analysis/compare.hpp"
#include "core/error.hpp"
#include "fabric/schedule.hpp"
#include "fake_ranks.hpp"
#include "record/reader.hpp"
#include "record/schema.hpp"
#include "record/writer.hpp"
#include "temp_dir.hpp"

namespace shakedown {
namespace {

constexpr int kScanNodes = 6;
constexpr std::uint64_t kScanReps = 5;

// A run of `kScanNodes` nodes whose pairs move 10 GB/s, divided by `slow_factor` for pairs with
// node `slow`; `bytes` per message.
std::filesystem::path write_scan(const testing_support::TempDir& dir, const std::string& name,
                                 unsigned seed, int slow = -1, double slow_factor = 1,
                                 std::int64_t bytes = 1 << 20) {
  RunMeta meta;
  meta.shakedown_version = "test";
  meta.config_yaml = "phases: [linkscan]\n";
  meta.world_size = kScanNodes;
  meta.node_count = kScanNodes;
  const auto path = dir.path() / name;
  RunWriter w = RunWriter::create(path, meta, 0);
  w.write_topology(testing_support::per_host(kScanNodes, 1), {});
  namespace l = schema::linkscan;
  const std::string g = schema::kLinkscanGroup;
  w.set_attr(g, l::kAttrTransport, std::string("ucx"));
  w.set_attr(g, l::kAttrSchedule, std::string("all_pairs"));
  w.set_attr(g, l::kAttrSeed, std::uint64_t{1});
  w.set_attr(g, l::kAttrBytes, bytes);
  w.set_attr(g, l::kAttrWindow, std::int64_t{32});
  w.set_attr(g, l::kAttrReps, static_cast<std::int64_t>(kScanReps));
  w.set_attr(g, l::kAttrWarmup, std::int64_t{1});
  w.set_attr(g, l::kAttrLatBytes, std::int64_t{8});
  w.set_attr(g, l::kAttrLatIters, std::int64_t{100});
  w.set_attr(g, l::kAttrBwFraction, 0.93);
  w.set_attr(g, l::kAttrLatFactor, 2.1);
  w.set_attr(g, l::kAttrRails, std::string("auto"));
  w.set_attr(g, l::kAttrConcurrent, std::int64_t{1});
  w.set_attr(g, l::kAttrBidirectional, std::int64_t{0});
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.03);
  std::vector<std::int64_t> nodes, pairs, pass, round;
  std::vector<double> bw, lat, p99;
  std::string transports;
  for (int n = 0; n < kScanNodes; ++n) nodes.push_back(n);
  const std::vector<fabric::Round> rounds = fabric::scan_rounds(kScanNodes, "all_pairs", 0, 1);
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    for (const fabric::NodePair& p : rounds[r]) {
      pairs.push_back(p.a);
      pairs.push_back(p.b);
      pass.push_back(1);
      round.push_back(static_cast<std::int64_t>(r));
      const double f = (p.a == slow || p.b == slow) ? slow_factor : 1;
      for (std::uint64_t k = 0; k < kScanReps; ++k) bw.push_back(10 / f * std::exp(noise(rng)));
      lat.push_back(2);
      p99.push_back(3);
      transports += std::to_string(p.a) + "-" + std::to_string(p.b) + ": rc_mlx5/mlx5_0:1\n";
    }
  }
  const std::string rail = schema::linkscan_rail_group(0);
  const std::uint64_t count = pass.size();
  w.set_attr(rail, l::kAttrRail, std::int64_t{0});
  w.set_attr(rail, l::kAttrNetDevices, std::string("mlx5_0:1"));
  w.set_attr(rail, l::kAttrRetestBudget, std::int64_t{24});
  w.set_attr(rail, l::kAttrTransports, transports);
  w.set_attr(rail, l::kAttrSkipped, std::string());
  w.write_array(rail, l::kNodes, nodes, {kScanNodes});
  w.write_array(rail, l::kRanks, nodes, {kScanNodes});
  w.write_array(rail, l::kPairs, pairs, {count, 2});
  w.write_array(rail, l::kPass, pass, {count});
  w.write_array(rail, l::kRound, round, {count});
  w.write_array(rail, l::kBwGBps, bw, {count, kScanReps});
  w.write_array(rail, l::kLatUs, lat, {count});
  w.write_array(rail, l::kLatP99Us, p99, {count});
  w.finish(schema::kStatusComplete);
  return path;
}

Comparison compare_scans(const std::filesystem::path& before, const std::filesystem::path& after) {
  return compare_runs(RunFile::open(before), RunFile::open(after), CompareOptions{});
}

TEST(CompareLinkscan, ARerunNamesNoNode) {
  testing_support::TempDir dir;
  const Comparison c = compare_scans(write_scan(dir, "a.h5", 1), write_scan(dir, "b.h5", 2));
  EXPECT_EQ(c.exit_code(), 0);
  ASSERT_EQ(c.items.size(), static_cast<std::size_t>(kScanNodes));  // one per node of rail 0
  for (const CompareItem& i : c.items) {
    EXPECT_EQ(i.phase, "linkscan");
    EXPECT_EQ(i.unit, "ms");
    EXPECT_EQ(i.n_before, 5u * (kScanNodes - 1)) << i.where;  // its 5 partners' windows
    EXPECT_NE(i.result, CompareItem::Result::kSlower) << i.where;
    // 32 x 1 MiB at 10 GB/s: 3.36 ms a window.
    EXPECT_NEAR(i.before_us, 32.0 * (1 << 20) / 10e9 * 1e3, 0.2) << i.where;
  }
  EXPECT_EQ(c.slower_groups, 0u);
}

TEST(CompareLinkscan, ANodeWhoseLinksGotSlowerIsNamedAndNoOther) {
  testing_support::TempDir dir;
  const Comparison c =
      compare_scans(write_scan(dir, "a.h5", 1), write_scan(dir, "b.h5", 2, 3, 1.4));
  EXPECT_EQ(c.exit_code(), 1);
  std::vector<std::string> slower;
  for (const CompareGroup& g : c.groups) {
    if (g.result == CompareGroup::Result::kSlower) slower.push_back(g.name);
  }
  ASSERT_EQ(slower.size(), 1u) << ::testing::PrintToString(slower);
  EXPECT_NE(slower[0].find("node 3"), std::string::npos) << slower[0];
  EXPECT_NE(slower[0].find("gpu-3"), std::string::npos) << slower[0];
  EXPECT_NE(slower[0].find("linkscan"), std::string::npos) << slower[0];
}

TEST(CompareLinkscan, OtherWindowsAreNotComparedAndSaySo) {
  testing_support::TempDir dir;
  try {
    compare_scans(write_scan(dir, "a.h5", 1), write_scan(dir, "b.h5", 2, -1, 1, 4 << 20));
    ADD_FAILURE() << "two runs with nothing in common were compared";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "not compared: linkscan (the runs moved other windows: 1 MiB x 32 over ucx -> "
                  "4 MiB x 32 over ucx)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace shakedown
