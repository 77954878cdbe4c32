// The collective table against nccl-tests' byte rules and bus-bandwidth factors.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

#include "comm/collectives.hpp"
#include "comm/dtype.hpp"
#include "comm_support.hpp"

namespace shakedown {
namespace {

using testing_support::kAllKinds;
constexpr int kCollectiveRankCounts[] = {1, 2, 3, 4, 5, 7, 8, 16, 100, 1000};
constexpr std::size_t kElemSizes[] = {1, 2, 4};

CollectiveCounts counts(CollectiveKind kind, std::uint64_t bytes, std::size_t elem, int n) {
  return collective(kind).counts(bytes, elem, n);
}

TEST(CommCollectives, OneRowPerKindInOrder) {
  const auto& table = collective_table();
  ASSERT_EQ(table.size(), 6u);
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(table[i].kind), i);
    EXPECT_EQ(&collective(table[i].kind), &table[i]);
    EXPECT_EQ(find_collective(table[i].name), &table[i]);
    EXPECT_NE(table[i].counts, nullptr);
    EXPECT_NE(table[i].busbw_factor, nullptr);
    names.insert(table[i].name);
  }
  EXPECT_EQ(names.size(), 6u);
  EXPECT_EQ(collective(CollectiveKind::kAllReduce).name, "all_reduce");
  EXPECT_EQ(collective(CollectiveKind::kAllGather).name, "all_gather");
  EXPECT_EQ(collective(CollectiveKind::kReduceScatter).name, "reduce_scatter");
  EXPECT_EQ(collective(CollectiveKind::kBroadcast).name, "broadcast");
  EXPECT_EQ(collective(CollectiveKind::kAllToAll).name, "all_to_all");
  EXPECT_EQ(collective(CollectiveKind::kSendRecv).name, "send_recv");
  EXPECT_EQ(find_collective("allreduce"), nullptr);
  EXPECT_EQ(find_collective(""), nullptr);
  EXPECT_EQ(find_collective("all_reduce "), nullptr);
}

TEST(CommCollectives, OnlyReductionsReduce) {
  for (CollectiveKind k : kAllKinds) {
    const bool want = k == CollectiveKind::kAllReduce || k == CollectiveKind::kReduceScatter;
    EXPECT_EQ(collective(k).reduces, want) << collective(k).name;
  }
}

