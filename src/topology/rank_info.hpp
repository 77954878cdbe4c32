#pragma once
// Plain per-rank and per-node records produced by discovery and consumed by placement checks,
// the recorder and the reporters. No MPI, hwloc or CUDA types here.
#include <cstdint>
#include <string>
#include <vector>

namespace shakedown {

struct GpuInfo {
  int index = -1;          // CUDA device ordinal as this rank sees it
  std::string name;        // e.g. "NVIDIA H200"
  std::string uuid;        // "GPU-..." when known
  std::string pci_bus_id;  // "0000:18:00.0"
  std::uint64_t memory_bytes = 0;
  int numa_node = -1;  // NUMA node local to the GPU, -1 unknown
  std::string cpus;    // cpuset local to the GPU ("0-23,96-119"), "" unknown

  bool operator==(const GpuInfo&) const = default;
};

struct NicInfo {
  std::string name;  // mlx5_0, ib0, eth0 ...
  std::string kind;  // "infiniband" | "ethernet" | "other"
  int numa_node = -1;
  std::string pci_bus_id;

  bool operator==(const NicInfo&) const = default;
};

// Everything one rank knows about where it runs.
struct RankInfo {
  int rank = 0;
  int node_index = 0;  // from Context (shared-memory split or virtual nodes), never from hostname
  int local_rank = 0;
  int local_size = 1;
  std::string hostname;
  std::string cpus;    // bound cpuset as a list string, e.g. "0-3"
  int cpu_count = 0;   // CPUs in the bound set
  int node_cores = 0;  // physical cores on the host (all of them, whatever the job may use)
  int node_pus = 0;    // hardware threads on the host
  // The CPUs this process may use at all (hwloc's allowed cpuset: a Slurm cgroup or a container's
  // --cpuset-cpus; the whole host otherwise), and the cores and threads they make up. A rank whose
  // `cpus` equal these is not bound: it runs wherever the job may run. "" / 0 unknown.
  std::string allowed_cpus;
  int allowed_cores = 0;
  int allowed_pus = 0;
  std::string numa;      // NUMA node(s) the bound CPUs belong to, e.g. "0" or "0,1"
  int gpu_count = 0;     // GPUs this rank can see
  int gpu_index = -1;    // the GPU this rank uses (local_rank % gpu_count), -1 none
  GpuInfo gpu;           // details of that GPU
  std::string gpu_note;  // why there is no GPU ("built without CUDA", "no CUDA driver"...)
  std::string nic;       // the NIC nearest this rank's GPU (or CPUs), "" none; the node's NICs
                         // are in NodeInventory::nics
  // Slurm, when launched by srun (empty otherwise)
  std::string slurm_job_id, slurm_node_id, slurm_local_id, slurm_procid, slurm_topology_addr,
      slurm_topology_pattern;
  // Where the node sits in the fabric (topology/network.hpp), "" unknown: the leaf switch it hangs
  // off (from SLURM_TOPOLOGY_ADDR, else the topology.blocks file) and its NVLink block.
  std::string leaf_switch, block;

  // Every field, so that tests can check that a record survives JSON and the HDF5 file whole.
  bool operator==(const RankInfo&) const = default;
};

// One fact of a node's set-up beyond the fixed fields below (topology/node_facts.hpp lists the
// keys): "cpu.governor" = "performance", read from `source` (a file, "environment", ...). A value
// that could not be read starts with "unknown" and says why.
struct NodeFact {
  std::string key;
  std::string value;
  std::string source;

  bool operator==(const NodeFact&) const = default;
};

// One node's inventory (gathered from its local rank 0).
struct NodeInventory {
  int node_index = 0;
  std::string hostname;
  std::string cpu_model;
  int sockets = 0, cores = 0, pus = 0, numa_nodes = 0;
  std::uint64_t memory_bytes = 0;
  std::string os, kernel;
  std::vector<GpuInfo> gpus;
  std::string gpu_note;  // why gpus is empty: "built without CUDA", "CUDA: <error>; hwloc sees..."
  std::vector<NicInfo> nics;
  std::string gpu_driver;  // "" unknown
  // library versions as topology/versions.hpp reports them ("not built", "unavailable (why)")
  std::string mpi_version, nccl_version, cuda_runtime_version, cuda_driver_version, hdf5_version,
      ucx_version, hwloc_version, openblas_version;
  std::vector<NodeFact> facts;  // sorted by key

  bool operator==(const NodeInventory&) const = default;
};

enum class CheckStatus { kPass, kWarn, kFail, kSkip };

// A named check with its outcome and a reason a person can act on.
struct CheckResult {
  std::string name;
  CheckStatus status = CheckStatus::kPass;
  std::string reason;

  bool operator==(const CheckResult&) const = default;
};

inline const char* to_string(CheckStatus s) {
  switch (s) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kSkip:
      return "skip";
  }
  return "?";
}

}  // namespace shakedown
