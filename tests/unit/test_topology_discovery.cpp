#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "topology/cpu_list.hpp"
#include "topology/discovery.hpp"
#include "topology/hwloc_topology.hpp"
#include "topology/versions.hpp"
#include "text_support.hpp"

namespace shakedown {
namespace {

const std::string kDgx = std::string(SHAKEDOWN_TEST_DATA) + "/topology/dgx_like.xml";
// cpu_2x2x8.xml with the allowed cpuset cut to PUs 0-8, as a cgroup or container would.
const std::string kCpuset = std::string(SHAKEDOWN_TEST_DATA) + "/topology/cpu_2x2x8_cpuset.xml";

using testing_support::contains;

// ---- saved DGX-like topology (layout in tests/data/topology/make_dgx_like.py) ----

TEST(TopologyDiscoveryXml, LoadsAndMoves) {
  HwlocTopology a = HwlocTopology::from_xml_file(kDgx);
  EXPECT_NE(a.get(), nullptr);
  EXPECT_EQ(a.source(), kDgx);
  EXPECT_FALSE(a.is_this_system());
  HwlocTopology b = std::move(a);
  EXPECT_NE(b.get(), nullptr);
  EXPECT_EQ(a.get(), nullptr);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  a = HwlocTopology::this_machine();
  EXPECT_TRUE(a.is_this_system());
}

TEST(TopologyDiscoveryXml, PciLocalityOfGpus) {
  const auto topo = HwlocTopology::from_xml_file(kDgx);
  auto loc = pci_locality(topo, "0000:18:00.0");
  EXPECT_TRUE(loc.found);
  EXPECT_EQ(loc.numa_node, 0);
  EXPECT_EQ(loc.cpus, "0-11,48-59");
  loc = pci_locality(topo, "0000:DB:00.0");  // upper case, as nvidia-smi prints it
  EXPECT_TRUE(loc.found);
  EXPECT_EQ(loc.numa_node, 3);
  EXPECT_EQ(loc.cpus, "36-47,84-95");
  loc = pci_locality(topo, "00000000:5d:00.0");  // NVML's 8-digit domain
  EXPECT_TRUE(loc.found);
  EXPECT_EQ(loc.numa_node, 1);
  EXPECT_FALSE(pci_locality(topo, "0000:01:00.0").found);
  EXPECT_FALSE(pci_locality(topo, "not a bus id").found);
}

TEST(TopologyDiscoveryXml, NvidiaGpusInBusOrderWithoutNvswitch) {
  const auto topo = HwlocTopology::from_xml_file(kDgx);
  const auto gpus = pci_gpus(topo);
  ASSERT_EQ(gpus.size(), 8u);
  const char* bus[] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ(gpus[i].index, static_cast<int>(i));
    EXPECT_EQ(gpus[i].pci_bus_id, std::string("0000:") + bus[i] + ":00.0");
    EXPECT_EQ(gpus[i].numa_node, static_cast<int>(i / 2));
    EXPECT_EQ(gpus[i].name, "NVIDIA [10de:2335]");
  }
}

TEST(TopologyDiscoveryXml, NicsOnePerPciFunction) {
  const auto topo = HwlocTopology::from_xml_file(kDgx);
  const auto nics = list_nics(topo);
  ASSERT_EQ(nics.size(), 9u);  // eno1 + mlx5_0..7 (ib0..7 are the same functions)
  EXPECT_EQ(nics[0].name, "eno1");
  EXPECT_EQ(nics[0].kind, "ethernet");
  EXPECT_EQ(nics[0].pci_bus_id, "0000:10:03.0");
  EXPECT_EQ(nics[0].numa_node, 0);
  for (int i = 0; i < 8; ++i) {
    const auto& n = nics[static_cast<std::size_t>(i) + 1];
    EXPECT_EQ(n.name, "mlx5_" + std::to_string(i));
    EXPECT_EQ(n.kind, "infiniband");
    EXPECT_EQ(n.numa_node, i / 2);
  }
  EXPECT_EQ(nics[6].pci_bus_id, "0000:aa:00.0");
}

TEST(TopologyDiscoveryXml, NearestNic) {
  const auto topo = HwlocTopology::from_xml_file(kDgx);
  EXPECT_EQ(nearest_nic(topo, "0000:18:00.0", ""), "mlx5_0");  // same PCIe switch
  EXPECT_EQ(nearest_nic(topo, "0000:2a:00.0", "0-3"), "mlx5_1");
  EXPECT_EQ(nearest_nic(topo, "0000:ab:00.0", ""), "mlx5_5");
  // No GPU: most CPUs in common, InfiniBand before the Ethernet port on the same NUMA node.
  EXPECT_EQ(nearest_nic(topo, "", "0-3"), "mlx5_0");
  EXPECT_EQ(nearest_nic(topo, "", "36-40"), "mlx5_6");
}

TEST(TopologyDiscoveryXml, RankOnSavedTopology) {
  const auto topo = HwlocTopology::from_xml_file(kDgx);
  const RankInfo r = discover_rank(topo, 3, 1, 1, 2);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.node_index, 1);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_size, 2);
  EXPECT_EQ(r.node_cores, 48);
  EXPECT_EQ(r.node_pus, 96);
  // Nothing disallowed in this XML: the job may use the whole machine.
  EXPECT_EQ(r.allowed_cpus, "0-95");
  EXPECT_EQ(r.allowed_cores, 48);
  EXPECT_EQ(r.allowed_pus, 96);
  EXPECT_EQ(r.nic.rfind("mlx5_", 0), 0u) << r.nic;  // nearest NIC; the node's list is in inventory
  if (r.gpu_count == 0) {
    // No GPU on this test machine: the note says why, and that the PCI bus does have some.
    EXPECT_TRUE(contains(r.gpu_note, "hwloc sees 8 NVIDIA GPU(s)")) << r.gpu_note;
    EXPECT_EQ(r.gpu_index, -1);
  }
}

