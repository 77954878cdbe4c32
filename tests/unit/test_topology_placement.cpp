#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology/placement.hpp"
#include "text_support.hpp"

namespace shakedown {
namespace {

// A bound rank on an 8-core / 16-thread host (PU c and c+8 are the threads of core c), in a job
// that may use the whole host.
RankInfo rank_at(int rank, int node, int local, const std::string& host, const std::string& cpus) {
  RankInfo r;
  r.rank = rank;
  r.node_index = node;
  r.local_rank = local;
  r.hostname = host;
  r.cpus = cpus;
  r.node_cores = 8;
  r.node_pus = 16;
  r.allowed_cpus = "0-15";
  r.allowed_cores = 8;
  r.allowed_pus = 16;
  r.gpu_note = "built without CUDA";
  return r;
}

// A rank on a 64-core / 128-thread host (core c has PUs c and c+64) inside a job cpuset of
// `allowed` (Slurm cgroup, docker --cpuset-cpus), bound to `cpus` (== allowed: not bound).
RankInfo rank_in_cpuset(int rank, const std::string& host, const std::string& cpus,
                        const std::string& allowed, int allowed_cores) {
  RankInfo r = rank_at(rank, 0, rank, host, cpus);
  r.node_cores = 64;
  r.node_pus = 128;
  r.allowed_cpus = allowed;
  r.allowed_cores = allowed_cores;
  r.allowed_pus = 2 * allowed_cores;
  return r;
}

void give_gpu(RankInfo& r, int count, int index, const std::string& uuid, const std::string& pci,
              const std::string& gpu_cpus, int numa) {
  r.gpu_count = count;
  r.gpu_index = index;
  r.gpu.index = index;
  r.gpu.uuid = uuid;
  r.gpu.pci_bus_id = pci;
  r.gpu.cpus = gpu_cpus;
  r.gpu.numa_node = numa;
  r.gpu_note.clear();
}

// 2 nodes x 2 ranks under one leaf switch, each with its own GPU and bound next to it: everything
// passes.
std::vector<RankInfo> good_gpu_job() {
  std::vector<RankInfo> ranks;
  const char* hosts[] = {"a01", "a02"};
  for (int node = 0; node < 2; ++node) {
    for (int local = 0; local < 2; ++local) {
      const int rank = node * 2 + local;
      RankInfo r = rank_at(rank, node, local, hosts[node], local == 0 ? "0-1" : "4-5");
      r.numa = local == 0 ? "0" : "1";
      give_gpu(r, 2, local, "GPU-" + std::to_string(rank),
               local == 0 ? "0000:18:00.0" : "0000:9a:00.0", local == 0 ? "0-3,8-11" : "4-7,12-15",
               local);
      r.slurm_topology_addr = std::string("spine.leaf0.") + hosts[node];
      r.slurm_topology_pattern = "switch.switch.node";
      r.leaf_switch = "leaf0";
      ranks.push_back(r);
    }
  }
  return ranks;
}

// Returns a copy: callers pass temporaries straight from check_placement().
CheckResult find(const std::vector<CheckResult>& results, std::string_view name) {
  for (const auto& c : results) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no check named " << name;
  return {};
}

using testing_support::contains;

TEST(TopologyPlacement, GoodGpuJobPassesEverything) {
  PlacementOptions opt;
  opt.expected_gpus_per_node = 2;
  const auto results = check_placement(good_gpu_job(), opt);
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(results[0].name, kCheckRanksPerNode);
  EXPECT_EQ(results[1].name, kCheckGpuUnique);
  EXPECT_EQ(results[2].name, kCheckGpuNumaAffinity);
  EXPECT_EQ(results[3].name, kCheckOversubscription);
  EXPECT_EQ(results[4].name, kCheckExpectedGpus);
  EXPECT_EQ(results[5].name, kCheckLeafSwitches);
  for (const auto& c : results)
    EXPECT_EQ(c.status, CheckStatus::kPass) << c.name << ": " << c.reason;
  EXPECT_TRUE(contains(results[0].reason, "2 nodes x 2 ranks per node")) << results[0].reason;
}

TEST(TopologyPlacement, ExpectedGpusOnlyWhenAsked) {
  EXPECT_EQ(check_placement(good_gpu_job(), {}).size(), 5u);
}

TEST(TopologyPlacement, NoRanksSkipsEverything) {
  for (const auto& c : check_placement({}, {})) EXPECT_EQ(c.status, CheckStatus::kSkip) << c.name;
}

TEST(TopologyPlacement, UnevenRanksPerNodeFailsNamingTheNode) {
  std::vector<RankInfo> ranks;
  int rank = 0;
  const int counts[] = {4, 3, 4};
  const char* hosts[] = {"a06", "a07", "a08"};
  for (int node = 0; node < 3; ++node) {
    for (int local = 0; local < counts[node]; ++local) {
      ranks.push_back(rank_at(rank, node, local, hosts[node], std::to_string(local)));
      ++rank;
    }
  }
  const auto& c = find(check_placement(ranks, {}), kCheckRanksPerNode);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(c.reason, "node 1 (host a07) has 3 ranks, others have 4")) << c.reason;
}

TEST(TopologyPlacement, NoGpusSkipsGpuChecksWithTheReason) {
  std::vector<RankInfo> ranks = {rank_at(0, 0, 0, "vm", "0"), rank_at(1, 0, 1, "vm", "1")};
  const auto results = check_placement(ranks, {});
  const auto& unique = find(results, kCheckGpuUnique);
  EXPECT_EQ(unique.status, CheckStatus::kSkip);
  EXPECT_TRUE(contains(unique.reason, "built without CUDA")) << unique.reason;
  EXPECT_EQ(find(results, kCheckGpuNumaAffinity).status, CheckStatus::kSkip);
  EXPECT_EQ(find(results, kCheckOversubscription).status, CheckStatus::kPass);
}

TEST(TopologyPlacement, SharedGpuFailsOrWarnsWhenAllowed) {
  auto ranks = good_gpu_job();
  ranks[1].gpu = ranks[0].gpu;  // rank 1 on the same GPU as rank 0
  ranks[1].gpu_index = 0;
  auto c = find(check_placement(ranks, {}), kCheckGpuUnique);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(c.reason, "GPU-0 (0000:18:00.0) on host a01 is used by ranks 0-1"))
      << c.reason;

