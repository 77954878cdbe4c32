#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "temp_dir.hpp"
#include "topology/hostlist.hpp"
#include "topology/network.hpp"
#include "topology/placement.hpp"
#include "text_support.hpp"

namespace shakedown {
namespace {

using Names = std::vector<std::string>;

using testing_support::contains;

// ---- hostlists ----

TEST(TopologyHostlist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(expand_hostlist("vm"), Names{"vm"});
  EXPECT_EQ(expand_hostlist("n[1-3]"), (Names{"n1", "n2", "n3"}));
  EXPECT_EQ(expand_hostlist("gpu[008-010]"), (Names{"gpu008", "gpu009", "gpu010"}));
  EXPECT_EQ(expand_hostlist("n[1,3,5-6]-ib"), (Names{"n1-ib", "n3-ib", "n5-ib", "n6-ib"}));
  EXPECT_EQ(expand_hostlist("a[1-2],b,c[9-10]"), (Names{"a1", "a2", "b", "c9", "c10"}));
  EXPECT_EQ(expand_hostlist("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(expand_hostlist("n[0]"), Names{"n0"});
  EXPECT_EQ(expand_hostlist("127.0.0.2,127.0.0.3"), (Names{"127.0.0.2", "127.0.0.3"}));
}

// The largest 64-bit number as a host index (a fuzzer's find): one name, not an endless loop.
TEST(TopologyHostlist, TheLargestIndexEndsTheRange) {
  EXPECT_EQ(expand_hostlist("x[18446744073709551615]"),
            (std::vector<std::string>{"x18446744073709551615"}));
  EXPECT_EQ(expand_hostlist("x[18446744073709551614-18446744073709551615]"),
            (std::vector<std::string>{"x18446744073709551614", "x18446744073709551615"}));
}

TEST(TopologyHostlist, RejectsMalformedExpressionsSayingWhy) {
  auto message = [](const std::string& expr) {
    try {
      expand_hostlist(expr, 1000);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "'" << expr << "' was accepted";
    return std::string();
  };
  EXPECT_TRUE(contains(message("n[1-3"), "'[' without ']'"));
  EXPECT_TRUE(contains(message("n1-3]"), "']' without '['"));
  EXPECT_TRUE(contains(message("n[3-1]"), "goes down"));
  EXPECT_TRUE(contains(message("n[a-b]"), "not a number"));
  EXPECT_TRUE(contains(message("n[1-]"), "not a number"));
  EXPECT_TRUE(contains(message("a,,b"), "empty host name"));
  EXPECT_TRUE(contains(message("n[[1-2]]"), "nested"));
  EXPECT_TRUE(contains(message("n[1-5000]"), "more than 1000"));
  EXPECT_TRUE(contains(message("r[1-40]n[1-40]"), "more than 1000"));
}

// ---- Slurm's topology address ----

TEST(TopologyNetwork, SlurmAddressGivesLeafSwitchAndNode) {
  auto a = parse_slurm_topology_addr("spine.leaf3.gpu017", "switch.switch.node");
  EXPECT_EQ(a.leaf_switch, "leaf3");
  EXPECT_EQ(a.node, "gpu017");
  a = parse_slurm_topology_addr("s0.n1", "switch.node");
  EXPECT_EQ(a.leaf_switch, "s0");
  EXPECT_EQ(a.node, "n1");
  // No topology plugin: Slurm 22.05 still sets ADDR=<node>, PATTERN=node.
  a = parse_slurm_topology_addr("vm", "node");
  EXPECT_EQ(a.leaf_switch, "");
  EXPECT_EQ(a.node, "vm");
  // A node name with dots stays whole.
  a = parse_slurm_topology_addr("top.s1.gpu1.example.org", "switch.switch.node");
  EXPECT_EQ(a.leaf_switch, "s1");
  EXPECT_EQ(a.node, "gpu1.example.org");
  // Nothing, or a pattern that does not fit: no switch claimed.
  EXPECT_EQ(parse_slurm_topology_addr("", "").node, "");
  a = parse_slurm_topology_addr("a.b", "");
  EXPECT_EQ(a.leaf_switch, "");
  EXPECT_EQ(a.node, "a.b");
  EXPECT_EQ(parse_slurm_topology_addr("a.b", "node.switch").leaf_switch, "");
}

// ---- the block map file ----

constexpr const char* kNvl72 = R"(# two NVL72 racks of 18 trays, two leaf switches
BlockName=nvl0 Nodes=gpu[001-018]   # rack 1
blockname=nvl1 nodes=gpu[019-036]
BlockSizes=18,36

SwitchName=leaf0 Nodes=gpu[001-024]
SwitchName=leaf1 Nodes=gpu[025-036] LinkSpeed=1
SwitchName=spine Switches=leaf[0-1]
)";

TEST(TopologyNetwork, ParsesSlurmTopologySyntax) {
  const NetworkMap map = NetworkMap::parse(kNvl72, "racks.conf");
  ASSERT_EQ(map.blocks().size(), 2u);
  EXPECT_EQ(map.blocks()[0].name, "nvl0");
  EXPECT_EQ(map.blocks()[0].nodes.size(), 18u);
  EXPECT_EQ(map.blocks()[1].line, 3);
  ASSERT_EQ(map.leaf_switches().size(), 2u);  // the spine has no nodes: not a leaf
  EXPECT_EQ(map.leaf_switches()[1].nodes.size(), 12u);
  EXPECT_EQ(map.block_of("gpu018")->name, "nvl0");
  EXPECT_EQ(map.block_of("GPU019")->name, "nvl1");
  EXPECT_EQ(map.block_of("gpu020.cluster.local")->name, "nvl1");  // short name matches
  EXPECT_EQ(map.block_of("gpu037"), nullptr);
  EXPECT_EQ(map.leaf_switch_of("gpu024")->name, "leaf0");
  EXPECT_EQ(map.leaf_switch_of("gpu025")->name, "leaf1");
  EXPECT_EQ(map.source(), "racks.conf");
}

TEST(TopologyNetwork, RejectsBadFilesNamingFileAndLine) {
  auto message = [](const std::string& text) {
    try {
      NetworkMap::parse(text, "b.conf");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "accepted: " << text;
    return std::string();
  };
  EXPECT_TRUE(contains(message("\nNodeName=x"), "b.conf:2: unknown line kind 'nodename'"));
  EXPECT_TRUE(contains(message("BlockName=b0"), "b.conf:1: block 'b0' has no Nodes= list"));
  EXPECT_TRUE(contains(message("BlockName=b0 Nodes=n[1-"), "b.conf:1: Nodes=n[1-: '[' without"));
  EXPECT_TRUE(contains(message("BlockName=b0 Nodes=n1\nBlockName=b0 Nodes=n2"),
                       "b.conf:2: block 'b0' is defined again (first on line 1)"));
  EXPECT_TRUE(contains(message("BlockName=b0 Nodes=n[1-2]\nBlockName=b1 Nodes=n2"),
                       "b.conf:2: node n2 is already in block 'b0' (line 1)"));
  EXPECT_TRUE(contains(message("SwitchName=s0 Nodes=n1\nSwitchName=s1 Nodes=N1"),
                       "already in switch 's0'"));
  EXPECT_TRUE(contains(message("SwitchName=s0"), "neither Nodes= nor Switches="));
  EXPECT_TRUE(contains(message("BlockName=b0 Nodes=n1 Speed=4"), "unknown key 'speed'"));
  EXPECT_TRUE(contains(message("BlockName=b0 n1"), "'n1' is not Key=Value"));
  EXPECT_TRUE(contains(message("BlockName= Nodes=n1"), "needs a name"));
}

TEST(TopologyNetwork, ReadsFilesAndExplainsMissingOnes) {
  EXPECT_TRUE(NetworkMap::read("").empty());
  testing_support::TempDir tmp;
  const std::filesystem::path path = tmp.path() / "blocks.conf";
  std::ofstream(path) << kNvl72;
  EXPECT_EQ(NetworkMap::read(path.string()).blocks().size(), 2u);
  try {
    NetworkMap::read((tmp.path() / "none.conf").string());
    ADD_FAILURE() << "a missing file was accepted";
  } catch (const UsageError& e) {
    EXPECT_TRUE(contains(e.what(), "topology.blocks: cannot read"));
    EXPECT_TRUE(contains(e.what(), "none.conf"));
    EXPECT_TRUE(contains(e.what(), "No such file"));
    EXPECT_TRUE(contains(e.what(), "on every node"));
  }
  std::ofstream(tmp.path() / "empty.conf") << "# nothing\n";
  EXPECT_THROW(NetworkMap::read((tmp.path() / "empty.conf").string()), UsageError);
}

// ---- ranks, groups and the checks ----

// `nodes` ranks, one per node, on hosts gpu001...; Slurm's address gives leaf `leaves[i]` ("" =
// Slurm without a topology plugin).
std::vector<RankInfo> job(const std::vector<std::string>& leaves, int first_host = 1) {
  std::vector<RankInfo> ranks;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    RankInfo r;
    r.rank = static_cast<int>(i);
    r.node_index = static_cast<int>(i);
    char host[16];
    std::snprintf(host, sizeof host, "gpu%03d", first_host + static_cast<int>(i));
    r.hostname = std::string(host) + ".cluster.local";
    r.slurm_job_id = "77";
    r.slurm_topology_addr = leaves[i].empty() ? host : "spine." + leaves[i] + "." + host;
    r.slurm_topology_pattern = leaves[i].empty() ? "node" : "switch.switch.node";
    r.leaf_switch =
        parse_slurm_topology_addr(r.slurm_topology_addr, r.slurm_topology_pattern).leaf_switch;
    ranks.push_back(r);
  }
  return ranks;
}

CheckResult leaf_check(const std::vector<RankInfo>& ranks, const NetworkMap* map = nullptr) {
  PlacementOptions opt;
  opt.network = map;
  for (const auto& c : check_placement(ranks, opt)) {
    if (c.name == kCheckLeafSwitches) return c;
  }
  ADD_FAILURE() << "no leaf switch check";
  return {};
}

TEST(TopologyNetwork, AssignFillsBlocksAndMissingLeavesFromTheMap) {
  const NetworkMap map = NetworkMap::parse(kNvl72, "racks.conf");
  auto ranks = job({"", "", "leafX"}, 17);  // gpu017, gpu018 (no Slurm switch), gpu019
  assign_network(ranks, map);
  EXPECT_EQ(ranks[0].block, "nvl0");
  EXPECT_EQ(ranks[0].leaf_switch, "leaf0");  // from the file
  EXPECT_EQ(ranks[2].block, "nvl1");
  EXPECT_EQ(ranks[2].leaf_switch, "leafX");  // Slurm's own view wins
  const auto groups = network_groups(ranks, NetworkLevel::kBlock);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name, "nvl0");
  EXPECT_EQ(groups[0].node_indices, (std::vector<int>{0, 1}));
  EXPECT_EQ(network_groups(ranks, NetworkLevel::kLeafSwitch).size(), 2u);
}

TEST(TopologyNetwork, FewestGroups) {
  EXPECT_EQ(fewest_groups({18, 18}, 18), 1);
  EXPECT_EQ(fewest_groups({18, 18}, 19), 2);
  EXPECT_EQ(fewest_groups({4, 32, 8}, 36), 2);
  EXPECT_EQ(fewest_groups({4}, 5), 0);  // cannot hold them
  EXPECT_EQ(fewest_groups({}, 0), 0);
}

TEST(TopologyNetwork, LeafSwitchCheckSkipsWithoutSwitches) {
  auto c = leaf_check(job({"", ""}));
  EXPECT_EQ(c.status, CheckStatus::kSkip);
  EXPECT_TRUE(contains(c.reason, "TopologyPlugin=topology/tree")) << c.reason;
  auto ranks = job({""});
  ranks[0].slurm_job_id.clear();
  ranks[0].slurm_topology_addr.clear();
  c = leaf_check(ranks);
  EXPECT_EQ(c.status, CheckStatus::kSkip);
  EXPECT_TRUE(contains(c.reason, "not launched by Slurm")) << c.reason;
}

TEST(TopologyNetwork, LeafSwitchCheckPassesOnOneLeafOrAnEvenSplit) {
  auto c = leaf_check(job({"leaf0"}));
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.reason;
  EXPECT_TRUE(contains(c.reason, "1 node on 1 leaf switch (leaf0: 1 node, from Slurm)"))
      << c.reason;
  // 8 + 8: without leaf sizes the job cannot be said to fit on fewer.
  std::vector<std::string> leaves(16, "s0");
  for (int i = 8; i < 16; ++i) leaves[static_cast<std::size_t>(i)] = "s1";
  c = leaf_check(job(leaves));
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.reason;
  EXPECT_TRUE(contains(c.reason, "16 nodes on 2 leaf switches")) << c.reason;
}

TEST(TopologyNetwork, LeafSwitchCheckWarnsWhenSpreadWiderThanNeeded) {
  // 16 nodes: 10 on s0 proves a leaf holds 10, so 2 leaves would do; the job uses 3.
  std::vector<std::string> leaves(16, "s0");
  for (int i = 10; i < 13; ++i) leaves[static_cast<std::size_t>(i)] = "s1";
  for (int i = 13; i < 16; ++i) leaves[static_cast<std::size_t>(i)] = "s2";
  const auto c = leaf_check(job(leaves));
  EXPECT_EQ(c.status, CheckStatus::kWarn);
  EXPECT_TRUE(contains(c.reason, "16 nodes on 3 leaf switches (s0: 10 nodes, s1: 3, s2: 3"))
      << c.reason;
  EXPECT_TRUE(contains(c.reason, "where 2 would hold them")) << c.reason;
  EXPECT_TRUE(contains(c.reason, "--switches=2@")) << c.reason;
}

TEST(TopologyNetwork, LeafSwitchCheckUsesLeafSizesFromTheMap) {
  // Leaves of 24 nodes: 12 + 12 on two leaves is one too many, even split as it is.
  const NetworkMap map = NetworkMap::parse(
      "SwitchName=leaf0 Nodes=gpu[001-024]\n"
      "SwitchName=leaf1 Nodes=gpu[025-048]\n",
      "tree.conf");
  std::vector<std::string> leaves(12, "");
  auto ranks = job(leaves, 13);  // gpu013..gpu024 on leaf0
  auto more = job(leaves, 25);   // gpu025..gpu036 on leaf1
  for (auto& r : more) {
    r.rank += 12;
    r.node_index += 12;
    ranks.push_back(r);
  }
  assign_network(ranks, map);
  const auto c = leaf_check(ranks, &map);
  EXPECT_EQ(c.status, CheckStatus::kWarn) << c.reason;
  EXPECT_TRUE(contains(c.reason, "24 nodes on 2 leaf switches")) << c.reason;
  EXPECT_TRUE(contains(c.reason, "from tree.conf")) << c.reason;
  EXPECT_TRUE(contains(c.reason, "where 1 would hold them (leaf sizes from tree.conf)"))
      << c.reason;
}

TEST(TopologyNetwork, LeafSwitchCheckNamesNodesWithoutLeafAndDisagreements) {
  const NetworkMap map = NetworkMap::parse("SwitchName=leaf9 Nodes=gpu001\n", "tree.conf");
  auto ranks = job({"leaf0", ""});
  assign_network(ranks, map);
  const auto c = leaf_check(ranks, &map);
  EXPECT_EQ(c.status, CheckStatus::kWarn);
  EXPECT_TRUE(contains(c.reason, "1 node without a known leaf switch (gpu002)")) << c.reason;
  EXPECT_TRUE(
      contains(c.reason, "node gpu001: Slurm says leaf switch leaf0, tree.conf:1 says leaf9"))
      << c.reason;
}

TEST(TopologyNetwork, VirtualNodesOfOneHostCountOnce) {
  auto ranks = job({"leaf0", "leaf0"});
  ranks[1].hostname = ranks[0].hostname;
  ranks[1].slurm_topology_addr = ranks[0].slurm_topology_addr;
  const auto c = leaf_check(ranks);
  EXPECT_EQ(c.status, CheckStatus::kPass);
  EXPECT_TRUE(contains(c.reason, "1 node on 1 leaf switch")) << c.reason;
}

TEST(TopologyNetwork, BlockCheckOnlyWithBlocksAndWarnsOnSpread) {
  const NetworkMap map = NetworkMap::parse(kNvl72, "racks.conf");
  PlacementOptions opt;
  opt.network = &map;
  auto find_blocks = [&](std::vector<RankInfo> ranks) {
    assign_network(ranks, map);
    for (const auto& c : check_placement(ranks, opt)) {
      if (c.name == kCheckBlocks) return c;
    }
    ADD_FAILURE() << "no block check";
    return CheckResult{};
  };
  // 18 nodes in one rack: the fewest possible.
  auto c = find_blocks(job(std::vector<std::string>(18, ""), 1));
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.reason;
  EXPECT_TRUE(contains(c.reason, "18 nodes in 1 block (nvl0: 18 nodes), from racks.conf"))
      << c.reason;
  // 18 nodes straddling both racks (gpu010..gpu027).
  c = find_blocks(job(std::vector<std::string>(18, ""), 10));
  EXPECT_EQ(c.status, CheckStatus::kWarn);
  EXPECT_TRUE(contains(c.reason, "18 nodes in 2 blocks (nvl0: 9 nodes, nvl1: 9)")) << c.reason;
  EXPECT_TRUE(contains(c.reason, "where 1 would hold them")) << c.reason;
  EXPECT_TRUE(contains(c.reason, "instead of NVLink")) << c.reason;
  // Nodes the file does not know.
  c = find_blocks(job(std::vector<std::string>(2, ""), 36));  // gpu036, gpu037
  EXPECT_EQ(c.status, CheckStatus::kWarn);
  EXPECT_TRUE(contains(c.reason, "1 node in no block of racks.conf (gpu037)")) << c.reason;
  c = find_blocks(job(std::vector<std::string>(1, ""), 99));
  EXPECT_EQ(c.status, CheckStatus::kWarn);
  EXPECT_TRUE(contains(c.reason, "none of the job's 1 node (gpu099) is in a block")) << c.reason;
  // Without blocks in the map there is no block check.
  for (const auto& r : check_placement(job({"s0"}), {})) EXPECT_NE(r.name, kCheckBlocks);
}

}  // namespace
}  // namespace shakedown