// Sets environment variables for one scope and restores what was there.
class ScopedEnv {
 public:
  void set(const char* name, const char* value) {
    if (!saved_.count(name)) {
      const char* old = std::getenv(name);
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(TopologyDiscoveryXml, SlurmTaskOfThisRank) {
  const auto topo = HwlocTopology::from_xml_file(kDgx);
  ScopedEnv env;
  env.set("OMPI_MCA_orte_hnp_uri", nullptr);
  env.set("SLURM_JOB_ID", "4711");
  env.set("SLURM_NODEID", "1");
  env.set("SLURM_LOCALID", "1");
  env.set("SLURM_PROCID", "3");
  env.set("SLURM_TOPOLOGY_ADDR", "spine.leaf2.gpu002");
  env.set("SLURM_TOPOLOGY_ADDR_PATTERN", "switch.switch.node");
  RankInfo r = discover_rank(topo, 3, 1, 1, 2);
  EXPECT_EQ(r.slurm_job_id, "4711");
  EXPECT_EQ(r.slurm_node_id, "1");
  EXPECT_EQ(r.slurm_local_id, "1");
  EXPECT_EQ(r.slurm_procid, "3");
  EXPECT_EQ(r.leaf_switch, "leaf2");
  EXPECT_EQ(r.block, "");  // only from topology.blocks, later (assign_network)

  // mpirun inside the allocation: the task variables are the batch step's, not this rank's.
  env.set("OMPI_MCA_orte_hnp_uri", "1851326464.0;tcp://10.0.0.1:39169");
  env.set("SLURM_PROCID", "0");
  env.set("SLURM_LOCALID", "0");
  r = discover_rank(topo, 3, 1, 1, 2);
  EXPECT_EQ(r.slurm_job_id, "4711");
  EXPECT_EQ(r.slurm_topology_addr, "spine.leaf2.gpu002");
  EXPECT_EQ(r.leaf_switch, "leaf2");
  EXPECT_EQ(r.slurm_procid, "");
  EXPECT_EQ(r.slurm_local_id, "");
  EXPECT_EQ(r.slurm_node_id, "");
  // Another launcher whose Slurm task is not this rank.
  env.set("OMPI_MCA_orte_hnp_uri", nullptr);
  r = discover_rank(topo, 3, 1, 1, 2);
  EXPECT_EQ(r.slurm_procid, "");
}

TEST(TopologyDiscoveryXml, NodeOnSavedTopology) {
  const auto topo = HwlocTopology::from_xml_file(kDgx);
  const NodeInventory n = discover_node(topo, 5);
  EXPECT_EQ(n.node_index, 5);
  EXPECT_EQ(n.sockets, 2);
  EXPECT_EQ(n.cores, 48);
  EXPECT_EQ(n.pus, 96);
  EXPECT_EQ(n.numa_nodes, 4);
  EXPECT_EQ(n.memory_bytes, 4ull * 512 * 1024 * 1024 * 1024);
  EXPECT_EQ(n.cpu_model, "Intel(R) Xeon(R) Platinum 8480C");
  EXPECT_EQ(n.nics.size(), 9u);
}

// A job cpuset smaller than the machine: the node counts stay the machine's, the allowed counts
// say what the job may use (a core counts when any of its threads is allowed).
TEST(TopologyDiscoveryXml, AllowedCpusetOfAJob) {
  const auto topo = HwlocTopology::from_xml_file(kCpuset);
  const RankInfo r = discover_rank(topo, 0, 0, 0, 1);
  EXPECT_EQ(r.node_cores, 32);
  EXPECT_EQ(r.node_pus, 64);
  EXPECT_EQ(r.allowed_cpus, "0-8");
  EXPECT_EQ(r.allowed_pus, 9);
  EXPECT_EQ(r.allowed_cores, 5);  // cores 0-3 whole, core 4 by one thread
  const NodeInventory n = discover_node(topo, 0);
  EXPECT_EQ(n.cores, 32);
  EXPECT_EQ(n.pus, 64);
}

TEST(TopologyDiscoveryXml, MissingFileIsAUsageError) {
  EXPECT_THROW(HwlocTopology::from_xml_file(kDgx + ".missing"), UsageError);
}

// ---- this machine ----

TEST(TopologyDiscoveryLive, Rank) {
  const RankInfo r = discover_rank(0, 0, 0, 1);
  EXPECT_FALSE(r.hostname.empty());
  EXPECT_FALSE(r.cpus.empty());
  const auto cpus = parse_cpu_list(r.cpus);
  ASSERT_TRUE(cpus);
  EXPECT_EQ(r.cpu_count, static_cast<int>(cpus->size()));
  EXPECT_GE(r.node_cores, 1);
  EXPECT_GE(r.node_pus, r.node_cores);
  // This process runs inside what it may use; the counts fit in the machine.
  const auto allowed = parse_cpu_list(r.allowed_cpus);
  ASSERT_TRUE(allowed);
  EXPECT_FALSE(allowed->empty());
  EXPECT_TRUE(std::includes(allowed->begin(), allowed->end(), cpus->begin(), cpus->end()))
      << "cpus " << r.cpus << " allowed " << r.allowed_cpus;
  EXPECT_EQ(r.allowed_pus, static_cast<int>(allowed->size()));
  EXPECT_GE(r.allowed_cores, 1);
  EXPECT_LE(r.allowed_cores, r.node_cores);
  EXPECT_LE(r.allowed_pus, r.node_pus);
  EXPECT_FALSE(r.numa.empty());
  if (r.gpu_count == 0) {
    EXPECT_FALSE(r.gpu_note.empty());
#if !SHAKEDOWN_HAVE_CUDA
    EXPECT_TRUE(contains(r.gpu_note, "built without CUDA")) << r.gpu_note;
#else
    EXPECT_TRUE(contains(r.gpu_note, "CUDA: ")) << r.gpu_note;
#endif
  } else {
    EXPECT_EQ(r.gpu_index, 0);
    EXPECT_EQ(r.gpu.uuid.rfind("GPU-", 0), 0u) << r.gpu.uuid;
    EXPECT_FALSE(r.gpu.pci_bus_id.empty());
    EXPECT_GT(r.gpu.memory_bytes, 0u);
  }
  EXPECT_NE(r.nic, "lo");
}

// Plans number GPUs in PCI bus order; CUDA must too (its default is fastest first). A value the
// user set is theirs to keep.
TEST(TopologyDiscoveryLive, AsksCudaForPciBusOrderUnlessSet) {
#if SHAKEDOWN_HAVE_CUDA
  const char* before = std::getenv("CUDA_DEVICE_ORDER");
  const std::optional<std::string> saved =
      before != nullptr ? std::optional<std::string>(before) : std::nullopt;
  unsetenv("CUDA_DEVICE_ORDER");
  (void)cuda_devices();
  const char* set = std::getenv("CUDA_DEVICE_ORDER");
  ASSERT_NE(set, nullptr);
  EXPECT_STREQ(set, "PCI_BUS_ID");
  setenv("CUDA_DEVICE_ORDER", "FASTEST_FIRST", 1);
  (void)cuda_devices();
  EXPECT_STREQ(std::getenv("CUDA_DEVICE_ORDER"), "FASTEST_FIRST");
  if (saved) {
    setenv("CUDA_DEVICE_ORDER", saved->c_str(), 1);
  } else {
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
  }
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

TEST(TopologyDiscoveryLive, RejectsInconsistentPlacement) {
  EXPECT_THROW(discover_rank(0, 0, 2, 2), InternalError);
}

TEST(TopologyDiscoveryLive, Node) {
  const NodeInventory n = discover_node(0);
  EXPECT_FALSE(n.hostname.empty());
  EXPECT_FALSE(n.cpu_model.empty());
  EXPECT_GE(n.sockets, 1);
  EXPECT_GE(n.cores, 1);
  EXPECT_GE(n.numa_nodes, 1);
  EXPECT_GT(n.memory_bytes, 0u);
  EXPECT_FALSE(n.os.empty());
  EXPECT_FALSE(n.kernel.empty());
  if (n.gpus.empty()) {
    EXPECT_FALSE(n.gpu_note.empty());
  }
  EXPECT_FALSE(n.mpi_version.empty());
  EXPECT_FALSE(n.hwloc_version.empty());
}

TEST(TopologyDiscoveryLive, BoundCpusMatchesRank) {
  EXPECT_EQ(bound_cpus(), discover_rank(0, 0, 0, 1).cpus);
}

// ---- versions ----

TEST(TopologyVersions, Library) {
  const LibraryVersions v = library_versions();
  EXPECT_FALSE(v.mpi.empty());
  EXPECT_EQ(v.mpi.find('\n'), std::string::npos);
  EXPECT_EQ(v.hdf5.rfind("1.", 0), 0u) << v.hdf5;
  EXPECT_FALSE(v.ucx.empty());
  EXPECT_EQ(v.hwloc.rfind("2.", 0), 0u) << v.hwloc;
  EXPECT_FALSE(v.openblas.empty());
  EXPECT_NE(v.openblas.find('.'), std::string::npos) << v.openblas;
  EXPECT_EQ(v.cuda_built, SHAKEDOWN_HAVE_CUDA != 0);
  if (v.cuda_built) {
    EXPECT_EQ(v.nccl.find("unavailable"), std::string::npos) << v.nccl;
    EXPECT_FALSE(v.cuda_runtime.empty());
    EXPECT_FALSE(v.cuda_driver.empty());
  } else {
    EXPECT_EQ(v.nccl, "not built");
    EXPECT_EQ(v.cuda_runtime, "not built");
  }
}

TEST(TopologyVersions, Formatting) {
  EXPECT_EQ(nccl_version_string(22809), "2.28.9");
  EXPECT_EQ(nccl_version_string(2708), "2.7.8");
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12080), "12.8");
  EXPECT_EQ(openblas_version_string("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64"),
            "0.3.21 (DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64)");
  EXPECT_EQ(openblas_version_string("OpenBLAS 0.3.26"), "0.3.26");
}

TEST(TopologyFormat, UuidAndBusId) {
  std::array<unsigned char, 16> b{};
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<unsigned char>(0xa0 + i);
  EXPECT_EQ(format_gpu_uuid(b), "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
  EXPECT_EQ(format_pci_bus_id(0, 0x18, 0, 0), "0000:18:00.0");
  EXPECT_EQ(format_pci_bus_id(1, 0xdb, 0x1f, 7), "0001:db:1f.7");
}

}  // namespace
}  // namespace shakedown
