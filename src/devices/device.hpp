#pragma once
// A device under test in the devices phase (docs/devices.md): this rank's host memory and cores
// (the CPU path) or its GPU (the CUDA path). The phase runs the same schedule on either; each
// call here times one trial and returns seconds, measurement only (recording is the phase's).
#include <mpi.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace shakedown::devices {

// One test of a device alone.
struct MemoryTest {
  std::string name;     // "copy", "triad", "ce_copy", "h2d", "d2h", "h2d_bidir", "d2h_bidir"
  double bytes = 0;     // bytes counted per trial
  std::string counted;  // how: "read + written (STREAM)" or "copied"
};

// A PCIe link as sysfs shows it while a copy runs (GPUs lower their link speed when idle).
struct LinkState {
  std::string device;  // "GPU 0000:19:00.0"
  double current_gts = std::numeric_limits<double>::quiet_NaN();
  // The most the link can train to: the lower of the device's own maximum and its upstream
  // port's (a Gen5 GPU in a Gen4 slot trains at Gen4 by design, not as a fault).
  double max_gts = std::numeric_limits<double>::quiet_NaN();
  double current_width = std::numeric_limits<double>::quiet_NaN();
  double max_width = std::numeric_limits<double>::quiet_NaN();
  double device_max_gts = std::numeric_limits<double>::quiet_NaN();  // the device's own
  double device_max_width = std::numeric_limits<double>::quiet_NaN();
  std::string upstream;  // the upstream port's bus id ("" none: a root-complex device)
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string kind() const = 0;      // "cpu" or "cuda"
  virtual std::string describe() const = 0;  // "host memory, NUMA 0, 2 threads", "GPU 0 ..."
  virtual const std::vector<MemoryTest>& tests() const = 0;
  // One timed trial of tests()[i], in seconds.
  virtual double run(std::size_t test) = 0;
  // Device memory free and in all once the runtime has started (NaN on the host path).
  virtual double free_bytes() const { return std::numeric_limits<double>::quiet_NaN(); }
  virtual double total_bytes() const { return std::numeric_limits<double>::quiet_NaN(); }
  // The device's PCIe link read while it copies (none on the host path).
  virtual std::vector<LinkState> links_under_load() { return {}; }

  // Collective over `node` (one rank per device slot): makes this device's pair buffer
  // (copy_bytes) readable by the node's other ranks and opens theirs. Returns, per local rank,
  // "" or why that peer's buffer cannot be read (peer access refused by P2P settings, ACS, an
  // IOMMU): such pairs are findings, never a crash.
  virtual std::vector<std::string> open_peers(MPI_Comm node) = 0;
  // One timed copy of the pair buffer of local rank `peer` into this device, seconds.
  virtual double copy_from(int peer) = 0;
  // Collective over the node again: closes what open_peers opened.
  virtual void close_peers() = 0;
  virtual double pair_bytes() const = 0;
  // Copies one pair trial makes back to back (its figure is per copy): for the ETA's guess.
  virtual int copies_per_trial() const { return 1; }
};

// The CPU path: arrays of `array_bytes` each on this rank's NUMA node (first touch by its own
// threads, which run on its bound cores), `threads` threads; pairs through an
// MPI_Win_allocate_shared window of `copy_bytes`.
std::unique_ptr<Device> make_host_device(std::uint64_t array_bytes, std::uint64_t copy_bytes,
                                         int threads);

// The CUDA path on CUDA device `device`: copy and triad kernels and a copy-engine copy over
// `bytes` buffers, pinned host copies of `copy_bytes` (first touched by this rank, so on its
// NUMA node: a rank bound to the far socket shows here), pairs through CUDA IPC. RuntimeFault
// when the build has no CUDA or the device cannot be used.
std::unique_ptr<Device> make_cuda_device(int device, std::uint64_t bytes, std::uint64_t copy_bytes);

// A PCIe device's link from sysfs (<root>/sys/bus/pci/devices/<bus_id>/current_link_speed ...),
// its maximum held to its upstream port's (the parent folder of the device's sysfs folder, when
// that is a PCI device with link files): fields left NaN when unreadable.
LinkState read_pcie_link(const std::string& root, const std::string& bus_id,
                         const std::string& label);

// The PCI function ("0000:3b:00.0") a network device sits on, from sysfs:
// <root>/sys/class/infiniband/<nic>/device, else <root>/sys/class/net/<nic>/device, followed to
// the nearest PCI device folder (a virtio NIC's is its parent). "" when sysfs does not say.
std::string nic_pci_bus_id(const std::string& root, const std::string& nic);

}  // namespace shakedown::devices
