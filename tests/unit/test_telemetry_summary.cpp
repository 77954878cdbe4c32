// What a node keeps of a phase's samples (telemetry/summary.hpp): statistics, the decimated
// series, counters as increases, the events that keep the full series, and the message to rank 0.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>

#include "core/error.hpp"

#include "telemetry/summary.hpp"

namespace {

using namespace shakedown::telemetry;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<Channel> three_channels() {
  return {{"gpu0", gpu::kPower, "W", Kind::kGauge},
          {"gpu0", gpu::kClockReasons, "bits", Kind::kBits},
          {"gpu0", gpu::kEccUncorrected, "errors", Kind::kCounter}};
}

// Samples at t = 0, 100, ... ms with the given rows of (power, reasons, ecc).
Batch batch_of(double t0_us, const std::vector<std::array<double, 3>>& rows) {
  Batch b;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    b.time_us.push_back(t0_us + 1e5 * static_cast<double>(i));
    b.values.insert(b.values.end(), rows[i].begin(), rows[i].end());
  }
  return b;
}

TEST(TelemetrySummary, StatsDecimationAndCountersAsIncreases) {
  NodeSummarizer s(three_channels(), 1e6 /* 1 s windows */, false);
  // 15 samples over 1.4 s: windows [0, 1 s) with 10 samples and [1 s, 2 s) with 5.
  std::vector<std::array<double, 3>> rows;
  for (int i = 0; i < 15; ++i) rows.push_back({300.0 + i, i == 12 ? 1.0 : 0.0, 5.0});
  rows[3][0] = kNaN;  // a failed read is left out, not counted as 0
  const NodePhase p = s.summarize("gemm", 0, 1.5e6, batch_of(0, rows));
  EXPECT_EQ(p.phase, "gemm");
  EXPECT_EQ(p.samples, 15);
  EXPECT_DOUBLE_EQ(p.stats[0], 300);    // power min
  EXPECT_DOUBLE_EQ(p.stats[1], 307.5);  // median of 300..314 without 303: 14 values
  EXPECT_DOUBLE_EQ(p.stats[2], 314);
  EXPECT_DOUBLE_EQ(p.stats[5], 1);   // reasons max
  EXPECT_DOUBLE_EQ(p.stats[8], 0);   // ECC: 5 before the run, no increase
  EXPECT_DOUBLE_EQ(s.base()[2], 5);  // ... kept as the base
  EXPECT_TRUE(std::isnan(s.base()[0]));
  ASSERT_EQ(p.decimated_time_us.size(), 2u);
  EXPECT_DOUBLE_EQ(p.decimated_time_us[1], 1e6);
  ASSERT_EQ(p.decimated.size(), 6u);
  EXPECT_DOUBLE_EQ(p.decimated[0], (300 + 301 + 302 + 304 + 305 + 306 + 307 + 308 + 309) / 9.0);
  EXPECT_DOUBLE_EQ(p.decimated[3], (310 + 311 + 312 + 313 + 314) / 5.0);
  EXPECT_DOUBLE_EQ(p.decimated[1], 0);  // no reason bit in the first window
  EXPECT_DOUBLE_EQ(p.decimated[4], 1);  // the second window's OR (a bit seen once)
  EXPECT_TRUE(p.events.empty()) << "bit 0x1 (idle) is no throttle: " << p.events;
  EXPECT_TRUE(p.full.empty()) << "no event: the full-rate series is not kept";
}

TEST(TelemetrySummary, ThrottleAndErrorIncreasesKeepTheFullSeries) {
  NodeSummarizer s(three_channels(), 1e6, false);
  const NodePhase quiet = s.summarize("a", 0, 3e5, batch_of(0, {{300, 0, 0}, {300, 0, 0}}));
  EXPECT_TRUE(quiet.events.empty());
  const NodePhase hot =
      s.summarize("b", 3e5, 6e5, batch_of(3e5, {{690, 0x4 | 0x8, 0}, {700, 0x1, 2}}));
  EXPECT_EQ(hot.events, "gpu0 throttled (sw_power_cap, hw_slowdown); gpu0 ecc_uncorrected +2");
  EXPECT_EQ(hot.full_time_us.size(), 2u);
  EXPECT_EQ(hot.full.size(), 6u);
  EXPECT_DOUBLE_EQ(hot.full[5], 2);  // the increase, not the raw count
  // The same count again is no new event; a further error is.
  const NodePhase same = s.summarize("c", 6e5, 9e5, batch_of(6e5, {{300, 0, 2}}));
  EXPECT_TRUE(same.events.empty()) << same.events;
  const NodePhase more = s.summarize("d", 9e5, 1.2e6, batch_of(9e5, {{300, 0, 3}}));
  EXPECT_EQ(more.events, "gpu0 ecc_uncorrected +1");
}