  PlacementOptions allow;
  allow.allow_oversubscribe = true;
  c = find(check_placement(ranks, allow), kCheckGpuUnique);
  EXPECT_EQ(c.status, CheckStatus::kWarn) << c.reason;
}

TEST(TopologyPlacement, SamePciIdOnDifferentHostsIsNotSharing) {
  auto ranks = good_gpu_job();
  for (auto& r : ranks) r.gpu.uuid.clear();  // compare by host + PCI id only
  EXPECT_EQ(find(check_placement(ranks, {}), kCheckGpuUnique).status, CheckStatus::kPass);
  ranks[1].gpu.pci_bus_id = ranks[0].gpu.pci_bus_id;
  const auto c = find(check_placement(ranks, {}), kCheckGpuUnique);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(c.reason, "host a01")) << c.reason;
}

TEST(TopologyPlacement, UnusedGpusWarn) {
  auto ranks = good_gpu_job();
  for (auto& r : ranks) r.gpu_count = 8;
  const auto c = find(check_placement(ranks, {}), kCheckGpuUnique);
  EXPECT_EQ(c.status, CheckStatus::kWarn);
  EXPECT_TRUE(contains(c.reason, "host a01: ranks use 2 of 8 visible GPUs")) << c.reason;
}

TEST(TopologyPlacement, NodeWithoutGpuFailsWhileOthersHaveThem) {
  auto ranks = good_gpu_job();
  for (int i : {2, 3}) {
    ranks[static_cast<std::size_t>(i)].gpu_count = 0;
    ranks[static_cast<std::size_t>(i)].gpu_index = -1;
    ranks[static_cast<std::size_t>(i)].gpu = GpuInfo{};
    ranks[static_cast<std::size_t>(i)].gpu_note = "CUDA: no CUDA-capable device is detected";
  }
  const auto c = find(check_placement(ranks, {}), kCheckGpuUnique);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(c.reason, "ranks 2-3 on node 1 (host a02) see no GPU")) << c.reason;
  EXPECT_TRUE(contains(c.reason, "no CUDA-capable device")) << c.reason;
}

TEST(TopologyPlacement, RankBoundAwayFromItsGpuFails) {
  auto ranks = good_gpu_job();
  ranks[1].cpus = "0-1";  // its GPU is local to 4-7,12-15
  ranks[1].numa = "0";
  const auto c = find(check_placement(ranks, {}), kCheckGpuNumaAffinity);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(c.reason,
                       "rank 1 (host a01) is bound to CPUs 0-1 (NUMA 0) but its GPU 0000:9a:00.0 "
                       "is local to CPUs 4-7,12-15 (NUMA 1)"))
      << c.reason;
}

