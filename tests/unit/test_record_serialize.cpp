// Guards against the record field lists drifting apart. A record's fields are listed three times:
// the struct (topology/rank_info.hpp), its JSON form (record/serialize.hpp, used to gather ranks'
// records over MPI) and its HDF5 columns (record/tables.cpp). Every field filled with its own
// non-default value must come back equal (operator==) through JSON and through the file, and the
// field counts below stop the build when a field is added to a struct without updating them.
#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "record/reader.hpp"
#include "record/serialize.hpp"
#include "record/tables.hpp"
#include "record/writer.hpp"

namespace shakedown {
namespace {

// ---- field counts: the most initialisers an aggregate accepts ----

struct AnyField {
  template <class T>
  operator T() const;  // declared only: used in unevaluated requires-expressions
};

template <class T, class... Fields>
constexpr std::size_t field_count() {
  if constexpr (requires { T{Fields{}..., AnyField{}}; }) {
    return field_count<T, Fields..., AnyField>();
  } else {
    return sizeof...(Fields);
  }
}

// A failure here means a field was added or removed: add it to serialize.hpp (JSON),
// tables.cpp (HDF5 columns, names in schema.hpp) and to the samples below, then update the count.
static_assert(field_count<GpuInfo>() == 7, "GpuInfo changed: update serialize, tables, samples");
static_assert(field_count<NicInfo>() == 4, "NicInfo changed: update serialize, tables, samples");
static_assert(field_count<RankInfo>() == 26, "RankInfo changed: update serialize, tables, samples");
static_assert(field_count<NodeInventory>() == 23,
              "NodeInventory changed: update serialize, tables, samples");
static_assert(field_count<CheckResult>() == 3,
              "CheckResult changed: update serialize, tables, samples");

// ---- samples: every field set, no two alike, none at its default ----

GpuInfo sample_gpu(int salt) {
  return GpuInfo{
      .index = 3 + salt,
      .name = "NVIDIA H200 #" + std::to_string(salt),
      .uuid = "GPU-0badc0de-" + std::to_string(salt),
      .pci_bus_id = "0000:" + std::to_string(18 + salt) + ":00.0",
      .memory_bytes = (std::uint64_t{1} << 63) + static_cast<std::uint64_t>(salt),
      .numa_node = 1 + salt,
      .cpus = std::to_string(salt) + "-23,96-119",
  };
}

NicInfo sample_nic(int salt) {
  return NicInfo{
      .name = "mlx5_" + std::to_string(salt),
      .kind = salt % 2 == 0 ? "infiniband" : "ethernet",
      .numa_node = 2 + salt,
      .pci_bus_id = "0000:1" + std::to_string(salt) + ":00.1",
  };
}

RankInfo sample_rank() {
  RankInfo r;
  r.rank = 11;
  r.node_index = 3;
  r.local_rank = 2;
  r.local_size = 8;
  r.hostname = "gpu-a03.ノード";
  r.cpus = "24-35,120-131";
  r.cpu_count = 24;
  r.node_cores = 96;
  r.node_pus = 192;
  r.allowed_cpus = "0-47,96-143";
  r.allowed_cores = 48;
  r.allowed_pus = 97;
  r.numa = "1";
  r.gpu_count = 7;
  r.gpu_index = 5;
  r.gpu = sample_gpu(1);
  r.gpu_note = "a note that is not empty";
  r.nic = "mlx5_9";
  r.slurm_job_id = "4242";
  r.slurm_node_id = "30";
  r.slurm_local_id = "31";
  r.slurm_procid = "32";
  r.slurm_topology_addr = "top.s1.gpu-a03";
  r.slurm_topology_pattern = "switch.switch.node";
  r.leaf_switch = "s1";
  r.block = "nvl3";
  return r;
}

NodeInventory sample_node() {
  NodeInventory n;
  n.node_index = 4;
  n.hostname = "gpu-a04";
  n.cpu_model = "Intel(R) Xeon(R) Platinum 8480C";
  n.sockets = 2;
  n.cores = 112;
  n.pus = 224;
  n.numa_nodes = 8;
  n.memory_bytes = (std::uint64_t{1} << 63) + 77;
  n.os = "Ubuntu 22.04.4 LTS";
  n.kernel = "5.15.0-101-generic x86_64";
  n.gpus = {sample_gpu(2), sample_gpu(3)};
  n.gpu_note = "CUDA: something to say";
  n.nics = {sample_nic(0), sample_nic(1), sample_nic(2)};
  n.gpu_driver = "550.54.15";
  n.mpi_version = "Open MPI v4.1.6";
  n.nccl_version = "2.21.5";
  n.cuda_runtime_version = "12.4";
  n.cuda_driver_version = "12.5";
  n.hdf5_version = "1.14.3";
  n.ucx_version = "1.16.0";
  n.hwloc_version = "2.10.0";
  n.openblas_version = "0.3.26";
  n.facts = {{"bios.version", "1.5.2", "/sys/class/dmi/id/bios_version"},
             {"nccl.NCCL_ALGO", "Ring", "environment"},
             {"pcie.acs", "unknown (run the audit as root)", "/sys/bus/pci/devices/*/config"}};
  return n;
}

CheckResult sample_check() {
  return CheckResult{"placement.oversubscription", CheckStatus::kWarn, "a reason"};
}

void expect_no_empty_string(const nlohmann::json& j, const std::string& where) {
  if (j.is_string()) {
    EXPECT_FALSE(j.get<std::string>().empty()) << where;
    return;
  }
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) expect_no_empty_string(value, where + "." + key);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i)
      expect_no_empty_string(j[i], where + "[" + std::to_string(i) + "]");
  }
}

