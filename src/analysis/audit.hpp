#pragma once
// The preflight audit (docs/audit.md): every node's inventory (/inventory, with its facts) held
// to what the workload needs and to the other nodes, as typed findings:
//   audit.compatibility  CUDA driver vs the runtime built in, NCCL loaded vs built against,
//                        driver and NCCL minimums, FP8 on the GPUs found, the GPUs' compute
//                        capability among the build's architectures, MIG where a full GPU is
//                        expected
//   audit.drift          any field that should be the same on every node and is not: the
//                        majority's value and the nodes that differ, grouped
//   audit.settings       NCCL settings that cost bandwidth, RoCE without NCCL_IB_GID_INDEX,
//                        GPUDirect RDMA unavailable, ACS on, the CPU governor, Slurm's
//                        topology.conf
//   audit.visibility     the GPUs the job sees against the PCI bus, Slurm's GRES and the
//                        expected count
//   audit.nics           InfiniBand ports down or trained below the expected rate
//   audit.container      where each node ran (bare host or which container and image)
//   audit.coverage       what could be read, and on how many nodes; nothing read is no PASS
// Read from the file alone, like every check.
#include <vector>

#include "analysis/run_facts.hpp"
#include "record/findings.hpp"
#include "record/reader.hpp"

namespace shakedown {

// The checks above for `nodes` (one inventory per node) in the run `facts` describes (its config
// and platform give the expectations; its ranks the hosts).
std::vector<Finding> audit_findings(const std::vector<NodeInventory>& nodes, const RunFacts& facts);

// From the run file: nothing when the inventory phase was not asked for.
std::vector<Finding> audit_checks(const RunFile& file, const RunFacts& facts);

// Dotted version text compared numerically: -1, 0, 1; "570.124.06" > "570.86". Text that is not
// a version compares as nullopt.
std::optional<int> compare_versions(const std::string& a, const std::string& b);

}  // namespace shakedown
