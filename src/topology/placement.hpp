#pragma once
// Checks that the ranks sit where a training job needs them: same count per node, one GPU per
// rank, CPUs bound near that GPU, no two ranks fighting for a CPU. A pure function of the gathered
// RankInfo records (no MPI, no hwloc), so it runs the same on rank 0 and in tests.
#include <string_view>
#include <vector>

#include "topology/network.hpp"
#include "topology/rank_info.hpp"

namespace shakedown {

struct PlacementOptions {
  bool allow_oversubscribe = false;  // shared CPUs/GPUs are a warning instead of a failure
  int expected_gpus_per_node = 0;    // > 0 adds "placement.expected_gpus"
  bool virtual_nodes = false;        // several pretend nodes share one host
  // The topology.blocks map (not owned; may be null): leaf switch sizes, and blocks, which add
  // "placement.blocks". Ranks' leaf_switch/block fields must already be set (assign_network).
  const NetworkMap* network = nullptr;
};

inline constexpr std::string_view kCheckRanksPerNode = "placement.ranks_per_node";
inline constexpr std::string_view kCheckGpuUnique = "placement.gpu_unique";
inline constexpr std::string_view kCheckGpuNumaAffinity = "placement.gpu_numa_affinity";
inline constexpr std::string_view kCheckOversubscription = "placement.oversubscription";
inline constexpr std::string_view kCheckExpectedGpus = "placement.expected_gpus";
inline constexpr std::string_view kCheckLeafSwitches = "placement.leaf_switches";
inline constexpr std::string_view kCheckBlocks = "placement.blocks";

// Results in the order above; expected_gpus only when options.expected_gpus_per_node > 0, blocks
// only when options.network has blocks. leaf_switches and blocks judge physical nodes (the Slurm
// node name, else the hostname: virtual nodes of one host count once) and warn, never fail: a
// spread-out job runs, only slower, and the fix is in the next allocation.
// Every reason names the ranks, nodes and hosts concerned and, when not passing, what to do.
// Nodes are told apart by RankInfo::node_index; CPUs and GPUs are physical, so sharing them is
// judged per hostname (virtual nodes and pretend hosts on one machine do share them).
std::vector<CheckResult> check_placement(const std::vector<RankInfo>& ranks,
                                         const PlacementOptions& options);

}  // namespace shakedown
