// The audit's readers on fake /sys, /proc and /etc trees under a test root, with a scripted
// environment: every fact read where it exists, "unknown (why)" where a file is missing or (PCI
// configuration space without root) too short, nothing invented where a thing is absent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "temp_dir.hpp"
#include "topology/node_facts.hpp"

namespace shakedown {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing_support::TempDir;
namespace fs = std::filesystem;

void write(const fs::path& root, const std::string& file, const std::string& text) {
  const fs::path p = root / fs::path(file).relative_path();
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// A PCI configuration space of `size` bytes whose extended capabilities hold an ACS capability
// (id 0x000D) after another one, with the given control register.
std::string pci_config(std::size_t size, unsigned acs_control) {
  std::string c(size, '\0');
  const auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) c[at + static_cast<std::size_t>(i)] = static_cast<char>(v >> (8 * i));
  };
  if (size >= 0x200) {
    put32(0x100, 0x0001u | (0x140u << 20));  // AER, next at 0x140
    put32(0x140, 0x000du);                   // ACS, last
    c[0x146] = static_cast<char>(acs_control & 0xff);
    c[0x147] = static_cast<char>(acs_control >> 8);
  }
  return c;
}

const NodeFact* find(const std::vector<NodeFact>& facts, const std::string& key) {
  for (const NodeFact& f : facts) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

std::string value(const std::vector<NodeFact>& facts, const std::string& key) {
  const NodeFact* f = find(facts, key);
  return f == nullptr ? "(absent)" : f->value;
}

std::string source(const std::vector<NodeFact>& facts, const std::string& key) {
  const NodeFact* f = find(facts, key);
  return f == nullptr ? "(absent)" : f->source;
}

// A GPU node: GPU 0000:03:00.0 and NIC 0000:04:00.0 below one PCIe switch.
NodeInventory gpu_node() {
  NodeInventory n;
  GpuInfo g;
  g.index = 0;
  g.name = "NVIDIA H100 80GB HBM3";
  g.pci_bus_id = "0000:03:00.0";
  n.gpus = {g};
  n.nics = {NicInfo{"mlx5_0", "infiniband", 0, "0000:04:00.0"}, NicInfo{"eth0", "ethernet", 0, ""}};
  return n;
}

void pci_tree(const fs::path& root, unsigned switch_port_acs) {
  const std::string rootport = "/sys/devices/pci0000:00/0000:00:01.0";
  const std::string up = rootport + "/0000:01:00.0";
  write(root, rootport + "/config", pci_config(4096, 0));
  write(root, up + "/config", pci_config(4096, 0));
  write(root, up + "/0000:02:00.0/config", pci_config(4096, switch_port_acs));
  write(root, up + "/0000:02:01.0/config", pci_config(4096, 0));
  write(root, up + "/0000:02:00.0/0000:03:00.0/config", pci_config(4096, 0));
  write(root, up + "/0000:02:01.0/0000:04:00.0/config", pci_config(4096, 0));
  fs::create_directories(root / "sys/bus/pci/devices");
  fs::create_symlink("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0",
                     root / "sys/bus/pci/devices/0000:03:00.0");
  fs::create_symlink("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0",
                     root / "sys/bus/pci/devices/0000:04:00.0");
}

TEST(NodeFacts, ReadsEveryFactOfAFullNode) {
  TempDir dir;
  const fs::path& root = dir.path();
  write(root, "/sys/class/dmi/id/product_name", "DGXH100\n");
  write(root, "/sys/class/dmi/id/bios_version", "1.5.2\n");
  write(root, "/proc/meminfo", "MemTotal: 2113464000 kB\nHugePages_Total:     512\nHugepagesize:       2048 kB\n");
  write(root, "/sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
  write(root, "/sys/kernel/mm/transparent_hugepage/defrag", "always defer [madvise] never\n");
  for (int c = 0; c < 4; ++c) {
    write(root, "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/cpufreq/scaling_governor",
          c < 3 ? "performance\n" : "powersave\n");
  }
  write(root, "/sys/devices/system/cpu/cpufreq/policy0/x", "");  // not a cpuN folder
  write(root, "/sys/class/infiniband/mlx5_0/board_id", "MT_0000000838\n");
  write(root, "/sys/class/infiniband/mlx5_0/fw_ver", "28.39.1002\n");
  write(root, "/sys/class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n");
  write(root, "/sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
  write(root, "/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  write(root, "/sys/class/net/eth0/speed", "25000\n");
  write(root, "/proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build\n");
  fs::create_directories(root / "sys/module/nvidia");
  write(root, "/etc/nccl.conf", "# site defaults\nNCCL_ALGO=Tree\nNCCL_PROTO = Simple\nnot a setting\n");
  write(root, "/run/.containerenv", "engine=\"podman-4.3.1\"\nname=\"train\"\nimage=\"nvcr.io/nvidia/pytorch:25.01-py3\"\n");
  write(root, "/etc/slurm/slurm.conf", "ClusterName=c\n");
  pci_tree(root, 0x0c);  // P2P request and completion redirect on the GPU's switch port

  FactSource src;
  src.root = root;
  src.env = {{"NCCL_ALGO", "Ring"},          {"NCCL_DEBUG", "WARN"},
             {"HOME", "/root"},              {"SLURM_JOB_ID", "42"},
             {"CUDA_VISIBLE_DEVICES", "0,1"}, {"SLURM_JOB_GPUS", "0,1,2,3"}};
  const std::vector<NodeFact> f = read_node_facts(src, gpu_node());

  EXPECT_EQ(value(f, "system.product"), "DGXH100");
  EXPECT_EQ(value(f, "bios.version"), "1.5.2");
  EXPECT_EQ(value(f, "hugepages.total"), "512");
  EXPECT_EQ(value(f, "hugepages.size_kB"), "2048");
  EXPECT_EQ(value(f, "thp.enabled"), "madvise");
  EXPECT_EQ(value(f, "thp.defrag"), "madvise");
  EXPECT_EQ(value(f, "cpu.governor"), "performance x3, powersave x1");
  EXPECT_EQ(value(f, "nic.mlx5_0.model"), "MT_0000000838");
  EXPECT_EQ(value(f, "nic.mlx5_0.fw"), "28.39.1002");
  EXPECT_EQ(value(f, "nic.mlx5_0.port1.rate"), "400 Gb/sec (4X NDR)");
  EXPECT_EQ(value(f, "nic.mlx5_0.port1.link_layer"), "InfiniBand");
  EXPECT_EQ(value(f, "nic.mlx5_0.port1.state"), "4: ACTIVE");
  EXPECT_EQ(value(f, "net.eth0.speed"), "25000 Mb/s");
  EXPECT_EQ(value(f, "gpu.kernel_module"), "open");
  EXPECT_EQ(value(f, "gdr.nvidia_peermem"), "not loaded");
  // The environment wins over /etc/nccl.conf, as NCCL reads them; the file's other line stays.
  EXPECT_EQ(value(f, "nccl.NCCL_ALGO"), "Ring");
  EXPECT_EQ(source(f, "nccl.NCCL_ALGO"), "environment");
  EXPECT_EQ(value(f, "nccl.NCCL_PROTO"), "Simple");
  EXPECT_EQ(source(f, "nccl.NCCL_PROTO"), "/etc/nccl.conf");
  EXPECT_EQ(value(f, "nccl.NCCL_DEBUG"), "WARN");
  EXPECT_EQ(value(f, "container.runtime"), "podman");
  EXPECT_EQ(value(f, "container.image"), "nvcr.io/nvidia/pytorch:25.01-py3");
  EXPECT_EQ(value(f, "slurm.topology_conf"), "absent");
  EXPECT_EQ(source(f, "slurm.topology_conf"), "/etc/slurm/topology.conf");
  EXPECT_EQ(value(f, "visible.cuda_devices"), "0,1");
  EXPECT_EQ(value(f, "visible.slurm_gpus"), "0,1,2,3");
  EXPECT_EQ(value(f, "pcie.acs"), "enabled on 0000:02:00.0 (above GPU 0000:03:00.0)");
  // Sorted by key.
  for (std::size_t i = 1; i < f.size(); ++i) EXPECT_LE(f[i - 1].key, f[i].key);
}

TEST(NodeFacts, MissingFilesAreUnknownWithTheReasonAndAbsentThingsAreLeftOut) {
  TempDir dir;
  FactSource src;
  src.root = dir.path();
  NodeInventory n;  // no GPU, no NIC
  const std::vector<NodeFact> f = read_node_facts(src, n);
  EXPECT_THAT(value(f, "bios.version"), StartsWith("unknown (No such file or directory reading "));
  EXPECT_THAT(value(f, "hugepages.total"), StartsWith("unknown ("));
  EXPECT_THAT(value(f, "thp.enabled"), StartsWith("unknown ("));
  EXPECT_THAT(value(f, "cpu.governor"), HasSubstr("no CPUs listed"));
  EXPECT_EQ(value(f, "gpu.kernel_module"), "none");
  EXPECT_EQ(value(f, "container.runtime"), "none");
  EXPECT_EQ(value(f, "container.image"), "(absent)");
  EXPECT_EQ(value(f, "pcie.acs"), "(absent)");             // no GPU: not applicable
  EXPECT_EQ(value(f, "slurm.topology_conf"), "(absent)");  // not under Slurm
  EXPECT_EQ(value(f, "nccl.NCCL_ALGO"), "(absent)");
  EXPECT_EQ(value(f, "visible.cuda_devices"), "(not set)");
  for (const NodeFact& x : f) EXPECT_FALSE(x.key.starts_with("nic.")) << x.key;
  EXPECT_TRUE(is_unknown(value(f, "bios.version")));
  EXPECT_FALSE(is_unknown(value(f, "gpu.kernel_module")));
}

TEST(NodeFacts, CpusWithoutCpufreqSayWhoSetsTheFrequency) {
  TempDir dir;
  write(dir.path(), "/sys/devices/system/cpu/cpu0/online", "1\n");
  FactSource src;
  src.root = dir.path();
  EXPECT_THAT(value(read_node_facts(src, NodeInventory{}), "cpu.governor"),
              HasSubstr("the firmware or the hypervisor sets the frequency"));
}

TEST(NodeFacts, AcsDisabledOrUnreadable) {
  {
    TempDir dir;
    pci_tree(dir.path(), 0x1);  // source validation only: no redirect
    FactSource src;
    src.root = dir.path();
    EXPECT_EQ(value(read_node_facts(src, gpu_node()), "pcie.acs"), "disabled on 4 bridges");
  }
  {
    // Without root the kernel gives 64 bytes of configuration space: no extended capabilities.
    TempDir dir;
    pci_tree(dir.path(), 0xc);
    for (const auto& e : fs::recursive_directory_iterator(dir.path() / "sys/devices")) {
      if (e.path().filename() == "config") std::ofstream(e.path(), std::ios::binary) << std::string(64, '\0');
    }
    FactSource src;
    src.root = dir.path();
    EXPECT_THAT(value(read_node_facts(src, gpu_node()), "pcie.acs"),
                HasSubstr("4 of 4 bridges' configuration space unreadable: run the audit as root"));
  }
}

TEST(NodeFacts, ContainersByTheirMarkers) {
  const auto runtime_of = [](const std::map<std::string, std::string>& env, const std::string& marker) {
    TempDir dir;
    if (!marker.empty()) write(dir.path(), marker, "");
    FactSource src;
    src.root = dir.path();
    src.env = env;
    const auto f = read_node_facts(src, NodeInventory{});
    return value(f, "container.runtime") + " | " + value(f, "container.image");
  };
  EXPECT_EQ(runtime_of({}, "/.dockerenv"),
            "docker | unknown (the runtime does not tell the container its image)");
  EXPECT_EQ(runtime_of({{"APPTAINER_CONTAINER", "/images/pt.sif"}}, ""), "apptainer | /images/pt.sif");
  EXPECT_EQ(runtime_of({{"SINGULARITY_CONTAINER", "/images/pt.sif"}}, ""),
            "singularity | /images/pt.sif");
  EXPECT_EQ(runtime_of({{"PYXIS_CONTAINER_IMAGE", "nvcr.io#nvidia/pytorch:25.01-py3"}}, ""),
            "enroot | nvcr.io#nvidia/pytorch:25.01-py3");
  EXPECT_EQ(runtime_of({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}, ""),
            "kubernetes | unknown (the runtime does not tell the container its image)");
  EXPECT_EQ(runtime_of({}, "/run/.containerenv"),
            "podman | unknown (/run/.containerenv names no image (rootless Podman))");
  EXPECT_EQ(runtime_of({}, ""), "none | (absent)");
}

TEST(NodeFacts, NcclConfFileAndHomeFileAreRead) {
  TempDir dir;
  write(dir.path(), "/opt/site/nccl.conf", "NCCL_IB_HCA=mlx5\n");
  write(dir.path(), "/home/u/.nccl.conf", "NCCL_MIN_NCHANNELS=4\n");
  FactSource src;
  src.root = dir.path();
  src.env = {{"NCCL_CONF_FILE", "/opt/site/nccl.conf"}, {"HOME", "/home/u"}};
  auto f = read_node_facts(src, NodeInventory{});
  EXPECT_EQ(value(f, "nccl.NCCL_IB_HCA"), "mlx5");
  EXPECT_EQ(value(f, "nccl.NCCL_MIN_NCHANNELS"), "(absent)");  // NCCL_CONF_FILE replaces ~/.nccl.conf
  src.env = {{"HOME", "/home/u"}};
  f = read_node_facts(src, NodeInventory{});
  EXPECT_EQ(value(f, "nccl.NCCL_MIN_NCHANNELS"), "4");
  EXPECT_EQ(source(f, "nccl.NCCL_MIN_NCHANNELS"), "/home/u/.nccl.conf");
}

TEST(NodeFacts, OverrideSetsAFixedFieldOrAFact) {
  NodeInventory n;
  n.kernel = "6.8.0-45";
  n.cores = 64;
  n.facts = {{"bios.version", "1.5.2", "/sys/class/dmi/id/bios_version"}};
  override_inventory_field(n, "kernel", "6.8.0-31");
  override_inventory_field(n, "cpu.cores", "63");
  override_inventory_field(n, "bios.version", "1.4.0");
  override_inventory_field(n, "nic.mlx5_0.fw", "28.0");
  EXPECT_EQ(n.kernel, "6.8.0-31");
  EXPECT_EQ(n.cores, 63);
  ASSERT_EQ(n.facts.size(), 2u);
  EXPECT_EQ(n.facts[0].value, "1.4.0");
  EXPECT_EQ(n.facts[0].source, "--inject drift");
  EXPECT_EQ(n.facts[1].key, "nic.mlx5_0.fw");
  bool saw_kernel = false;
  for (const InventoryField& f : inventory_fields(n)) {
    if (f.key == "kernel") {
      saw_kernel = true;
      EXPECT_EQ(f.value, "6.8.0-31");
    }
  }
  EXPECT_TRUE(saw_kernel);
  EXPECT_EQ(inventory_field_names().size(), inventory_fields(n).size());
}

}  // namespace
}  // namespace shakedown