// Each field differs from a default-constructed record: a field left out of a list comes back
// at its default and the round trips below tell.
TEST(RecordSerialize, SamplesDifferFromDefaultsInEveryField) {
  const RankInfo r = sample_rank();
  const RankInfo d;
  EXPECT_NE(r.rank, d.rank);
  EXPECT_NE(r.node_index, d.node_index);
  EXPECT_NE(r.local_rank, d.local_rank);
  EXPECT_NE(r.local_size, d.local_size);
  EXPECT_NE(r.cpu_count, d.cpu_count);
  EXPECT_NE(r.node_cores, d.node_cores);
  EXPECT_NE(r.node_pus, d.node_pus);
  EXPECT_NE(r.allowed_cores, d.allowed_cores);
  EXPECT_NE(r.allowed_pus, d.allowed_pus);
  EXPECT_NE(r.gpu_count, d.gpu_count);
  EXPECT_NE(r.gpu_index, d.gpu_index);
  for (const GpuInfo& g : {r.gpu, sample_node().gpus[0]}) {
    const GpuInfo dg;
    EXPECT_NE(g.index, dg.index);
    EXPECT_NE(g.memory_bytes, dg.memory_bytes);
    EXPECT_NE(g.numa_node, dg.numa_node);
  }
  EXPECT_NE(sample_nic(0).numa_node, NicInfo{}.numa_node);
  EXPECT_NE(sample_check().status, CheckResult{}.status);
  // Strings, nested ones included: none empty (the JSON holds every one of them).
  expect_no_empty_string(nlohmann::json(r), "rank");
  expect_no_empty_string(nlohmann::json(sample_node()), "node");
}

// ---- JSON (the MPI gather path: dump on every rank, parse on rank 0) ----

template <class T>
T through_json(const T& in) {
  return nlohmann::json::parse(nlohmann::json(in).dump()).get<T>();
}

TEST(RecordSerialize, JsonListsEveryField) {
  EXPECT_EQ(nlohmann::json(sample_gpu(0)).size(), field_count<GpuInfo>());
  EXPECT_EQ(nlohmann::json(sample_nic(0)).size(), field_count<NicInfo>());
  EXPECT_EQ(nlohmann::json(sample_rank()).size(), field_count<RankInfo>());
  EXPECT_EQ(nlohmann::json(sample_node()).size(), field_count<NodeInventory>());
  EXPECT_EQ(nlohmann::json(sample_check()).size(), field_count<CheckResult>());
}

TEST(RecordSerialize, JsonRoundTripKeepsEveryField) {
  const RankInfo r = sample_rank();
  EXPECT_EQ(through_json(r), r);
  const NodeInventory n = sample_node();
  EXPECT_EQ(through_json(n), n);
  const CheckResult c = sample_check();
  EXPECT_EQ(through_json(c), c);
  EXPECT_EQ(through_json(sample_gpu(4)), sample_gpu(4));
  EXPECT_EQ(through_json(sample_nic(5)), sample_nic(5));
  // Defaults survive too (-1 indices, empty strings and lists).
  EXPECT_EQ(through_json(RankInfo{}), RankInfo{});
  EXPECT_EQ(through_json(NodeInventory{}), NodeInventory{});
}

TEST(RecordSerialize, OperatorEqualsSeesEachField) {
  const RankInfo r = sample_rank();
  RankInfo other = r;
  other.allowed_cores += 1;
  EXPECT_NE(other, r);
  other = r;
  other.gpu.cpus += ",1";
  EXPECT_NE(other, r);
  NodeInventory n = sample_node();
  n.nics[2].kind = "other";
  EXPECT_NE(n, sample_node());
}

// ---- HDF5 columns ----

// Columns per record: every scalar field, nested GpuInfo flattened into the rank row, the node's
// GPU, NIC and fact lists in their own tables keyed by node_index.
TEST(RecordSerialize, TablesListEveryField) {
  EXPECT_EQ(tables::rank_fields().size(), field_count<RankInfo>() - 1 + field_count<GpuInfo>());
  EXPECT_EQ(tables::node_fields().size(), field_count<NodeInventory>() - 3);
  EXPECT_EQ(tables::gpu_fields().size(), 1 + field_count<GpuInfo>());
  EXPECT_EQ(tables::nic_fields().size(), 1 + field_count<NicInfo>());
  EXPECT_EQ(tables::fact_fields().size(), 1 + field_count<NodeFact>());
  EXPECT_EQ(tables::check_fields().size(), field_count<CheckResult>());
}

using testing_support::TempDir;

RunMeta sample_meta(int world) {
  RunMeta m;
  m.shakedown_version = "test";
  m.command_line = "shakedown run";
  m.world_size = world;
  m.node_count = 2;
  m.backend = "mpi";
  return m;
}

TEST(RecordSerialize, FileRoundTripKeepsEveryField) {
  TempDir dir;
  RankInfo second = sample_rank();
  second.rank = 12;
  second.gpu = sample_gpu(6);
  const std::vector<RankInfo> ranks = {sample_rank(), second, RankInfo{}};
  NodeInventory other = sample_node();
  other.node_index = 5;
  other.nics.pop_back();
  other.gpus.clear();
  other.facts.pop_back();
  const std::vector<NodeInventory> nodes = {sample_node(), other};
  const std::vector<CheckResult> checks = {sample_check(), CheckResult{}};

  RunWriter w = RunWriter::create(dir / "run.h5", sample_meta(3), 4);
  w.write_topology(ranks, checks);
  w.write_inventory(nodes);
  const RunFile f = RunFile::open(w.partial_path());
  EXPECT_EQ(f.ranks(), ranks);
  EXPECT_EQ(f.inventory(), nodes);
  EXPECT_EQ(f.placement_checks(), checks);
}

}  // namespace
}  // namespace shakedown
