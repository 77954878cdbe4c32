// The audit's checks on in-memory inventories (one per node) against a run's config and
// platform: healthy nodes pass and say what was covered; each planted problem is named, on the
// node that has it, once per group of nodes rather than once per node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/audit.hpp"
#include "record/schema.hpp"

namespace shakedown {
namespace {

using ::testing::HasSubstr;

RunFacts run_facts(int nodes) {
  RunFacts f;
  f.meta.world_size = nodes;
  f.meta.node_count = nodes;
  f.meta.status = schema::kStatusComplete;
  f.config.phases = {"inventory"};
  for (int n = 0; n < nodes; ++n) {
    RankInfo r;
    r.rank = n;
    r.node_index = n;
    r.hostname = "gpu-" + std::to_string(n);
    f.ranks.push_back(r);
  }
  return f;
}

void set(NodeInventory& n, const std::string& key, const std::string& value) {
  for (NodeFact& f : n.facts) {
    if (f.key == key) {
      f.value = value;
      return;
    }
  }
  n.facts.push_back({key, value, "test"});
}

// An HGX H100 node as the readers would describe it.
NodeInventory h100_node(int index) {
  NodeInventory n;
  n.node_index = index;
  n.hostname = "gpu-" + std::to_string(index);
  n.cpu_model = "Intel Xeon Platinum 8480C";
  n.sockets = 2;
  n.cores = 112;
  n.pus = 224;
  n.numa_nodes = 2;
  n.memory_bytes = 2015ull << 30;
  n.os = "Ubuntu 22.04.4 LTS";
  n.kernel = "5.15.0-105-generic";
  n.gpu_driver = "580.95.05";
  n.cuda_driver_version = "13.0";
  n.cuda_runtime_version = "13.0";
  n.nccl_version = "2.28.9";
  n.mpi_version = "Open MPI v4.1.4";
  n.ucx_version = "1.13.1";
  for (int g = 0; g < 8; ++g) {
    GpuInfo gpu;
    gpu.index = g;
    gpu.name = "NVIDIA H100 80GB HBM3";
    gpu.memory_bytes = 85520809984ull;
    gpu.pci_bus_id = "0000:1" + std::to_string(g) + ":00.0";
    n.gpus.push_back(gpu);
    n.nics.push_back({"mlx5_" + std::to_string(g), "infiniband", g / 4, "0000:2" + std::to_string(g) + ":00.0"});
    const std::string nic = "nic.mlx5_" + std::to_string(g);
    set(n, nic + ".fw", "28.39.1002");
    set(n, nic + ".port1.rate", "400 Gb/sec (4X NDR)");
    set(n, nic + ".port1.state", "4: ACTIVE");
    set(n, nic + ".port1.link_layer", "InfiniBand");
    set(n, "gpu." + std::to_string(g) + ".compute_capability", "9.0");
    set(n, "gpu." + std::to_string(g) + ".mig", "disabled");
  }
  set(n, "bios.version", "1.5.2");
  set(n, "build.cuda_runtime", "13.0");
  set(n, "build.nccl", "2.28.9");
  set(n, "build.cuda_archs", "90");
  set(n, "cublaslt.version", "13.0.2");
  set(n, "cpu.governor", "performance");
  set(n, "gpu.kernel_module", "open");
  set(n, "gdr.nvidia_peermem", "not loaded");
  set(n, "gpu.pci_count", "8");
  set(n, "pcie.acs", "disabled on 16 bridges");
  set(n, "container.runtime", "none");
  set(n, "visible.cuda_devices", "(not set)");
  return n;
}

std::vector<NodeInventory> cluster(int nodes) {
  std::vector<NodeInventory> out;
  for (int n = 0; n < nodes; ++n) out.push_back(h100_node(n));
  return out;
}

std::vector<Finding> of(const std::vector<Finding>& all, const std::string& check) {
  std::vector<Finding> out;
  for (const Finding& f : all) {
    if (f.check == check) out.push_back(f);
  }
  return out;
}

// The one finding of `check` (the test fails when there is not exactly one).
Finding one(const std::vector<Finding>& all, const std::string& check) {
  const std::vector<Finding> found = of(all, check);
  EXPECT_EQ(found.size(), 1u) << check;
  return found.empty() ? Finding{} : found.front();
}

TEST(Audit, HealthyNodesPassAndSayWhatWasCovered) {
  RunFacts facts = run_facts(4);
  facts.platform = find_platform("h100-sxm");
  const auto findings = audit_findings(cluster(4), facts);
  for (const Finding& f : findings) {
    EXPECT_EQ(f.status, CheckStatus::kPass) << f.check << ": " << f.message;
  }
  EXPECT_THAT(one(findings, "audit.compatibility").message, HasSubstr("on 32 GPUs of 4 nodes"));
  EXPECT_THAT(one(findings, "audit.drift").message, HasSubstr("the same on all 4 nodes"));
  EXPECT_THAT(one(findings, "audit.visibility").message,
              HasSubstr("8 per node as platform h100-sxm expects"));
  EXPECT_THAT(one(findings, "audit.nics").message,
              HasSubstr("32 ports ACTIVE at 400 Gb/s or more (platform h100-sxm)"));
  EXPECT_THAT(one(findings, "audit.container").message, HasSubstr("4 nodes on the bare host"));
  EXPECT_EQ(one(findings, "audit.coverage").status, CheckStatus::kPass);
}

TEST(Audit, DriftNamesTheMajorityAndTheNodeThatDiffers) {
  auto nodes = cluster(8);
  nodes[5].gpu_driver = "570.124.06";
  const auto findings = audit_findings(nodes, run_facts(8));
  const Finding f = one(findings, "audit.drift");
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(f.subject, "gpu.driver");
  EXPECT_EQ(f.node, 5);
  EXPECT_EQ(f.host, "gpu-5");
  EXPECT_EQ(f.message, "gpu.driver: 7 nodes 580.95.05, node 5 (host gpu-5) 570.124.06");
}

TEST(Audit, DriftOnManyNodesIsOneFindingPerValueNotPerNode) {
  auto nodes = cluster(200);
  for (int n : {17, 42, 99}) nodes[static_cast<std::size_t>(n)].kernel = "5.15.0-91-generic";
  nodes[150].kernel = "6.5.0-1";
  const auto drift = of(audit_findings(nodes, run_facts(200)), "audit.drift");
  ASSERT_EQ(drift.size(), 2u);
  EXPECT_EQ(drift[0].subject_kind, "field");
  EXPECT_EQ(drift[0].value, 3);
  EXPECT_EQ(drift[0].host, "");  // several nodes: not one host to drain
  EXPECT_THAT(drift[0].message,
              HasSubstr("kernel: 196 nodes 5.15.0-105-generic, node 17 (host gpu-17), node 42 "
                        "(host gpu-42), node 99 (host gpu-99) 5.15.0-91-generic"));
  EXPECT_EQ(drift[1].host, "gpu-150");
}

TEST(Audit, DriftIgnoresWhatDiffersByNatureAndSmallMemoryDifferences) {
  auto nodes = cluster(4);
  set(nodes[1], "visible.cuda_devices", "4,5,6,7");
  nodes[2].memory_bytes -= 3ull << 30;  // 0.15% less: firmware reservations
  EXPECT_EQ(one(audit_findings(nodes, run_facts(4)), "audit.drift").status, CheckStatus::kPass);
  nodes[3].memory_bytes = 1007ull << 30;  // half the memory: a DIMM gone
  const Finding f = one(audit_findings(nodes, run_facts(4)), "audit.drift");
  EXPECT_EQ(f.subject, "memory.GiB");
  EXPECT_EQ(f.node, 3);
}

TEST(Audit, DriftWithUnknownValuesAndMissingFacts) {
  auto nodes = cluster(3);
  set(nodes[0], "bios.version", "unknown (Permission denied reading /sys/class/dmi/id/bios_version)");
  set(nodes[2], "nccl.NCCL_ALGO", "Ring");  // set on one node only
  const auto drift = of(audit_findings(nodes, run_facts(3)), "audit.drift");
  ASSERT_EQ(drift.size(), 1u);  // an unknown BIOS is not drift; NCCL_ALGO on one node is
  EXPECT_EQ(drift[0].subject, "nccl.NCCL_ALGO");
  EXPECT_EQ(drift[0].status, CheckStatus::kWarn);  // a setting
  EXPECT_THAT(drift[0].message, HasSubstr("2 nodes (not set), node 2 (host gpu-2) Ring"));
}

TEST(Audit, TwoNodesThatDifferHaveNoMajorityAndNeitherIsNamed) {
  // Whichever node drifted: the run cannot tell which, so it names (and drains) neither.
  for (const std::size_t off : {0u, 1u}) {
    auto nodes = cluster(2);
    const std::string kernel = nodes[off].kernel;
    nodes[off].kernel = "6.8.0-31";
    const Finding f = one(audit_findings(nodes, run_facts(2)), "audit.drift");
    EXPECT_EQ(f.status, CheckStatus::kFail);
    EXPECT_EQ(f.node, -1);
    EXPECT_EQ(f.host, "");
    EXPECT_THAT(f.message, HasSubstr("6.8.0-31"));
    EXPECT_THAT(f.message, HasSubstr(kernel));
    EXPECT_THAT(f.message, HasSubstr("no majority: this run cannot tell which is off"));
  }
}

TEST(Audit, NodesWithoutGpusSkipCompatibilityRatherThanPass) {
  auto nodes = cluster(2);
  for (NodeInventory& n : nodes) {
    n.gpus.clear();
    set(n, "gpu.pci_count", "0");
  }
  const Finding f = one(audit_findings(nodes, run_facts(2)), "audit.compatibility");
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_THAT(f.message, HasSubstr("no node has a GPU (2 nodes)"));
}

TEST(Audit, OneNodeHasNothingToDriftFrom) {
  EXPECT_EQ(one(audit_findings(cluster(1), run_facts(1)), "audit.drift").status, CheckStatus::kSkip);
}

TEST(Audit, CudaDriverAgainstTheRuntime) {
  auto status_for = [](const std::string& driver_cuda, const std::string& runtime,
                       const std::string& driver) {
    auto nodes = cluster(1);
    nodes[0].cuda_driver_version = driver_cuda;
    nodes[0].cuda_runtime_version = runtime;
    nodes[0].gpu_driver = driver;
    const auto c = of(audit_findings(nodes, run_facts(1)), "audit.compatibility");
    return c.empty() ? std::string("none") : std::string(to_string(c.front().status)) + ": " + c.front().message;
  };
  EXPECT_THAT(status_for("13.0", "13.0", "580.95.05"), HasSubstr("pass: 1 node compatible"));
  EXPECT_THAT(status_for("13.1", "13.0", "590.1"), HasSubstr("pass"));
  EXPECT_THAT(status_for("12.8", "13.0", "570.124.06"), HasSubstr("fail: node 0 (host gpu-0): the driver supports CUDA 12.8, older than the CUDA 13.0 runtime"));
  EXPECT_THAT(status_for("12.2", "12.8", "535.104.05"), HasSubstr("warn: node 0 (host gpu-0): the driver supports CUDA 12.2, the runtime is 12.8: it runs by minor version compatibility"));
  EXPECT_THAT(status_for("12.0", "12.8", "520.61.05"), HasSubstr("fail: node 0 (host gpu-0): driver 520.61.05 is below 525.60.13"));
  auto nodes = cluster(1);
  nodes[0].cuda_driver_version = "unavailable (no NVIDIA driver installed)";
  const Finding f = one(audit_findings(nodes, run_facts(1)), "audit.compatibility");
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_THAT(f.message, HasSubstr("has NVIDIA GPUs but no usable driver"));
}

TEST(Audit, NcclLoadedAgainstBuiltAndMinimums) {
  RunFacts facts = run_facts(1);
  auto nodes = cluster(1);
  nodes[0].nccl_version = "2.21.5";
  Finding f = one(audit_findings(nodes, facts), "audit.compatibility");
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_THAT(f.message, HasSubstr("NCCL 2.21.5 is loaded, older than the 2.28.9"));
  nodes[0].nccl_version = "3.0.1";
  f = one(audit_findings(nodes, facts), "audit.compatibility");
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_THAT(f.message, HasSubstr("another major version"));
  nodes[0].nccl_version = "2.28.9";
  facts.config.audit.nccl_min = "2.29";
  facts.config.audit.driver_min = "580.95.05";
  EXPECT_THAT(one(audit_findings(nodes, facts), "audit.compatibility").message,
              HasSubstr("older than audit.nccl_min's 2.29"));
  facts.config.audit.nccl_min = "";
  nodes[0].gpu_driver = "580.82.07";
  EXPECT_THAT(one(audit_findings(nodes, facts), "audit.compatibility").message,
              HasSubstr("driver 580.82.07 is older than audit.driver_min's 580.95.05"));
}

TEST(Audit, ComputeCapabilityFp8AndMig) {
  RunFacts facts = run_facts(1);
  auto nodes = cluster(1);
  set(nodes[0], "gpu.3.compute_capability", "8.0");
  auto c = of(audit_findings(nodes, facts), "audit.compatibility");
  ASSERT_EQ(c.size(), 2u);  // no FP8 (warn) and not in the build's architectures (fail)
  EXPECT_THAT(c[0].message, HasSubstr("GPU 3 (NVIDIA H100 80GB HBM3) has compute capability 8.0: no FP8"));
  EXPECT_EQ(c[1].status, CheckStatus::kFail);
  EXPECT_THAT(c[1].message, HasSubstr("not among the build's architectures (90): shakedown's kernels cannot run on it"));
  set(nodes[0], "gpu.3.compute_capability", "10.0");
  c = of(audit_findings(nodes, facts), "audit.compatibility");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, CheckStatus::kWarn);
  EXPECT_THAT(c[0].message, HasSubstr("compiled from PTX at first use"));
  set(nodes[0], "gpu.3.compute_capability", "9.0");
  set(nodes[0], "gpu.6.mig", "enabled");
  c = of(audit_findings(nodes, facts), "audit.compatibility");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, CheckStatus::kFail);
  EXPECT_THAT(c[0].message, HasSubstr("GPU 6 (NVIDIA H100 80GB HBM3) has MIG enabled"));
  facts.config.audit.allow_mig = true;
  EXPECT_EQ(one(audit_findings(nodes, facts), "audit.compatibility").status, CheckStatus::kPass);
}