TEST(TopologyPlacement, UnboundRankWithGpuWarns) {
  auto ranks = good_gpu_job();
  ranks[2].cpus = "0-15";
  ranks[2].numa = "0,1";
  const auto c = find(check_placement(ranks, {}), kCheckGpuNumaAffinity);
  EXPECT_EQ(c.status, CheckStatus::kWarn);
  EXPECT_TRUE(contains(c.reason, "rank 2 (host a02)")) << c.reason;
}

TEST(TopologyPlacement, NumaFallbackWhenGpuCpusUnknown) {
  auto ranks = good_gpu_job();
  for (auto& r : ranks) r.gpu.cpus.clear();
  EXPECT_EQ(find(check_placement(ranks, {}), kCheckGpuNumaAffinity).status, CheckStatus::kPass);
  ranks[3].numa = "0";  // GPU on NUMA 1
  const auto c = find(check_placement(ranks, {}), kCheckGpuNumaAffinity);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(
      contains(c.reason, "rank 3 (host a02) runs on NUMA 0 but its GPU 0000:9a:00.0 is on NUMA 1"))
      << c.reason;
}

TEST(TopologyPlacement, UnknownGpuLocalitySkips) {
  auto ranks = good_gpu_job();
  for (auto& r : ranks) {
    r.gpu.cpus.clear();
    r.gpu.numa_node = -1;
  }
  const auto c = find(check_placement(ranks, {}), kCheckGpuNumaAffinity);
  EXPECT_EQ(c.status, CheckStatus::kSkip);
  EXPECT_TRUE(contains(c.reason, "unknown")) << c.reason;
}

TEST(TopologyPlacement, OverlappingBindingsFailOrWarn) {
  std::vector<RankInfo> ranks = {rank_at(0, 0, 0, "h1", "0-3"), rank_at(1, 0, 1, "h1", "2-5")};
  auto c = find(check_placement(ranks, {}), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(c.reason, "ranks 0 and 1 on host h1 are both bound to CPUs 2-3"))
      << c.reason;
  PlacementOptions allow;
  allow.allow_oversubscribe = true;
  c = find(check_placement(ranks, allow), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kWarn);
}

TEST(TopologyPlacement, SameCpusOnDifferentHostsIsFine) {
  std::vector<RankInfo> ranks = {rank_at(0, 0, 0, "h1", "0-3"), rank_at(1, 1, 0, "h2", "0-3")};
  EXPECT_EQ(find(check_placement(ranks, {}), kCheckOversubscription).status, CheckStatus::kPass);
}

