#pragma once
// RAII owner of an hwloc topology, loaded from this machine or from a saved XML file, always with
// PCI and OS devices (GPUs and NICs are found through them: hwloc 2.9 here has no CUDA/NVML
// plugin).
#include <string>

// hwloc_topology_t is `struct hwloc_topology*`; declared here so that including this header does
// not pull hwloc.h into every user of the topology folder.
struct hwloc_topology;

namespace shakedown {

class HwlocTopology {
 public:
  // Throws RuntimeFault when hwloc cannot read this machine.
  static HwlocTopology this_machine();
  // Throws UsageError naming the file when it is missing or not an hwloc XML topology.
  static HwlocTopology from_xml_file(const std::string& path);

  ~HwlocTopology();
  HwlocTopology(HwlocTopology&& other) noexcept;
  HwlocTopology& operator=(HwlocTopology&& other) noexcept;
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;

  hwloc_topology* get() const noexcept { return topo_; }
  // True when the topology describes the machine we run on (binding and affinity apply to it).
  bool is_this_system() const noexcept { return this_system_; }
  // "this machine" or the XML path, for messages.
  const std::string& source() const noexcept { return source_; }

 private:
  HwlocTopology(hwloc_topology* topo, std::string source, bool this_system) noexcept;

  hwloc_topology* topo_ = nullptr;
  std::string source_;
  bool this_system_ = false;
};

}  // namespace shakedown