TEST(Audit, SettingsThatCostBandwidthAreGroupedAcrossNodes) {
  RunFacts facts = run_facts(3);
  auto nodes = cluster(3);
  for (auto& n : nodes) n.facts.push_back({"nccl.NCCL_ALGO", "Ring", "environment"});
  set(nodes[1], "pcie.acs", "enabled on 0000:02:00.0 (above GPU 0000:03:00.0)");
  set(nodes[2], "gdr.nvidia_peermem", "not loaded");
  set(nodes[2], "gpu.kernel_module", "proprietary");
  set(nodes[0], "cpu.governor", "powersave");
  set(nodes[0], "nic.mlx5_0.port1.link_layer", "Ethernet");
  auto s = of(audit_findings(nodes, facts), "audit.settings");
  ASSERT_EQ(s.size(), 5u);
  std::string all;
  for (const Finding& f : s) {
    EXPECT_EQ(f.status, CheckStatus::kWarn);
    all += f.message + "\n";
  }
  EXPECT_THAT(all, HasSubstr("every node (3 nodes): NCCL_ALGO=Ring is set (environment)"));
  EXPECT_THAT(all, HasSubstr("node 1 (host gpu-1): PCIe ACS is enabled on 0000:02:00.0"));
  EXPECT_THAT(all, HasSubstr("node 2 (host gpu-2): GPUDirect RDMA is not available"));
  EXPECT_THAT(all, HasSubstr("node 0 (host gpu-0): CPU frequency governor powersave"));
  EXPECT_THAT(all, HasSubstr("node 0 (host gpu-0): RoCE ports (link layer Ethernet) without NCCL_IB_GID_INDEX"));
  facts.config.audit.allow_nccl = {"NCCL_ALGO"};
  EXPECT_EQ(of(audit_findings(nodes, facts), "audit.settings").size(), 4u);
}

