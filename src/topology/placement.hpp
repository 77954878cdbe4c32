#pragma once
// Checks that the ranks sit where a training job needs them: same count per node, one GPU per
// rank, CPUs bound near that GPU, no two ranks fighting for a CPU. A pure function of the gathered
// RankInfo records (no MPI, no hwloc), so it runs the same on rank 0 and in tests.
#include <string_view>
#include <vector>

#include "topology/rank_info.hpp"

namespace shakedown {

struct PlacementOptions {
  bool allow_oversubscribe = false;  // shared CPUs/GPUs are a warning instead of a failure
  int expected_gpus_per_node = 0;    // > 0 adds "placement.expected_gpus"
  bool virtual_nodes = false;        // several pretend nodes share one host
};

inline constexpr std::string_view kCheckRanksPerNode = "placement.ranks_per_node";
inline constexpr std::string_view kCheckGpuUnique = "placement.gpu_unique";
inline constexpr std::string_view kCheckGpuNumaAffinity = "placement.gpu_numa_affinity";
inline constexpr std::string_view kCheckOversubscription = "placement.oversubscription";
inline constexpr std::string_view kCheckExpectedGpus = "placement.expected_gpus";

// Results in the order above; expected_gpus only when options.expected_gpus_per_node > 0.
// Every reason names the ranks, nodes and hosts concerned and, when not passing, what to do.
// Nodes are told apart by RankInfo::node_index; CPUs and GPUs are physical, so sharing them is
// judged per hostname (virtual nodes and pretend hosts on one machine do share them).
std::vector<CheckResult> check_placement(const std::vector<RankInfo>& ranks,
                                         const PlacementOptions& options);

}  // namespace shakedown