TEST(CommCollectives, BusBandwidthFactors) {
  for (int n : kCollectiveRankCounts) {
    const double nd = n;
    EXPECT_DOUBLE_EQ(collective(CollectiveKind::kAllReduce).busbw_factor(n), 2 * (nd - 1) / nd);
    EXPECT_DOUBLE_EQ(collective(CollectiveKind::kAllGather).busbw_factor(n), (nd - 1) / nd);
    EXPECT_DOUBLE_EQ(collective(CollectiveKind::kReduceScatter).busbw_factor(n), (nd - 1) / nd);
    EXPECT_DOUBLE_EQ(collective(CollectiveKind::kAllToAll).busbw_factor(n), (nd - 1) / nd);
    EXPECT_DOUBLE_EQ(collective(CollectiveKind::kBroadcast).busbw_factor(n), 1.0);
    EXPECT_DOUBLE_EQ(collective(CollectiveKind::kSendRecv).busbw_factor(n), 1.0);
  }
  // One rank: nothing crosses a link (nccl-tests prints busbw 0), except the factor-1 rows.
  EXPECT_EQ(collective(CollectiveKind::kAllReduce).busbw_factor(1), 0.0);
  EXPECT_EQ(collective(CollectiveKind::kAllGather).busbw_factor(1), 0.0);
  EXPECT_EQ(collective(CollectiveKind::kReduceScatter).busbw_factor(1), 0.0);
  EXPECT_EQ(collective(CollectiveKind::kAllToAll).busbw_factor(1), 0.0);
  EXPECT_EQ(collective(CollectiveKind::kBroadcast).busbw_factor(1), 1.0);
  EXPECT_EQ(collective(CollectiveKind::kSendRecv).busbw_factor(1), 1.0);
  EXPECT_DOUBLE_EQ(collective(CollectiveKind::kAllReduce).busbw_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(collective(CollectiveKind::kAllGather).busbw_factor(8), 0.875);
  EXPECT_DOUBLE_EQ(collective(CollectiveKind::kAllReduce).busbw_factor(3), 4.0 / 3.0);
  for (CollectiveKind k : kAllKinds) {
    const double f0 = collective(k).busbw_factor(0);
    EXPECT_TRUE(f0 == 0.0 || f0 == 1.0) << collective(k).name;  // no division by zero
  }
}

TEST(CommCollectives, AlgBandwidth) {
  EXPECT_DOUBLE_EQ(algbw_gbps(1'000'000'000, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(algbw_gbps(8'000'000'000, 0.5), 16.0);
  EXPECT_DOUBLE_EQ(algbw_gbps(1 << 20, 1e-3), 1.048576);
  EXPECT_EQ(algbw_gbps(1000, 0.0), 0.0);
  EXPECT_EQ(algbw_gbps(1000, -1.0), 0.0);
}

// Whole-buffer collectives: count = bytes / elem, no 16-byte rounding (nccl-tests).
TEST(CommCollectives, WholeBufferCounts) {
  for (CollectiveKind k :
       {CollectiveKind::kAllReduce, CollectiveKind::kBroadcast, CollectiveKind::kSendRecv}) {
    for (int n : kCollectiveRankCounts) {
      for (std::size_t e : kElemSizes) {
        for (std::uint64_t bytes : {0ull, 1ull, 3ull, 4ull, 6ull, 17ull, 1000ull, 1ull << 20,
                                    (1ull << 20) + 3, 1ull << 34}) {
          const CollectiveCounts c = counts(k, bytes, e, n);
          const std::uint64_t want = bytes / e;
          EXPECT_EQ(c.unit, want) << collective(k).name << " " << bytes << " " << e;
          EXPECT_EQ(c.send, want);
          EXPECT_EQ(c.recv, want);
          EXPECT_EQ(c.bytes, want * e);
        }
      }
    }
  }
  const CollectiveCounts c = counts(CollectiveKind::kAllReduce, 1 << 20, 4, 8);
  EXPECT_EQ(c.unit, 262144u);
  EXPECT_EQ(c.bytes, 1u << 20);
  // Too small for one element: nothing.
  const CollectiveCounts z = counts(CollectiveKind::kAllReduce, 3, 4, 2);
  EXPECT_EQ(z.unit, 0u);
  EXPECT_EQ(z.send, 0u);
  EXPECT_EQ(z.recv, 0u);
  EXPECT_EQ(z.bytes, 0u);
}

// Split collectives: each rank's (peer's) share is bytes / n rounded down to 16 bytes.
TEST(CommCollectives, SplitCounts) {
  for (int n : kCollectiveRankCounts) {
    const std::uint64_t nu = static_cast<std::uint64_t>(n);
    for (std::size_t e : kElemSizes) {
      for (std::uint64_t bytes : {0ull, 1ull, 15ull, 16ull, 31ull, 100ull, 1000ull, 4096ull,
                                  12345ull, 1ull << 20, (1ull << 20) + 48, 3ull << 30}) {
        const std::uint64_t share_bytes = bytes / nu / 16 * 16;
        const std::uint64_t unit = share_bytes / e;
        const std::string what =
            std::to_string(bytes) + " B, elem " + std::to_string(e) + ", n " + std::to_string(n);
        const CollectiveCounts ag = counts(CollectiveKind::kAllGather, bytes, e, n);
        const CollectiveCounts rs = counts(CollectiveKind::kReduceScatter, bytes, e, n);
        const CollectiveCounts aa = counts(CollectiveKind::kAllToAll, bytes, e, n);
        for (const CollectiveCounts* c : {&ag, &rs, &aa}) {
          EXPECT_EQ(c->unit, unit) << what;
          EXPECT_EQ(c->unit * e % 16, 0u) << what;
          EXPECT_LE(c->bytes, bytes) << what;
          EXPECT_EQ(c->bytes, unit * nu * e) << what;
          EXPECT_GT(c->bytes + 16 * nu, bytes) << what;  // at most 16 bytes short per rank
          if (unit == 0) {
            EXPECT_EQ(c->send, 0u) << what;
            EXPECT_EQ(c->recv, 0u) << what;
            EXPECT_EQ(c->bytes, 0u) << what;
          }
        }
        // all_gather: send one share, receive n; bytes = total output.
        EXPECT_EQ(ag.send, unit);
        EXPECT_EQ(ag.recv, unit * nu);
        EXPECT_EQ(ag.bytes, ag.recv * e);
        // reduce_scatter: send n shares, receive one; bytes = total input.
        EXPECT_EQ(rs.send, unit * nu);
        EXPECT_EQ(rs.recv, unit);
        EXPECT_EQ(rs.bytes, rs.send * e);
        // all_to_all: per-peer count x n each way; bytes = the per-rank buffer.
        EXPECT_EQ(aa.send, unit * nu);
        EXPECT_EQ(aa.recv, unit * nu);
        EXPECT_EQ(aa.bytes, aa.send * e);
      }
    }
  }
}

TEST(CommCollectives, SplitCountExamples) {
  // 1 MiB float32 over 8 ranks: 32768 elements each.
  CollectiveCounts c = counts(CollectiveKind::kAllGather, 1 << 20, 4, 8);
  EXPECT_EQ(c.unit, 32768u);
  EXPECT_EQ(c.recv, 262144u);
  EXPECT_EQ(c.bytes, 1u << 20);
  // 1000 B bfloat16 over 3 ranks: 333 B -> 320 B -> 160 elements per rank; 960 B counted.
  c = counts(CollectiveKind::kReduceScatter, 1000, 2, 3);
  EXPECT_EQ(c.unit, 160u);
  EXPECT_EQ(c.send, 480u);
  EXPECT_EQ(c.recv, 160u);
  EXPECT_EQ(c.bytes, 960u);
  // 100 B fp8 all_to_all over 7 ranks: 14 B per peer -> 0: too small.
  c = counts(CollectiveKind::kAllToAll, 100, 1, 7);
  EXPECT_EQ(c.unit, 0u);
  EXPECT_EQ(c.bytes, 0u);
  // 112 B over 7 ranks: exactly 16 B per peer.
  c = counts(CollectiveKind::kAllToAll, 112, 1, 7);
  EXPECT_EQ(c.unit, 16u);
  EXPECT_EQ(c.send, 112u);
  EXPECT_EQ(c.bytes, 112u);
  // One rank: the whole (16-byte rounded) buffer.
  c = counts(CollectiveKind::kAllGather, 100, 4, 1);
  EXPECT_EQ(c.unit, 24u);
  EXPECT_EQ(c.recv, 24u);
  EXPECT_EQ(c.bytes, 96u);
  // 1000 ranks need 16 kB before anyone gets an element.
  EXPECT_EQ(counts(CollectiveKind::kAllGather, 15999, 4, 1000).unit, 0u);
  EXPECT_EQ(counts(CollectiveKind::kAllGather, 16000, 4, 1000).unit, 4u);
}

TEST(CommCollectives, BadArgumentsGiveNothing) {
  for (CollectiveKind k : kAllKinds) {
    EXPECT_EQ(counts(k, 1 << 20, 0, 4).unit, 0u) << collective(k).name;
  }
  for (CollectiveKind k :
       {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
    EXPECT_EQ(counts(k, 1 << 20, 4, 0).unit, 0u) << collective(k).name;
    EXPECT_EQ(counts(k, 1 << 20, 4, -3).unit, 0u) << collective(k).name;
  }
}

}  // namespace
}  // namespace shakedown