TEST(Audit, SlurmWithoutTopologyConf) {
  auto nodes = cluster(2);
  for (auto& n : nodes) n.facts.push_back({"slurm.topology_conf", "absent", "/etc/slurm/topology.conf"});
  const Finding f = one(audit_findings(nodes, run_facts(2)), "audit.settings");
  EXPECT_THAT(f.message, HasSubstr("Slurm has no topology.conf (/etc/slurm/topology.conf)"));
}

TEST(Audit, VisibilityAgainstThePciBusSlurmAndTheExpectedCount) {
  RunFacts facts = run_facts(3);
  auto nodes = cluster(3);
  nodes[1].gpus.pop_back();  // CUDA sees 7, the bus has 8
  nodes[1].gpu_note = "";
  set(nodes[2], "visible.slurm_gpus", "4 GPU(s)");
  auto v = of(audit_findings(nodes, facts), "audit.visibility");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].status, CheckStatus::kFail);
  EXPECT_EQ(v[0].host, "gpu-1");
  EXPECT_THAT(v[0].message, HasSubstr("CUDA sees 7 GPUs of the 8 NVIDIA GPUs on the PCI bus"));
  EXPECT_EQ(v[1].status, CheckStatus::kWarn);
  EXPECT_THAT(v[1].message, HasSubstr("Slurm gave the job 4 GPU(s)"));
  // Hidden on purpose: not a lost GPU.
  set(nodes[1], "visible.cuda_devices", "0,1,2,3,4,5,6");
  set(nodes[2], "visible.slurm_gpus", "8 GPU(s)");
  EXPECT_EQ(one(audit_findings(nodes, facts), "audit.visibility").status, CheckStatus::kPass);
  facts.config.topology.expected_gpus_per_node = 16;
  v = of(audit_findings(nodes, facts), "audit.visibility");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_THAT(v[0].message, HasSubstr("has 8 GPUs, expected 16 (topology.expected_gpus_per_node)"));
}

