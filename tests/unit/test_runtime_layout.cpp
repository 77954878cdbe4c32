// Node/rail layout from shared-memory domains and virtual nodes, without MPI.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "runtime/context.hpp"

using namespace shakedown;

TEST(Layout, OneHostNoVirtualNodes) {
  Layout l = compute_layout({0, 0, 0, 0}, 0, {});
  EXPECT_EQ(l.host_count, 1);
  EXPECT_EQ(l.node_count, 1);
  EXPECT_EQ(l.ranks_per_node, 4);
  EXPECT_EQ(l.node_of_rank, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(l.local_rank_of_rank, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Layout, OneHostTwoVirtualNodes) {
  Layout l = compute_layout({0, 0, 0, 0}, 2, {});
  EXPECT_EQ(l.node_count, 2);
  EXPECT_EQ(l.ranks_per_node, 2);
  EXPECT_EQ(l.node_of_rank, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(l.local_rank_of_rank, (std::vector<int>{0, 1, 0, 1}));
}

TEST(Layout, InterleavedHostsAreNumberedByLowestRank) {
  // Round-robin placement: ranks 0,2 on one host, 1,3 on the other.
  Layout l = compute_layout({0, 1, 0, 1}, 0, {});
  EXPECT_EQ(l.host_count, 2);
  EXPECT_EQ(l.node_of_rank, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(l.local_rank_of_rank, (std::vector<int>{0, 0, 1, 1}));
}

TEST(Layout, TwoHostsTimesTwoVirtualNodes) {
  Layout l = compute_layout({0, 0, 0, 0, 4, 4, 4, 4}, 2, {});
  EXPECT_EQ(l.node_count, 4);
  EXPECT_EQ(l.node_of_rank, (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(l.local_rank_of_rank, (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1}));
  // GPU slots count across the pretend nodes of a host, so they do not pick the same GPUs.
  EXPECT_EQ(l.host_local_rank_of_rank, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
}

TEST(Layout, UnevenNodesHaveNoRanksPerNode) {
  Layout l = compute_layout({0, 0, 0, 3}, 0, {});
  EXPECT_EQ(l.node_count, 2);
  EXPECT_EQ(l.ranks_per_node, 0);
}

TEST(Layout, VirtualNodesMustDivideEachHost) {
  try {
    compute_layout({0, 0, 0}, 2, {"vm", "vm", "vm"});
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("topology.virtual_nodes"), std::string::npos) << m;
    EXPECT_NE(m.find("3 ranks on vm"), std::string::npos) << m;
  }
}
