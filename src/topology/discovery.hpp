#pragma once
// Where does this rank run, and what does its node have? Plain records out (rank_info.hpp);
// hwloc and CUDA stay inside the .cpp. Nothing here needs MPI to be initialised, and nothing
// throws because a GPU, driver or NIC is missing: absence is recorded with the reason.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "topology/hwloc_topology.hpp"
#include "topology/rank_info.hpp"

namespace shakedown {

// This rank, on this machine's live hwloc topology. The rank uses GPU gpu_slot % gpu_count, where
// gpu_slot is its index among the ranks of its host (-1: local_rank). They differ only with
// virtual nodes, where pretend nodes of one host must not pick the same GPUs.
RankInfo discover_rank(int rank, int node_index, int local_rank, int local_size, int gpu_slot = -1);
// Same, against a given topology (tests load a saved XML). Hostname, CPU binding, CUDA and Slurm
// always come from the running process; node and allowed CPU counts from the topology.
RankInfo discover_rank(const HwlocTopology& topology, int rank, int node_index, int local_rank,
                       int local_size, int gpu_slot = -1);

// This node's inventory (call on one rank per node).
NodeInventory discover_node(int node_index);
NodeInventory discover_node(const HwlocTopology& topology, int node_index);

// ---- building blocks, exposed for other modules and tests ----

// GPUs as the CUDA runtime sees them (index, name, uuid, PCI bus id, memory); NUMA and CPUs are
// not filled here. `note` says why the list is empty ("built without CUDA", "CUDA: <error>").
// Sets CUDA_DEVICE_ORDER=PCI_BUS_ID unless already set, so that CUDA ordinals follow the PCI bus
// order plans use; this takes effect only if no CUDA call in the process came before.
struct CudaDevices {
  std::vector<GpuInfo> gpus;
  std::string note;
};
CudaDevices cuda_devices();

// NVIDIA GPUs hwloc sees on the PCI bus (vendor 0x10de, class 0x0302 3D or 0x0300 VGA), sorted by
// bus id, with name "NVIDIA [10de:<device>]", NUMA node and local CPUs; memory unknown (0).
std::vector<GpuInfo> pci_gpus(const HwlocTopology& topology);

// Locality of a PCI device ("0000:18:00.0", case-insensitive; "00000000:18:00.0" accepted).
struct PciLocality {
  bool found = false;  // false: hwloc has no such PCI device
  int numa_node = -1;  // os index of the one NUMA node local to it, -1 when none or several
  std::string cpus;    // CPUs local to it (its non-I/O ancestor's cpuset), "" unknown
};
PciLocality pci_locality(const HwlocTopology& topology, std::string_view pci_bus_id);

// Network devices of the node, one per PCI function (mlx5_0 rather than both mlx5_0 and ib0),
// sorted by PCI bus id (devices without a PCI id last, by name). Loopback is skipped.
// kind: OpenFabrics devices are "infiniband" unless their port is Ethernet (RoCE); network
// interfaces named ib* are "infiniband", others "ethernet".
std::vector<NicInfo> list_nics(const HwlocTopology& topology);

// The NIC nearest a GPU (the one sharing the deepest PCI ancestor with it, InfiniBand preferred on
// ties) or, without a GPU (empty/unknown bus id), the one whose local CPUs overlap `cpus` most.
// "" when the node has no NIC.
std::string nearest_nic(const HwlocTopology& topology, std::string_view gpu_pci_bus_id,
                        std::string_view cpus);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (nvidia-smi's spelling) from CUDA's 16 bytes.
std::string format_gpu_uuid(const std::array<unsigned char, 16>& bytes);
// "0000:18:00.0" (lower-case hex, as Linux sysfs and hwloc print it).
std::string format_pci_bus_id(unsigned domain, unsigned bus, unsigned device, unsigned function);

// This process's CPU affinity (sched_getaffinity) as a list string, "" when unavailable.
std::string bound_cpus();

}  // namespace shakedown
