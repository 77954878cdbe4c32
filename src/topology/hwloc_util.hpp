#pragma once
// Internal helpers shared by discovery.cpp and plan.cpp: the only topology headers that include
// hwloc.h. Not for use outside src/topology/ (other folders get plain records).
#include <hwloc.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shakedown::hwloc_util {

// RAII hwloc bitmap.
class Bitmap {
 public:
  Bitmap();
  explicit Bitmap(hwloc_const_bitmap_t copy_of);
  ~Bitmap();
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
  hwloc_bitmap_t get() const noexcept { return bitmap_; }

 private:
  hwloc_bitmap_t bitmap_;
};

// "0-11,48-59"; "" for a null or empty set.
std::string list_string(hwloc_const_bitmap_t set);

struct PciAddress {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
};
// "0000:18:00.0", "00000000:18:00.0" (NVML's legacy form), "18:00.0" (domain 0); case-insensitive.
std::optional<PciAddress> parse_pci_bus_id(std::string_view text);
// Bus id of a PCI device object; "" for other objects.
std::string bus_id_of(hwloc_obj_t pcidev);

// NVIDIA GPU on the PCI bus: vendor 0x10de with class 3D controller (0x0302) or VGA (0x0300).
// NVSwitches (class 0x0680) and audio functions are not GPUs.
bool is_nvidia_gpu(hwloc_obj_t obj);
// NVIDIA GPUs sorted by PCI bus id: the order CUDA uses with CUDA_DEVICE_ORDER=PCI_BUS_ID.
std::vector<hwloc_obj_t> nvidia_gpus(hwloc_topology_t topology);

// The normal (non-I/O) object an I/O object hangs from: its CPUs and NUMA nodes are "local".
hwloc_obj_t locality_of(hwloc_topology_t topology, hwloc_obj_t io_object);
// os index of the single NUMA node in obj's nodeset; -1 when none or several.
int single_numa_node(hwloc_obj_t obj);
// NUMA nodes (os indices, "0,1") whose CPUs intersect `cpus`; "" for none.
std::string numa_list(hwloc_topology_t topology, hwloc_const_cpuset_t cpus);

}  // namespace shakedown::hwloc_util