TEST(TelemetrySummary, KeepAllKeepsEveryPhase) {
  NodeSummarizer s(three_channels(), 1e6, true);
  const NodePhase p = s.summarize("a", 0, 2e5, batch_of(0, {{300, 0, 0}, {301, 0, 0}}));
  EXPECT_TRUE(p.events.empty());
  EXPECT_EQ(p.full_time_us.size(), 2u);
}

TEST(TelemetrySummary, AnEmptyPhaseHasNaNStatsAndNoRows) {
  NodeSummarizer s(three_channels(), 1e6, false);
  const NodePhase p = s.summarize("short", 0, 10, Batch{});
  EXPECT_EQ(p.samples, 0);
  ASSERT_EQ(p.stats.size(), 9u);
  for (double v : p.stats) EXPECT_TRUE(std::isnan(v));
  EXPECT_TRUE(p.decimated_time_us.empty());
}

TEST(TelemetrySummary, MessagesRoundTrip) {
  NodeSummarizer s(three_channels(), 1e6, false);
  NodeMessage m;
  m.node = 3;
  m.host = "gpu-node-17";
  m.with_header = true;
  m.channels = s.channels();
  m.bus_ids = {"0000:1b:00.0"};
  m.notes = {"no InfiniBand ports under /sys/class/infiniband", "gpu0 temperature: Not Supported"};
  m.sample_cost_us = 42.5;
  m.sampler_cpus = "6,7";
  m.phase = s.summarize("train", 10, 20, batch_of(0, {{300, 0x8, 1}, {310, 0, 1}}));
  m.base = s.base();
  const NodeMessage back = unpack(pack(m));
  EXPECT_EQ(back.node, 3);
  EXPECT_EQ(back.host, "gpu-node-17");
  ASSERT_EQ(back.channels.size(), 3u);
  EXPECT_EQ(back.channels[1].signal, gpu::kClockReasons);
  EXPECT_EQ(back.channels[2].kind, Kind::kCounter);
  EXPECT_EQ(back.bus_ids, m.bus_ids);
  EXPECT_EQ(back.notes, m.notes);
  EXPECT_DOUBLE_EQ(back.sample_cost_us, 42.5);
  EXPECT_EQ(back.sampler_cpus, "6,7");
  EXPECT_EQ(back.base.size(), 3u);
  EXPECT_EQ(back.phase.phase, "train");
  EXPECT_EQ(back.phase.events, m.phase.events);
  EXPECT_EQ(back.phase.full, m.phase.full);
  EXPECT_EQ(back.phase.decimated_time_us, m.phase.decimated_time_us);
  // A message without the header carries only the phase.
  m.with_header = false;
  EXPECT_TRUE(unpack(pack(m)).channels.empty());
  // A truncated message is an error, not a read past its end.
  const std::string bytes = pack(m);
  EXPECT_THROW(unpack(bytes.substr(0, bytes.size() - 3)), shakedown::InternalError);
}

TEST(TelemetrySummary, AnXidInTheFirstSampleIsTheRunsOwn) {
  // ECC counts before the run are its base; the Xid count starts with the run, so an Xid seen
  // in the very first sample is one of the run's.
  NodeSummarizer s({{"gpu0", gpu::kEccUncorrected, "errors", Kind::kCounter},
                    {"gpu0", gpu::kXidCount, "errors", Kind::kCounter}},
                   1e6, false);
  Batch b;
  b.time_us = {0, 1e5};
  b.values = {3, 1, 3, 1};
  const NodePhase p = s.summarize("inventory", 0, 2e5, b);
  EXPECT_DOUBLE_EQ(p.stats[2], 0) << "3 ECC errors before the run: the base";
  EXPECT_DOUBLE_EQ(p.stats[5], 1) << "the Xid counts";
  EXPECT_EQ(p.events, "gpu0 xid_count +1");
  EXPECT_DOUBLE_EQ(s.base()[0], 3);
  EXPECT_DOUBLE_EQ(s.base()[1], 0);
}

TEST(TelemetrySummary, ALongPhaseGetsWiderWindowsNotMoreRows) {
  // 100 samples over 9.9 s with 1 s windows would be 10 rows; at most 4: windows of ~2.5 s.
  NodeSummarizer s(three_channels(), 1e6, false, 4);
  std::vector<std::array<double, 3>> rows(100, {300, 0, 0});
  rows[99][1] = 8;  // a throttle in the last sample still shows in the last window's OR
  const NodePhase p = s.summarize("collectives", 0, 1e7, batch_of(0, rows));
  ASSERT_EQ(p.decimated_time_us.size(), 4u);
  EXPECT_DOUBLE_EQ(p.decimated_time_us[1], 2.5e6);
  EXPECT_DOUBLE_EQ(p.decimated[3 * 3 + 1], 8);
  // A short phase keeps its 1 s windows.
  const NodePhase q = s.summarize("gemm", 1e7, 1.2e7, batch_of(1e7, {{300, 0, 0}, {300, 0, 0}}));
  EXPECT_EQ(q.decimated_time_us.size(), 1u);
}

}  // namespace
