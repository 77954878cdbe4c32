#pragma once
// Plain-text reporting of what a run recorded. Works on records read back from the HDF5 file (or,
// for `shakedown topo`, gathered live): it never touches MPI, CUDA or the file itself.
#include <string>
#include <vector>

#include "record/run_meta.hpp"
#include "topology/rank_info.hpp"

namespace shakedown {

// One row per rank: rank, node, local rank, host, cpus, numa, gpu, nic.
std::string format_topology_table(const std::vector<RankInfo>& ranks);
// Up to 16 ranks the table above, else one row per node: node, host, ranks, gpus, nics.
std::string format_topology_compact(const std::vector<RankInfo>& ranks);
// One line per distinct kind of node (CPU, cores, memory, GPUs, OS and kernel, library
// versions): nodes that differ from the others show up as a line of their own.
std::string format_inventory_compact(const std::vector<NodeInventory>& nodes);
// "PASS", "WARN", "FAIL", "SKIP".
std::string status_label(CheckStatus status);
// One line per check: status, name, reason.
std::string format_checks(const std::vector<CheckResult>& checks);
// Node inventory, one block per node.
std::string format_inventory(const std::vector<NodeInventory>& nodes);
// Run metadata (status, times, sizes, command line).
std::string format_run_meta(const RunMeta& meta);
// Max |offset| and max round trip, naming the ranks.
std::string format_clock(const std::vector<double>& offset_us, const std::vector<double>& rtt_us);

}  // namespace shakedown
