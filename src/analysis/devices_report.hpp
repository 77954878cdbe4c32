#pragma once
// The devices phase's findings and summary block, from the run file alone (/devices):
//  - devices.coverage: which tests ran on how many devices, which pairs on how many nodes;
//  - devices.memory: each device's memory tests against devices.min_memory_GBps /
//    min_host_GBps (or the platform file's figures), and against its peers in the same run (the
//    noise-aware rule of analysis/stragglers.hpp on time per byte): the slow GPU or host named;
//  - devices.free_memory: GPU memory free once the runtime started against devices.min_free_GiB;
//  - devices.pcie: a GPU's PCIe link below its maximum speed or width while it copied;
//  - devices.pairs: inside each node, a device whose pairs are slow (one finding about the
//    device, not one per pair), then a pair below the node's other pairs, saying whether one
//    direction or both; pairs whose buffer could not be opened; the pair minimum.
#include <string>
#include <vector>

#include "analysis/run_facts.hpp"
#include "analysis/stragglers.hpp"
#include "record/findings.hpp"
#include "record/reader.hpp"

namespace shakedown {

// One mode's pair samples inside a node: GB/s [trials, src, dst], NaN where not measured.
struct PairMatrix {
  std::string mode;  // unidirectional, bidirectional, concurrent
  std::size_t trials = 0, g = 0;
  std::vector<double> gbps;
  double at(std::size_t trial, std::size_t src, std::size_t dst) const {
    return gbps[(trial * g + src) * g + dst];
  }
  double median(std::size_t src, std::size_t dst) const;  // over the trials, NaN none
};

// What the pair analysis of one node found, slots being local ranks.
struct PairOutliers {
  std::vector<StragglerEvidence> devices;  // rank = the slot whose pairs are slow
  struct Pair {
    int src = 0, dst = 0;
    StragglerEvidence evidence;  // rank is unused
    bool both_ways = false;      // dst -> src was flagged too (reported once, src < dst)
  };
  std::vector<Pair> pairs;
  std::string devices_unjudged, pairs_unjudged;  // why a comparison could not be made
  // What slower_together_finding says of the slots and of the pairs slower together on shared
  // cores (their messages name slots: the caller adds the node).
  std::vector<Finding> together;
};

// The node's devices, then its pairs not touching a flagged device, against each other.
PairOutliers pair_outliers(const std::vector<PairMatrix>& modes, const StragglerLimits& limits);

struct DevicesNode {
  int node = 0;
  std::vector<int> ranks;              // by slot
  std::vector<std::string> described;  // by slot
  std::string refused;
  std::vector<PairMatrix> modes;   // empty: no pair measured on this node
  std::size_t pairs_measured = 0;  // ordered pairs with a unidirectional median
};

struct DevicesTest {
  std::string name, counted;
  double bytes_counted = 0;
  std::vector<double> alone, together;  // GB/s [trials, world]
};

struct DevicesFindings {
  bool ran = false;
  std::string path, pairs_setting;
  std::size_t trials = 0, world = 0;
  double bytes = 0, copy_bytes = 0;
  std::vector<DevicesTest> tests;
  std::vector<double> free_bytes, total_bytes;                             // [world]
  std::vector<double> pcie_cur_gts, pcie_max_gts, pcie_cur_w, pcie_max_w;  // [world] or empty
  std::vector<double> nic_cur_gts, nic_max_gts, nic_cur_w, nic_max_w;      // the ranks' NICs
  std::vector<DevicesNode> nodes;
  std::size_t pairs_measured = 0, nodes_with_pairs = 0;  // over every node
  std::vector<Finding> findings;
};

DevicesFindings devices_findings(const RunFile& file, const RunFacts& facts);
// "devices (cpu: copy, triad of 256 MiB arrays, 5 trials; pairs all)"
std::string devices_title(const DevicesFindings& findings);
// The summary block ("" when the run has no /devices); `detail` adds each node's pair matrix.
std::string format_devices(const DevicesFindings& findings, const RunFacts& facts, bool detail);

}  // namespace shakedown
