#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "topology/plan.hpp"
#include "text_support.hpp"

namespace shakedown {
namespace {

const std::string kData = std::string(SHAKEDOWN_TEST_DATA) + "/topology/";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

using testing_support::contains;

bool any_note(const Plan& plan, const std::string& part) {
  for (const auto& n : plan.notes) {
    if (contains(n, part)) return true;
  }
  return false;
}

std::string usage_error_of(const PlanRequest& req) {
  try {
    (void)make_plan(req);
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UsageError";
  return {};
}

TEST(TopologyPlan, DgxLike2x8MatchesHandWrittenRankfile) {
  PlanRequest req;
  req.nodes = 2;
  req.ranks_per_node = 8;
  req.topology_xml = kData + "dgx_like.xml";
  const Plan plan = make_plan(req);
  EXPECT_EQ(plan.rankfile, read_text(kData + "dgx_like_2x8.rankfile"));
  EXPECT_EQ(plan.cores_per_rank, 6);
  // GPU g is the g-th in PCI bus order: CUDA must number them the same way.
  EXPECT_EQ(plan.mpirun_command,
            "mpirun -np 16 --host node0:8,node1:8 -x CUDA_DEVICE_ORDER=PCI_BUS_ID "
            "--map-by ppr:8:node:PE=6 --bind-to core --report-bindings shakedown run");
  EXPECT_EQ(plan.mpirun_rankfile_command,
            "mpirun -np 16 --host node0:8,node1:8 -x CUDA_DEVICE_ORDER=PCI_BUS_ID -rf rankfile "
            "--report-bindings shakedown run");
  EXPECT_EQ(plan.srun_options,
            "--nodes=2 --ntasks-per-node=8 --cpus-per-task=12 --cpu-bind=cores --gpus-per-node=8 "
            "--export=ALL,CUDA_DEVICE_ORDER=PCI_BUS_ID --mpi=pmix");
  EXPECT_TRUE(any_note(plan, "binds the same cores as the rankfile"));
  EXPECT_TRUE(any_note(plan, "CUDA_DEVICE_ORDER=PCI_BUS_ID"));
}

// Each binding, checked against the XML layout: core c has PUs c and c+48; NUMA n has cores
// 12n..12n+11; the NIC on the same PCIe switch as GPU g is mlx5_g.
TEST(TopologyPlan, DgxLike2x8BindingsSitNextToTheirGpu) {
  PlanRequest req;
  req.nodes = 2;
  req.ranks_per_node = 8;
  req.topology_xml = kData + "dgx_like.xml";
  const Plan plan = make_plan(req);
  ASSERT_EQ(plan.bindings.size(), 8u);
  const char* gpus[] = {"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                        "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"};
  for (int g = 0; g < 8; ++g) {
    const auto& b = plan.bindings[static_cast<std::size_t>(g)];
    const int first = 6 * g;
    EXPECT_EQ(b.gpu, g);
    EXPECT_EQ(b.gpu_pci_bus_id, gpus[g]);
    EXPECT_EQ(b.cpus, std::to_string(first) + "-" + std::to_string(first + 5) + "," +
                          std::to_string(first + 48) + "-" + std::to_string(first + 53));
    EXPECT_EQ(b.numa, std::to_string(g / 2));
    EXPECT_EQ(b.nic, "mlx5_" + std::to_string(g));
  }
}

TEST(TopologyPlan, DgxLike4x4WithHostfileMatchesHandWrittenRankfile) {
  PlanRequest req;
  req.nodes = 4;
  req.ranks_per_node = 4;
  req.hosts = read_hostfile(kData + "hosts_4.txt");
  req.topology_xml = kData + "dgx_like.xml";
  const Plan plan = make_plan(req);
  EXPECT_EQ(plan.rankfile, read_text(kData + "dgx_like_4x4.rankfile"));
  EXPECT_EQ(plan.srun_options,
            "--nodes=4 --ntasks-per-node=4 --cpus-per-task=12 --cpu-bind=cores --gpus-per-node=4 "
            "--export=ALL,CUDA_DEVICE_ORDER=PCI_BUS_ID --mpi=pmix "
            "--nodelist=gpu-a01,gpu-a02,gpu-b01,gpu-b02");
  EXPECT_TRUE(any_note(plan, "the other 4 stay idle")) << "GPUs 4-7 unused must be said";
  EXPECT_TRUE(any_note(plan, "24 of 48 cores stay idle"));
}

TEST(TopologyPlan, CpuOnly1x6MatchesHandWrittenRankfile) {
  PlanRequest req;
  req.ranks_per_node = 6;
  req.topology_xml = kData + "cpu_2x2x8.xml";
  const Plan plan = make_plan(req);
  EXPECT_EQ(plan.rankfile, read_text(kData + "cpu_2x2x8_1x6.rankfile"));
  EXPECT_EQ(plan.srun_options,
            "--nodes=1 --ntasks-per-node=6 --cpus-per-task=8 --cpu-bind=cores --mpi=pmix");
  // No GPU: nothing to order.
  EXPECT_EQ(plan.mpirun_rankfile_command,
            "mpirun -np 6 --host node0:6 -rf rankfile --report-bindings shakedown run");
  EXPECT_FALSE(any_note(plan, "CUDA_DEVICE_ORDER"));
  // ppr would give local rank 5 cores 20-23; the NUMA-aware plan gives it 24-27.
  EXPECT_TRUE(any_note(plan, "NOT the cores nearest"));
  EXPECT_EQ(plan.bindings[5].cpus, "48-55");  // synthetic numbering: core c has PUs 2c, 2c+1
  EXPECT_EQ(plan.bindings[5].numa, "3");
}

TEST(TopologyPlan, CpuOnlyFewerRanksThanNumaNodesGetWholeNodes) {
  PlanRequest req;
  req.ranks_per_node = 1;
  req.topology_xml = kData + "cpu_2x2x8.xml";
  Plan plan = make_plan(req);
  EXPECT_EQ(plan.bindings[0].slot,
            "0:0-15,1:0-15");  // one item per package, as Open MPI 4.1 parses
  req.ranks_per_node = 3;
  plan = make_plan(req);
  EXPECT_EQ(plan.cores_per_rank, 8);
  EXPECT_EQ(plan.bindings[2].slot, "1:0-7");
  EXPECT_TRUE(any_note(plan, "1 NUMA node(s) stay idle"));
}

TEST(TopologyPlan, CustomRankfilePathAndCommand) {
  PlanRequest req;
  req.ranks_per_node = 8;
  req.topology_xml = kData + "dgx_like.xml";
  req.rankfile_path = "/tmp/job.rf";
  req.command = "./shakedown run --config smoke.yaml";
  const Plan plan = make_plan(req);
  EXPECT_EQ(plan.mpirun_rankfile_command,
            "mpirun -np 8 --host node0:8 -x CUDA_DEVICE_ORDER=PCI_BUS_ID -rf /tmp/job.rf "
            "--report-bindings ./shakedown run --config smoke.yaml");
}

TEST(TopologyPlan, RejectsBadRequests) {
  PlanRequest req;
  req.topology_xml = kData + "dgx_like.xml";
  req.nodes = 0;
  EXPECT_TRUE(contains(usage_error_of(req), "nodes must be at least 1"));
  req.nodes = 2;
  req.ranks_per_node = 0;
  EXPECT_TRUE(contains(usage_error_of(req), "ranks per node must be at least 1"));
  req.ranks_per_node = 8;
  req.hosts = {"a01", "a02", "a03"};
  EXPECT_TRUE(contains(usage_error_of(req), "3 host(s) given for 2 node(s)"));
  req.hosts = {"a01", "a01"};
  EXPECT_TRUE(contains(usage_error_of(req), "host 'a01' is listed twice"));
  req.hosts = {};
  req.ranks_per_node = 49;
  const std::string msg = usage_error_of(req);
  EXPECT_TRUE(contains(msg, "49 ranks per node but")) << msg;
  EXPECT_TRUE(contains(msg, "has only 48 cores")) << msg;
}

TEST(TopologyPlan, RejectsMissingOrBrokenTopologyFile) {
  PlanRequest req;
  req.topology_xml = kData + "no_such_topology.xml";
  EXPECT_TRUE(contains(usage_error_of(req), "does not exist"));
  req.topology_xml = kData + "hosts_4.txt";  // a file, but not XML
  EXPECT_TRUE(contains(usage_error_of(req), "hosts_4.txt"));
}

TEST(TopologyPlan, ThisMachineWorksAndRefusesTooManyRanks) {
  PlanRequest req;
  const Plan plan = make_plan(req);
  ASSERT_EQ(plan.bindings.size(), 1u);
  EXPECT_FALSE(plan.bindings[0].cpus.empty());
  EXPECT_TRUE(contains(plan.rankfile, "rank 0=node0 slot="));
  req.ranks_per_node = 100000;
  EXPECT_TRUE(contains(usage_error_of(req), "this machine has only"));
}

// ---- hostfiles ----

class TopologyHostfile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sd_topo_hostfile_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& text) {
    const auto path = (dir_ / "hosts").string();
    std::ofstream(path) << text;
    return path;
  }

  std::string error_of(const std::string& text) {
    const std::string path = write(text);
    try {
      (void)read_hostfile(path);
    } catch (const UsageError& e) {
      return e.what();
    }
    ADD_FAILURE() << "expected a UsageError for:\n" << text;
    return {};
  }

  std::filesystem::path dir_;
};

TEST_F(TopologyHostfile, ReadsHostsCommentsAndAttributes) {
  EXPECT_EQ(read_hostfile(kData + "hosts_4.txt"),
            (std::vector<std::string>{"gpu-a01", "gpu-a02", "gpu-b01", "gpu-b02"}));
  EXPECT_EQ(read_hostfile(write("n1 slots=8 max_slots=8\r\n  n2\tslots=8\n")),
            (std::vector<std::string>{"n1", "n2"}));
}

TEST_F(TopologyHostfile, BadSlotsNamesFileAndLine) {
  const std::string msg = error_of("# header\na01 slots=4\na02 slots=four\n");
  EXPECT_TRUE(contains(msg, "hosts:3: 'slots=four': slots must be a positive integer")) << msg;
  EXPECT_TRUE(contains(error_of("a01 slots=0\n"), "hosts:1:"));
}

TEST_F(TopologyHostfile, UnknownAttribute) {
  const std::string msg = error_of("a01 slots=4 color=blue\n");
  EXPECT_TRUE(contains(msg, "hosts:1: unknown attribute 'color=blue'")) << msg;
  EXPECT_TRUE(contains(error_of("a01 4\n"), "unknown attribute '4'"));
}

TEST_F(TopologyHostfile, AttributeWithoutHost) {
  const std::string msg = error_of("slots=4\n");
  EXPECT_TRUE(contains(msg, "hosts:1: expected a host name first")) << msg;
}

TEST_F(TopologyHostfile, DuplicateHost) {
  const std::string msg = error_of("a01 slots=4\n\na01 slots=4\n");
  EXPECT_TRUE(contains(msg, "hosts:3: host 'a01' is already listed at line 1")) << msg;
}

TEST_F(TopologyHostfile, NoHosts) {
  EXPECT_TRUE(contains(error_of("# only a comment\n\n"), "lists no hosts"));
}

TEST_F(TopologyHostfile, MissingFile) {
  try {
    (void)read_hostfile((dir_ / "absent").string());
    ADD_FAILURE() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_TRUE(contains(e.what(), "cannot open hostfile")) << e.what();
    EXPECT_TRUE(contains(e.what(), "absent")) << e.what();
  }
}

}  // namespace
}  // namespace shakedown