TEST(Audit, NicPortsDownOrSlow) {
  RunFacts facts = run_facts(2);
  facts.config.audit.nic_rate_gbps = 400;
  auto nodes = cluster(2);
  set(nodes[0], "nic.mlx5_3.port1.state", "1: DOWN");
  set(nodes[1], "nic.mlx5_6.port1.rate", "200 Gb/sec (4X HDR)");
  auto n = of(audit_findings(nodes, facts), "audit.nics");
  ASSERT_EQ(n.size(), 2u);
  EXPECT_THAT(n[0].message, HasSubstr("node 0 (host gpu-0): mlx5_3.port1 is 1: DOWN, not ACTIVE"));
  EXPECT_THAT(n[1].message, HasSubstr("mlx5_6.port1 trained at 200 Gb/sec (4X HDR), below 400 Gb/s (audit.nic_rate_gbps)"));
  EXPECT_EQ(n[1].host, "gpu-1");
}

TEST(Audit, ContainerImageRequired) {
  RunFacts facts = run_facts(2);
  facts.config.audit.image = "pytorch:25.01";
  auto nodes = cluster(2);
  set(nodes[0], "container.runtime", "enroot");
  set(nodes[0], "container.image", "nvcr.io#nvidia/pytorch:25.01-py3");
  const Finding f = one(audit_findings(nodes, facts), "audit.container");
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(f.node, 1);
  EXPECT_THAT(f.message, HasSubstr("runs on the bare host, not in the image audit.image names"));
}

TEST(Audit, CoverageIsNoPassWhenNothingWasRead) {
  auto nodes = cluster(2);
  for (auto& n : nodes) {
    for (NodeFact& f : n.facts) f.value = "unknown (Permission denied)";
  }
  EXPECT_EQ(one(audit_findings(nodes, run_facts(2)), "audit.coverage").status, CheckStatus::kFail);
  for (auto& n : nodes) n.facts.clear();
  EXPECT_EQ(one(audit_findings(nodes, run_facts(2)), "audit.coverage").status, CheckStatus::kSkip);
  EXPECT_EQ(one(audit_findings({}, run_facts(0)), "audit.coverage").status, CheckStatus::kFail);
}

TEST(Audit, VersionsCompareNumerically) {
  EXPECT_EQ(compare_versions("570.124.06", "570.86"), 1);
  EXPECT_EQ(compare_versions("2.21", "2.21.0"), 0);
  EXPECT_EQ(compare_versions("12.8", "13.0"), -1);
  EXPECT_EQ(compare_versions("v4.1.4", "4.1.5"), -1);
  EXPECT_FALSE(compare_versions("unknown", "1.0").has_value());
}

}  // namespace
}  // namespace shakedown