// Unbound = CPUs equal to what the job may use (here the whole host).
TEST(TopologyPlacement, UnboundRanksAreCountedAgainstCores) {
  std::vector<RankInfo> ranks;
  for (int i = 0; i < 4; ++i) ranks.push_back(rank_at(i, 0, i, "h1", "0-15"));
  auto c = find(check_placement(ranks, {}), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.reason;
  EXPECT_TRUE(contains(c.reason, "ranks 0-3 not bound")) << c.reason;
  EXPECT_FALSE(contains(c.reason, "cpuset")) << "the whole host is allowed: " << c.reason;
  for (int i = 4; i < 12; ++i) ranks.push_back(rank_at(i, 0, i, "h1", "0-15"));
  c = find(check_placement(ranks, {}), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(c.reason, "host h1 runs 12 ranks on 8 cores")) << c.reason;
}

// Records without the allowed cpuset (files from older writers): unbound = every CPU of the host.
TEST(TopologyPlacement, UnboundWithoutAllowedCpusetMeansEveryCpuOfTheHost) {
  std::vector<RankInfo> ranks;
  for (int i = 0; i < 4; ++i) {
    RankInfo r = rank_at(i, 0, i, "h1", "0-15");
    r.allowed_cpus.clear();
    r.allowed_cores = 0;
    r.allowed_pus = 0;
    ranks.push_back(r);
  }
  auto c = find(check_placement(ranks, {}), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.reason;
  EXPECT_TRUE(contains(c.reason, "ranks 0-3 not bound")) << c.reason;
  for (auto& r : ranks) r.cpus = "0-7";  // not the whole host: bound, to the same CPUs
  c = find(check_placement(ranks, {}), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(c.reason, "ranks 0 and 1 on host h1 are both bound to CPUs 0-7"))
      << c.reason;
}

// Slurm cgroup / docker --cpuset-cpus: unbound ranks all get the job's 8 of 64 cores. They are
// not bound to the same CPUs (the old false FAIL); they are counted against those 8 cores.
TEST(TopologyPlacement, UnboundRanksInAJobCpusetAreCountedAgainstItsCores) {
  const std::string allowed = "0-7,64-71";
  std::vector<RankInfo> ranks;
  for (int i = 0; i < 4; ++i) ranks.push_back(rank_in_cpuset(i, "c1", allowed, allowed, 8));
  auto c = find(check_placement(ranks, {}), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.reason;
  EXPECT_TRUE(contains(c.reason, "ranks 0-3 not bound")) << c.reason;
  EXPECT_TRUE(contains(c.reason, "host c1: CPUs 0-7,64-71, 8 of 64 cores")) << c.reason;

  for (int i = 4; i < 12; ++i) ranks.push_back(rank_in_cpuset(i, "c1", allowed, allowed, 8));
  c = find(check_placement(ranks, {}), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kFail) << c.reason;
  EXPECT_TRUE(contains(c.reason,
                       "host c1 runs 12 ranks on the 8 cores this job may use there (CPUs "
                       "0-7,64-71 of the host's 64 cores)"))
      << c.reason;
  EXPECT_TRUE(contains(c.reason, "srun --cpus-per-task")) << c.reason;
  EXPECT_FALSE(contains(c.reason, "both bound")) << c.reason;

  PlacementOptions allow;
  allow.allow_oversubscribe = true;
  EXPECT_EQ(find(check_placement(ranks, allow), kCheckOversubscription).status, CheckStatus::kWarn);
}

// Ranks bound to distinct cores inside the job's cpuset pass; two on one core still fail.
TEST(TopologyPlacement, BoundRanksInsideAJobCpuset) {
  const std::string allowed = "0-7,64-71";
  std::vector<RankInfo> ranks;
  for (int i = 0; i < 8; ++i) {
    const std::string core = std::to_string(i) + "," + std::to_string(i + 64);
    ranks.push_back(rank_in_cpuset(i, "c1", core, allowed, 8));
  }
  auto c = find(check_placement(ranks, {}), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.reason;
  EXPECT_FALSE(contains(c.reason, "not bound")) << c.reason;
  ranks[7].cpus = "6,70";
  c = find(check_placement(ranks, {}), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(c.reason, "ranks 6 and 7 on host c1 are both bound to CPUs 6,70"))
      << c.reason;
}

// Two hosts, each with its own job cpuset: counted per host.
TEST(TopologyPlacement, JobCpusetIsPerHost) {
  std::vector<RankInfo> ranks;
  for (int i = 0; i < 4; ++i) {
    RankInfo r = rank_in_cpuset(i, i < 2 ? "c1" : "c2", "", "", 0);
    r.allowed_cpus = i < 2 ? "0-1,64-65" : "10,74";
    r.allowed_cores = i < 2 ? 2 : 1;
    r.cpus = r.allowed_cpus;
    r.node_index = i / 2;
    ranks.push_back(r);
  }
  const auto c = find(check_placement(ranks, {}), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(c.reason, "host c2 runs 2 ranks on the 1 core this job may use there"))
      << c.reason;
  EXPECT_FALSE(contains(c.reason, "host c1 runs")) << c.reason;
}

// Per-task cpusets (each rank confined to its own set): each set holds its own ranks.
TEST(TopologyPlacement, RanksConfinedToDifferentCpusetsOnOneHost) {
  std::vector<RankInfo> ranks;
  for (int i = 0; i < 4; ++i) {
    const std::string own = std::to_string(2 * i) + "-" + std::to_string(2 * i + 1);
    ranks.push_back(rank_in_cpuset(i, "c1", own, own, 2));
  }
  auto c = find(check_placement(ranks, {}), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.reason;
  // Three ranks in a set of 2 cores do not fit.
  for (int i = 1; i < 3; ++i) {
    ranks[static_cast<std::size_t>(i)].cpus = "0-1";
    ranks[static_cast<std::size_t>(i)].allowed_cpus = "0-1";
  }
  c = find(check_placement(ranks, {}), kCheckOversubscription);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(
      contains(c.reason, "ranks 0-2 on host c1 are not bound and may only use CPUs 0-1 (2 cores)"))
      << c.reason;
}

// Two virtual nodes of 2 ranks each on one 2-core laptop: the nodes look fine, the host is full.
TEST(TopologyPlacement, VirtualNodesShareTheHost) {
  std::vector<RankInfo> ranks;
  for (int i = 0; i < 4; ++i) {
    RankInfo r = rank_at(i, i / 2, i % 2, "laptop", "0-1");
    r.node_cores = 2;
    r.node_pus = 2;
    r.allowed_cpus = "0-1";
    r.allowed_cores = 2;
    r.allowed_pus = 2;
    ranks.push_back(r);
  }
  PlacementOptions opt;
  opt.virtual_nodes = true;
  auto results = check_placement(ranks, opt);
  EXPECT_EQ(find(results, kCheckRanksPerNode).status, CheckStatus::kPass);
  EXPECT_TRUE(contains(find(results, kCheckRanksPerNode).reason, "virtual"));
  const auto& over = find(results, kCheckOversubscription);
  EXPECT_EQ(over.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(over.reason, "host laptop runs 4 ranks on 2 cores")) << over.reason;
  opt.allow_oversubscribe = true;
  EXPECT_EQ(find(check_placement(ranks, opt), kCheckOversubscription).status, CheckStatus::kWarn);
}

// Virtual nodes bound to separate cores of one 8-core host pass.
TEST(TopologyPlacement, VirtualNodesBoundApartPass) {
  std::vector<RankInfo> ranks;
  for (int i = 0; i < 4; ++i)
    ranks.push_back(rank_at(i, i / 2, i % 2, "box", std::to_string(i * 2)));
  PlacementOptions opt;
  opt.virtual_nodes = true;
  const auto results = check_placement(ranks, opt);
  EXPECT_EQ(find(results, kCheckRanksPerNode).status, CheckStatus::kPass);
  EXPECT_EQ(find(results, kCheckOversubscription).status, CheckStatus::kPass);
}

TEST(TopologyPlacement, ExpectedGpusFailsNamingTheNode) {
  auto ranks = good_gpu_job();
  PlacementOptions opt;
  opt.expected_gpus_per_node = 8;
  const auto c = find(check_placement(ranks, opt), kCheckExpectedGpus);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(c.reason, "node 0 (host a01) sees 2 GPUs, expected 8")) << c.reason;
  opt.expected_gpus_per_node = 1;
  EXPECT_EQ(find(check_placement(ranks, opt), kCheckExpectedGpus).status, CheckStatus::kWarn);
}

// Slurm --gpu-bind=single:1: each rank sees one GPU, the node still has 2.
TEST(TopologyPlacement, ExpectedGpusCountsTheUnionOfPerRankGpus) {
  auto ranks = good_gpu_job();
  for (auto& r : ranks) {
    r.gpu_count = 1;
    r.gpu_index = 0;
  }
  PlacementOptions opt;
  opt.expected_gpus_per_node = 2;
  const auto results = check_placement(ranks, opt);
  EXPECT_EQ(find(results, kCheckExpectedGpus).status, CheckStatus::kPass)
      << find(results, kCheckExpectedGpus).reason;
  EXPECT_EQ(find(results, kCheckGpuUnique).status, CheckStatus::kPass)
      << find(results, kCheckGpuUnique).reason;
}

TEST(TopologyPlacement, ExpectedGpusWithVirtualNodesIsPerHost) {
  auto ranks = good_gpu_job();
  for (auto& r : ranks) r.hostname = "one-box";
  // Physically one host: its 2 GPUs now serve 4 ranks, which gpu_unique must catch.
  ranks[2].gpu = ranks[0].gpu;
  ranks[3].gpu = ranks[1].gpu;
  PlacementOptions opt;
  opt.virtual_nodes = true;
  opt.expected_gpus_per_node = 2;
  const auto results = check_placement(ranks, opt);
  const auto& expected = find(results, kCheckExpectedGpus);
  EXPECT_EQ(expected.status, CheckStatus::kPass) << expected.reason;
  EXPECT_TRUE(contains(expected.reason, "every host sees 2 GPUs")) << expected.reason;
  const auto& unique = find(results, kCheckGpuUnique);
  EXPECT_EQ(unique.status, CheckStatus::kFail);
  EXPECT_TRUE(contains(unique.reason, "(nodes 0-1)")) << unique.reason;
}

TEST(TopologyPlacement, ExpectedGpusReportsTheNoteOfAnEmptyNode) {
  auto ranks = good_gpu_job();
  for (int i : {2, 3}) {
    auto& r = ranks[static_cast<std::size_t>(i)];
    r.gpu_count = 0;
    r.gpu_index = -1;
    r.gpu = GpuInfo{};
    r.gpu_note = "CUDA: no CUDA-capable device is detected";
  }
  PlacementOptions opt;
  opt.expected_gpus_per_node = 2;
  const auto c = find(check_placement(ranks, opt), kCheckExpectedGpus);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(
      contains(c.reason, "node 1 (host a02) sees 0 GPUs, expected 2 (CUDA: no CUDA-capable"))
      << c.reason;
}

}  // namespace
}  // namespace shakedown
