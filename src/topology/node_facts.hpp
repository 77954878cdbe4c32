#pragma once
// The facts of a node's set-up that the audit checks (docs/audit.md): firmware, kernel settings,
// NIC firmware and link rates, GPUDirect RDMA, NCCL settings, the container it runs in, what the
// job was given. Read from /sys, /proc and /etc under a root folder and from an environment, both
// passed in, so tests run every reader on a fake tree. Nothing here throws because a file is
// missing or unreadable: that fact's value says "unknown (why)", or the fact is left out when the
// thing it describes is absent (no InfiniBand device: no nic.* facts).
//
// Keys (NodeFact::key):
//   system.product, bios.version                     /sys/class/dmi/id
//   hugepages.total, hugepages.size_kB               /proc/meminfo
//   thp.enabled, thp.defrag                          /sys/kernel/mm/transparent_hugepage
//   cpu.governor                                     /sys/devices/system/cpu/cpu*/cpufreq
//   nic.<dev>.model, nic.<dev>.fw                    /sys/class/infiniband/<dev>
//   nic.<dev>.port<p>.rate, .link_layer, .state      /sys/class/infiniband/<dev>/ports/<p>
//   net.<if>.speed                                   /sys/class/net/<if>/speed (Ethernet NICs)
//   gpu.kernel_module                                /proc/driver/nvidia/version: open|proprietary
//   gdr.nvidia_peermem                               /sys/module/nvidia_peermem: loaded|not loaded
//   pcie.acs                                         PCI config space of the bridges above GPUs
//                                                    and NICs (ACS control register)
//   nccl.<VARIABLE>                                  the environment, NCCL_CONF_FILE,
//                                                    ~/.nccl.conf, /etc/nccl.conf
//   container.runtime, container.image               /.dockerenv, /run/.containerenv,
//                                                    Apptainer/Singularity, Enroot/Pyxis, k8s
//   slurm.topology_conf                              topology.conf beside slurm.conf (under Slurm)
//   visible.cuda_devices, visible.slurm_gpus         CUDA_VISIBLE_DEVICES, Slurm's GPU variables
// discovery.cpp adds the GPU and build facts (gpu.<i>.compute_capability, gpu.<i>.mig,
// gpu.<i>.vbios, gpu.pci_count, cublaslt.version, build.cuda_runtime, build.nccl,
// build.cuda_archs).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "topology/rank_info.hpp"

namespace shakedown {

// Where the readers look: files under `root` ("/" on a real node), variables in `env`.
struct FactSource {
  std::filesystem::path root = "/";
  std::map<std::string, std::string> env;

  // This process: "/" and its environment.
  static FactSource this_process();
  std::string getenv(const std::string& name) const;  // "" when unset
  std::filesystem::path path(const std::string& absolute) const;  // root + "/sys/..."
};

// The NCCL variables that change which algorithms, protocols, channels or transports NCCL uses,
// and so silently cost bandwidth when left set from an experiment.
const std::vector<std::string>& costly_nccl_settings();

// Every fact the readers above find on the node `n` describes (its GPUs' and NICs' PCI ids are
// used for the ACS walk), sorted by key.
std::vector<NodeFact> read_node_facts(const FactSource& source, const NodeInventory& n);

// "unknown (...)": a value that could not be read.
bool is_unknown(const std::string& value);

// Sets `key` in `n` to `value`: one of the fixed fields (inventory_field_names()) or a fact,
// added when the node has none of that key. For --inject drift (a node made to differ).
void override_inventory_field(NodeInventory& n, const std::string& key, const std::string& value);

// The fixed fields of NodeInventory by the names the audit uses for them ("kernel", "os",
// "gpu.driver", "nccl", ...), and the text of each.
struct InventoryField {
  std::string key;
  std::string value;
};
std::vector<InventoryField> inventory_fields(const NodeInventory& n);
const std::vector<std::string>& inventory_field_names();
// The fact families read_node_facts and discovery write ("nic.", "nccl.", "gpu.", ...): a
// --inject drift field must be a fixed field or start with one of them.
const std::vector<std::string>& fact_key_prefixes();

}  // namespace shakedown
