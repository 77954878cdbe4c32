// RunWriter -> file -> RunFile: every stored field comes back, the .partial is readable after each
// write, finish() renames, and bad files give UsageErrors that name the file.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "temp_dir.hpp"

#include <csignal>
#include <cstdio>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "record/h5.hpp"
#include "record/reader.hpp"
#include "record/schema.hpp"
#include "record/writer.hpp"

namespace shakedown {
namespace {

using testing_support::TempDir;

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::filesystem::path partial_of(const std::filesystem::path& p) {
  std::filesystem::path out = p;
  out += ".partial";
  return out;
}

RunMeta sample_meta() {
  RunMeta m;
  m.shakedown_version = "0.1.0+abc123";
  m.command_line = "shakedown run --config configs/smoke.yaml --virtual-nodes 2 --name 'x y'";
  m.config_yaml = "topology:\n  virtual_nodes: 2\ncollectives:\n  ops: [all_reduce]\n# ünïcode\n";
  m.started_utc = "2025-01-31T13:45:07Z";
  m.world_size = 4;
  m.node_count = 2;
  m.virtual_nodes = 2;
  m.backend = "mpi";
  return m;
}

std::vector<RankInfo> sample_ranks() {
  std::vector<RankInfo> ranks(3);
  for (int r = 0; r < 3; ++r) {
    RankInfo& ri = ranks[static_cast<std::size_t>(r)];
    ri.rank = r;
    ri.node_index = r / 2;
    ri.local_rank = r % 2;
    ri.local_size = r < 2 ? 2 : 1;
    ri.cpus = std::to_string(r * 4) + "-" + std::to_string(r * 4 + 3);
    ri.cpu_count = 4;
    ri.node_cores = 64;
    ri.node_pus = 128;
    ri.allowed_cpus = "0-15,64-79";
    ri.allowed_cores = 16;
    ri.allowed_pus = 32;
    ri.numa = r < 2 ? "0" : "0,1";
  }
  ranks[0].hostname = "gpu-node-001.cluster.example";
  ranks[0].gpu_count = 8;
  ranks[0].gpu_index = 0;
  ranks[0].gpu =
      GpuInfo{0, "NVIDIA H200", "GPU-1234-abcd", "0000:18:00.0", std::uint64_t{150} << 30,
              0, "0-23,96-119"};
  ranks[0].nic = "mlx5_0";
  ranks[0].slurm_job_id = "12345";
  ranks[0].slurm_node_id = "0";
  ranks[0].slurm_local_id = "0";
  ranks[0].slurm_procid = "0";
  ranks[0].slurm_topology_addr = "top.s0.gpu-node-001";
  ranks[0].slurm_topology_pattern = "switch.switch.node";
  ranks[0].leaf_switch = "s0";
  ranks[0].block = "nvl0";
  ranks[1].hostname = "nœud-ü-東京";  // unicode survives
  ranks[1].gpu_note = "built without CUDA";
  ranks[2].hostname = "";  // empty strings survive too
  ranks[2].gpu_index = -1;
  ranks[2].gpu_note = "no CUDA driver";
  return ranks;
}

void expect_gpu_eq(const GpuInfo& a, const GpuInfo& b) {
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.uuid, b.uuid);
  EXPECT_EQ(a.pci_bus_id, b.pci_bus_id);
  EXPECT_EQ(a.memory_bytes, b.memory_bytes);
  EXPECT_EQ(a.numa_node, b.numa_node);
  EXPECT_EQ(a.cpus, b.cpus);
}

void expect_nic_eq(const NicInfo& a, const NicInfo& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.numa_node, b.numa_node);
  EXPECT_EQ(a.pci_bus_id, b.pci_bus_id);
}

void expect_rank_eq(const RankInfo& a, const RankInfo& b) {
  SCOPED_TRACE("rank " + std::to_string(a.rank));
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.node_index, b.node_index);
  EXPECT_EQ(a.local_rank, b.local_rank);
  EXPECT_EQ(a.local_size, b.local_size);
  EXPECT_EQ(a.hostname, b.hostname);
  EXPECT_EQ(a.cpus, b.cpus);
  EXPECT_EQ(a.cpu_count, b.cpu_count);
  EXPECT_EQ(a.node_cores, b.node_cores);
  EXPECT_EQ(a.node_pus, b.node_pus);
  EXPECT_EQ(a.allowed_cpus, b.allowed_cpus);
  EXPECT_EQ(a.allowed_cores, b.allowed_cores);
  EXPECT_EQ(a.allowed_pus, b.allowed_pus);
  EXPECT_EQ(a.numa, b.numa);
  EXPECT_EQ(a.gpu_count, b.gpu_count);
  EXPECT_EQ(a.gpu_index, b.gpu_index);
  expect_gpu_eq(a.gpu, b.gpu);
  EXPECT_EQ(a.gpu_note, b.gpu_note);
  EXPECT_EQ(a.nic, b.nic);
  EXPECT_EQ(a.slurm_job_id, b.slurm_job_id);
  EXPECT_EQ(a.slurm_node_id, b.slurm_node_id);
  EXPECT_EQ(a.slurm_local_id, b.slurm_local_id);
  EXPECT_EQ(a.slurm_procid, b.slurm_procid);
  EXPECT_EQ(a.slurm_topology_addr, b.slurm_topology_addr);
  EXPECT_EQ(a.slurm_topology_pattern, b.slurm_topology_pattern);
  EXPECT_EQ(a.leaf_switch, b.leaf_switch);
  EXPECT_EQ(a.block, b.block);
}

std::vector<CheckResult> sample_checks() {
  return {{"one_gpu_per_rank", CheckStatus::kPass, ""},
          {"numa_local_gpu", CheckStatus::kWarn, "rank 2 runs on NUMA 0,1 but its GPU is on 1"},
          {"oversubscribed", CheckStatus::kFail, "node 0: 4 ranks x 4 CPUs on 8 cores"},
          {"nic_affinity", CheckStatus::kSkip, "no NICs found"}};
}

std::vector<NodeInventory> sample_inventory() {
  std::vector<NodeInventory> nodes(2);
  NodeInventory& a = nodes[0];
  a.node_index = 0;
  a.hostname = "gpu-node-001";
  a.cpu_model = "Intel(R) Xeon(R) Platinum 8480+";
  a.sockets = 2;
  a.cores = 112;
  a.pus = 224;
  a.numa_nodes = 2;
  a.memory_bytes = (std::uint64_t{1} << 63) + 12345;  // needs all 64 unsigned bits
  a.os = "Debian GNU/Linux 12 (bookworm)";
  a.kernel = "6.1.0-18-amd64";
  a.gpu_driver = "550.54.15";
  a.mpi_version = "Open MPI v4.1.4";
  a.nccl_version = "2.21.5";
  a.cuda_runtime_version = "13.0";
  a.cuda_driver_version = "12.4";
  a.hdf5_version = "1.10.8";
  a.ucx_version = "1.13.1";
  a.hwloc_version = "2.9.0";
  a.openblas_version = "0.3.21";
  a.gpus = {GpuInfo{0, "NVIDIA H200", "GPU-aaaa", "0000:18:00.0", 150ULL << 30, 0, "0-55"},
            GpuInfo{1, "NVIDIA H200", "GPU-bbbb", "0000:2a:00.0", 150ULL << 30, 1, "56-111"}};
  a.nics = {NicInfo{"mlx5_0", "infiniband", 0, "0000:1a:00.0"},
            NicInfo{"eth0", "ethernet", -1, ""}};
  NodeInventory& b = nodes[1];
  b.node_index = 1;
  b.hostname = "ノード-2";
  b.cpu_model = "";
  b.nics = {NicInfo{"ib0", "infiniband", 1, "0000:9a:00.0"}};  // no GPUs on this one
  b.gpu_note = "CUDA: no CUDA-capable device is detected";
  return nodes;
}

// ---------------------------------------------------------------- round trips

TEST(RecordRun, MetaRoundTrip) {
  TempDir dir;
  const auto final_path = dir / "run.h5";
  RunWriter w = RunWriter::create(final_path, sample_meta(), 4);
  EXPECT_EQ(w.final_path(), final_path);
  EXPECT_EQ(w.partial_path(), partial_of(final_path));
  EXPECT_TRUE(std::filesystem::exists(w.partial_path()));
  EXPECT_FALSE(std::filesystem::exists(final_path));

  const RunFile f = RunFile::open(w.partial_path());
  const RunMeta m = f.meta();
  const RunMeta in = sample_meta();
  EXPECT_EQ(f.schema_version(), schema::kSchemaVersion);
  EXPECT_EQ(m.schema_version, schema::kSchemaVersion);
  EXPECT_EQ(m.shakedown_version, in.shakedown_version);
  EXPECT_EQ(m.command_line, in.command_line);
  EXPECT_EQ(m.config_yaml, in.config_yaml);
  EXPECT_EQ(m.started_utc, in.started_utc);
  EXPECT_EQ(m.finished_utc, "");
  EXPECT_EQ(m.status, "running");
  EXPECT_EQ(m.world_size, 4);
  EXPECT_EQ(m.node_count, 2);
  EXPECT_EQ(m.virtual_nodes, 2);
  EXPECT_EQ(m.backend, "mpi");
}

TEST(RecordRun, StartedUtcDefaultsToNow) {
  TempDir dir;
  RunMeta meta = sample_meta();
  meta.started_utc.clear();
  RunWriter w = RunWriter::create(dir / "run.h5", meta, 0);
  const std::string started = RunFile::open(w.partial_path()).meta().started_utc;
  ASSERT_EQ(started.size(), 20U) << started;  // 2025-01-31T13:45:07Z
  EXPECT_EQ(started[4], '-');
  EXPECT_EQ(started[10], 'T');
  EXPECT_EQ(started.back(), 'Z');
}

TEST(RecordRun, TopologyRoundTrip) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", sample_meta(), 4);
  const std::vector<RankInfo> in = sample_ranks();
  w.write_topology(in, sample_checks());
  const RunFile f = RunFile::open(w.partial_path());
  const std::vector<RankInfo> out = f.ranks();
  ASSERT_EQ(out.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) expect_rank_eq(out[i], in[i]);
  EXPECT_EQ(out, in);
  const std::vector<CheckResult> checks = f.placement_checks();
  const std::vector<CheckResult> expected = sample_checks();
  ASSERT_EQ(checks.size(), expected.size());
  for (std::size_t i = 0; i < checks.size(); ++i) {
    EXPECT_EQ(checks[i].name, expected[i].name);
    EXPECT_EQ(checks[i].status, expected[i].status);
    EXPECT_EQ(checks[i].reason, expected[i].reason);
  }
  EXPECT_TRUE(f.has(schema::ranks::kPath));
  EXPECT_TRUE(f.has("topology/placement_checks"));  // relative paths start at the root
}

TEST(RecordRun, EmptyTopology) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", sample_meta(), 9);
  w.write_topology({}, {});
  const RunFile f = RunFile::open(w.partial_path());
  EXPECT_TRUE(f.has(schema::ranks::kPath));
  EXPECT_TRUE(f.ranks().empty());
  EXPECT_TRUE(f.placement_checks().empty());
}

TEST(RecordRun, InventoryRoundTrip) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", sample_meta(), 4);
  const std::vector<NodeInventory> in = sample_inventory();
  w.write_inventory(in);
  const std::vector<NodeInventory> out = RunFile::open(w.partial_path()).inventory();
  ASSERT_EQ(out.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE("node " + std::to_string(i));
    const NodeInventory& a = out[i];
    const NodeInventory& b = in[i];
    EXPECT_EQ(a.node_index, b.node_index);
    EXPECT_EQ(a.hostname, b.hostname);
    EXPECT_EQ(a.cpu_model, b.cpu_model);
    EXPECT_EQ(a.sockets, b.sockets);
    EXPECT_EQ(a.cores, b.cores);
    EXPECT_EQ(a.pus, b.pus);
    EXPECT_EQ(a.numa_nodes, b.numa_nodes);
    EXPECT_EQ(a.memory_bytes, b.memory_bytes);
    EXPECT_EQ(a.os, b.os);
    EXPECT_EQ(a.kernel, b.kernel);
    EXPECT_EQ(a.gpu_note, b.gpu_note);
    EXPECT_EQ(a.gpu_driver, b.gpu_driver);
    EXPECT_EQ(a.mpi_version, b.mpi_version);
    EXPECT_EQ(a.nccl_version, b.nccl_version);
    EXPECT_EQ(a.cuda_runtime_version, b.cuda_runtime_version);
    EXPECT_EQ(a.cuda_driver_version, b.cuda_driver_version);
    EXPECT_EQ(a.hdf5_version, b.hdf5_version);
    EXPECT_EQ(a.ucx_version, b.ucx_version);
    EXPECT_EQ(a.hwloc_version, b.hwloc_version);
    EXPECT_EQ(a.openblas_version, b.openblas_version);
    ASSERT_EQ(a.gpus.size(), b.gpus.size());
    for (std::size_t g = 0; g < a.gpus.size(); ++g) expect_gpu_eq(a.gpus[g], b.gpus[g]);
    ASSERT_EQ(a.nics.size(), b.nics.size());
    for (std::size_t n = 0; n < a.nics.size(); ++n) expect_nic_eq(a.nics[n], b.nics[n]);
  }
  EXPECT_EQ(out, in);
}

TEST(RecordRun, ClockRoundTrip) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", sample_meta(), 4);
  const std::vector<double> offsets = {0.0, -12.5, 3.25, 1e6};
  const std::vector<double> rtts = {0.0, 4.5, 5.0, 7.75};
  w.write_clock(offsets, rtts);
  const RunFile f = RunFile::open(w.partial_path());
  EXPECT_EQ(f.clock_offsets_us(), offsets);
  EXPECT_EQ(f.clock_rtt_us(), rtts);
  EXPECT_THROW(w.write_clock(offsets, std::vector<double>{1.0}), InternalError);
}

TEST(RecordRun, ArraysOfEachTypeAndRank) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", sample_meta(), 6);
  const std::vector<double> d1 = {1.5, 2.5, -3.5};
  std::vector<std::int64_t> i2(2 * 3);
  for (std::size_t i = 0; i < i2.size(); ++i) i2[i] = static_cast<std::int64_t>(i) - 3;
  std::vector<std::uint64_t> u3(2 * 3 * 4);
  for (std::size_t i = 0; i < u3.size(); ++i) u3[i] = (std::uint64_t{1} << 63) + i;
  std::vector<double> big(8 * 10 * 64);  // [sizes, iters, world]: large enough to compress
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = 10.0 + static_cast<double>(i % 13);

  w.write_array("/gemm/4096x4096x4096/max_rel_err", d1, {3});
  w.write_array("linkscan/pairs", i2, {2, 3});
  w.write_array("/gemm/4096x4096x4096/output_hash", u3, {2, 3, 4});
  w.write_array(schema::collective_group("world", "all_reduce") + "/time_us", big, {8, 10, 64});

  const RunFile f = RunFile::open(w.partial_path());
  std::vector<std::uint64_t> dims;
  EXPECT_EQ(f.read_doubles("/gemm/4096x4096x4096/max_rel_err", &dims), d1);
  EXPECT_EQ(dims, (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(f.read_int64("/linkscan/pairs", &dims), i2);
  EXPECT_EQ(dims, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(f.read_uint64("/gemm/4096x4096x4096/output_hash", &dims), u3);
  EXPECT_EQ(dims, (std::vector<std::uint64_t>{2, 3, 4}));
  EXPECT_EQ(f.read_doubles("/collectives/world/all_reduce/time_us", &dims), big);
  EXPECT_EQ(dims, (std::vector<std::uint64_t>{8, 10, 64}));
  // Integers read as doubles, converted.
  const std::vector<double> as_double = f.read_doubles("/linkscan/pairs");
  ASSERT_EQ(as_double.size(), i2.size());
  EXPECT_DOUBLE_EQ(as_double[0], -3.0);
  EXPECT_TRUE(f.has("/collectives/world"));
  EXPECT_FALSE(f.has("/collectives/intra_node"));
  {
    h5::File file = h5::open_file(w.partial_path(), false);
    EXPECT_TRUE(h5::is_compressed(file.get(), "/collectives/world/all_reduce/time_us"));
    EXPECT_FALSE(h5::is_compressed(file.get(), "/linkscan/pairs"));
  }

  // Caller bugs: size/shape mismatch, a path written twice.
  EXPECT_THROW(w.write_array("/x", d1, {2}), InternalError);
  EXPECT_THROW(w.write_array("/linkscan/pairs", i2, {6}), InternalError);
  try {
    w.write_array("/x", d1, {4});
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find(w.partial_path().string()), std::string::npos) << e.what();
  }
  // Missing data is a UsageError that names the file and the path.
  try {
    (void)f.read_doubles("/train/step_ms");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/train/step_ms"), std::string::npos) << what;
    EXPECT_NE(what.find(w.partial_path().string()), std::string::npos) << what;
  }
}

TEST(RecordRun, Attributes) {
  // Any group and dataset (the writer is generic; the phases' own names are in schema.hpp).
  const std::string kGroup = "/some_phase", kDataset = "/some_phase/step_ms";
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", sample_meta(), 0);
  const std::vector<double> step = {1.0, 2.0};
  w.write_array(kDataset, step, {1, 2});
  w.set_attr(kGroup, "mfu", 0.41);
  w.set_attr(kGroup, "steps", std::int64_t{-7});
  w.set_attr(kGroup, "bytes", std::numeric_limits<std::uint64_t>::max());
  w.set_attr(kGroup, "ranks", 4);                                      // int -> int64
  w.set_attr(kGroup, "ok", true);                                      // bool -> int64
  w.set_attr(kDataset, "unit", "ms");                                  // on a dataset
  w.set_attr("/analysis", schema::kAttrVerdict, std::string("pass"));  // group created
  w.set_attr("/", "note", "ünïcode ✓");
  w.set_attr(kGroup, "mfu", 0.42);  // replaced

  const RunFile f = RunFile::open(w.partial_path());
  EXPECT_DOUBLE_EQ(f.attr_double(kGroup, "mfu"), 0.42);
  EXPECT_EQ(f.attr_int64(kGroup, "steps"), -7);
  EXPECT_DOUBLE_EQ(f.attr_double(kGroup, "bytes"), 18446744073709551615.0);
  EXPECT_EQ(f.attr_int64(kGroup, "ranks"), 4);
  EXPECT_EQ(f.attr_int64(kGroup, "ok"), 1);
  EXPECT_EQ(f.attr_string(kDataset, "unit"), "ms");
  EXPECT_EQ(f.attr_string(schema::kAnalysisGroup, schema::kAttrVerdict), "pass");
  EXPECT_EQ(f.attr_string("/", "note"), "ünïcode ✓");
  EXPECT_TRUE(f.has_attr("/", "note"));
  EXPECT_FALSE(f.has_attr("/", "nope"));
  EXPECT_FALSE(f.has_attr("/nowhere", "note"));
  EXPECT_THROW((void)f.attr_string("/", "nope"), UsageError);
  EXPECT_THROW((void)f.attr_string("/nowhere", "note"), UsageError);
  EXPECT_THROW((void)f.attr_double("/", schema::kAttrStatus), UsageError);
}

// ---------------------------------------------------------------- crash safety and finishing

TEST(RecordRun, PartialReadableAfterEachWrite) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", sample_meta(), 4);
  {
    const RunFile f = RunFile::open(w.partial_path());
    EXPECT_EQ(f.meta().status, "running");
    EXPECT_TRUE(f.ranks().empty());  // not written yet: empty, not an error
    EXPECT_TRUE(f.placement_checks().empty());
    EXPECT_TRUE(f.inventory().empty());
    EXPECT_TRUE(f.clock_offsets_us().empty());
    EXPECT_TRUE(f.clock_rtt_us().empty());
  }
  w.write_topology(sample_ranks(), sample_checks());
  EXPECT_EQ(RunFile::open(w.partial_path()).ranks().size(), 3U);
  w.write_inventory(sample_inventory());
  EXPECT_EQ(RunFile::open(w.partial_path()).inventory().size(), 2U);
  w.write_clock(std::vector<double>{0.0, 1.0}, std::vector<double>{2.0, 3.0});
  EXPECT_EQ(RunFile::open(w.partial_path()).clock_offsets_us().size(), 2U);
  w.write_array("/checkpoint/bytes", std::vector<std::uint64_t>{1, 2}, {2});
  EXPECT_EQ(RunFile::open(w.partial_path()).read_uint64("/checkpoint/bytes").size(), 2U);

  // A RunFile kept across writes sees each new write (it never holds the file open).
  const RunFile live = RunFile::open(w.partial_path());
  w.set_status("aborted");
  EXPECT_EQ(live.meta().status, "aborted");
  EXPECT_FALSE(live.meta().finished_utc.empty());
  w.set_status("running");
  EXPECT_EQ(live.meta().finished_utc, "");
  EXPECT_EQ(live.ranks().size(), 3U);
  EXPECT_EQ(live.inventory().size(), 2U);
}

// A writer that dies with the file open (kill -9, a crash) leaves it readable by any reader:
// everything flushed before the write in progress comes back, status still "running".
TEST(RecordRun, FileLeftOpenByAKilledWriterIsReadable) {
  TempDir dir;
  const auto final_path = dir / "run.h5";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    RunWriter w = RunWriter::create(final_path, sample_meta(), 4);
    w.write_topology(sample_ranks(), sample_checks());
    w.append_rows("/collectives/t", std::vector<double>{1, 2, 3, 4}, {4});
    w.batch([&] {
      w.append_rows("/collectives/t", std::vector<double>{5, 6, 7, 8}, {4});
      h5::flush(h5::open_file(w.partial_path(), true).get());  // not how it ends: see _exit
      _exit(0);  // dies inside the batch: the file is open for writing
    });
    _exit(1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const RunFile f = RunFile::open(partial_of(final_path));
  EXPECT_EQ(f.meta().status, "running");
  EXPECT_EQ(f.ranks().size(), 3U);
  h5::Dims dims;
  const std::vector<double> rows = f.read_doubles("/collectives/t", &dims);
  ASSERT_GE(rows.size(), 4U);
  EXPECT_EQ(rows[3], 4.0);
  // The crash-safety comes from the superblock version (2: no "open for write" flag), while
  // the datasets keep the compact 1.10 chunk index.
  // h5py and h5dump read it too (tests/e2e/test_faults.sh); only the free-space bookkeeping
  // of the interrupted write is lost (h5stat warns), which no reader needs.
  std::ifstream raw(partial_of(final_path), std::ios::binary);
  char head[9] = {};
  raw.read(head, sizeof head);
  EXPECT_EQ(std::string(head, 8), "\x89HDF\r\n\x1a\n");
  EXPECT_EQ(static_cast<int>(head[8]), 2) << "superblock version";
  h5::File file = h5::open_file(partial_of(final_path), false);
  h5::Dataset d(H5Dopen2(file.get(), "/collectives/t", H5P_DEFAULT));
  H5D_chunk_index_t index = H5D_CHUNK_IDX_BTREE;
  ASSERT_GE(H5Dget_chunk_index_type(d.get(), &index), 0);
  EXPECT_EQ(index, H5D_CHUNK_IDX_EARRAY);
}

// A write the system refuses (here: the file-size limit, as a full disk would) breaks the
// writer: a one-line message with the system's words, no later reopen, and the file as it was
// before the failed write stays readable. HDF5 1.10 cannot shut down cleanly after a refused
// write (its exit handler crashes on the file), so this runs in a child that ends with _exit,
// as the run does (MPI_Abort).
void break_writer_and_check(const std::filesystem::path& dir) {
  std::string problems;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) problems += what + "\n";
  };
  RunWriter w = RunWriter::create(dir / "run.h5", sample_meta(), 0);
  w.write_topology(sample_ranks(), sample_checks());
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit small{};
  getrlimit(RLIMIT_FSIZE, &small);
  small.rlim_cur = std::filesystem::file_size(w.partial_path()) + 4096;
  setrlimit(RLIMIT_FSIZE, &small);
  std::string what, detail, again;
  try {
    w.write_array("/big", std::vector<double>(1 << 16, 1.0), {1 << 16});
  } catch (const h5::IoError& e) {
    what = e.what();
    detail = e.detail();
  }
  try {
    w.write_array("/small", std::vector<double>{1.0}, {1});
  } catch (const h5::IoError& e) {
    again = e.what();
  }
  expect(what == "cannot write the run file '" + w.partial_path().string() + "': File too large",
         "message: " + what);
  // What was being written, without HDF5's stack of cache calls under the system's words.
  expect(detail == "while writing '/big'", "detail: " + detail);
  expect(w.broken() && w.io_error() == "File too large", "writer not broken: " + w.io_error());
  expect(again.find("an earlier write failed") != std::string::npos, "second write: " + again);
  bool finish_refused = false;
  try {
    w.finish("aborted");  // never reopened, never renamed
  } catch (const h5::IoError&) {
    finish_refused = true;
  }
  expect(finish_refused && std::filesystem::exists(w.partial_path()), "finish was not refused");
  try {
    const RunFile f = RunFile::open(w.partial_path());
    expect(f.meta().status == "running", "status " + f.meta().status);
    expect(f.ranks().size() == 3, "ranks " + std::to_string(f.ranks().size()));
  } catch (const std::exception& e) {
    expect(false, std::string("reading the file: ") + e.what());
  }
  std::fputs(problems.c_str(), stderr);
  std::fflush(stderr);
  _exit(problems.empty() ? 0 : 1);
}

TEST(RecordRun, RefusedWriteBreaksTheWriterAndKeepsTheFileReadable) {
  TempDir dir;
  EXPECT_EXIT(break_writer_and_check(dir.path()), ::testing::ExitedWithCode(0), "^$");
}

TEST(RecordRun, FinishRenames) {
  TempDir dir;
  const auto final_path = dir / "sub" / "dir" / "run.h5";  // parent folders are created
  RunWriter w = RunWriter::create(final_path, sample_meta(), 4);
  w.write_topology(sample_ranks(), sample_checks());
  const RunFile watching = RunFile::open(w.partial_path());
  w.finish("complete");
  EXPECT_TRUE(w.finished());
  EXPECT_FALSE(std::filesystem::exists(w.partial_path()));
  ASSERT_TRUE(std::filesystem::exists(final_path));
  const RunMeta m = RunFile::open(final_path).meta();
  EXPECT_EQ(m.status, "complete");
  EXPECT_EQ(m.finished_utc.size(), 20U) << m.finished_utc;
  EXPECT_EQ(RunFile::open(final_path).ranks().size(), 3U);
  // A RunFile opened on the .partial follows the rename.
  EXPECT_EQ(watching.meta().status, "complete");
  // No writes after finish.
  EXPECT_THROW(w.set_attr("/", "late", 1.0), InternalError);
  EXPECT_THROW(w.finish("complete"), InternalError);
}

TEST(RecordRun, FinishAborted) {
  TempDir dir;
  const auto final_path = dir / "run.h5";
  RunWriter w = RunWriter::create(final_path, sample_meta(), 4);
  w.set_attr("/", schema::kAttrAbortReason, "rank 3 timed out in all_reduce");
  w.finish("aborted");
  const RunFile f = RunFile::open(final_path);
  EXPECT_EQ(f.meta().status, "aborted");
  EXPECT_EQ(f.attr_string("/", schema::kAttrAbortReason), "rank 3 timed out in all_reduce");
}

TEST(RecordRun, StatusValuesChecked) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", sample_meta(), 4);
  EXPECT_THROW(w.set_status("done"), InternalError);
  EXPECT_THROW(w.finish("running"), InternalError);
  EXPECT_TRUE(std::filesystem::exists(w.partial_path()));
}

TEST(RecordRun, MoveOnly) {
  static_assert(!std::is_copy_constructible_v<RunWriter>);
  static_assert(!std::is_copy_assignable_v<RunWriter>);
  static_assert(std::is_nothrow_move_constructible_v<RunWriter>);
  static_assert(std::is_nothrow_move_assignable_v<RunWriter>);
  TempDir dir;
  RunWriter a = RunWriter::create(dir / "a.h5", sample_meta(), 4);
  RunWriter b = std::move(a);
  b.write_clock(std::vector<double>{0.0}, std::vector<double>{1.0});
  EXPECT_THROW(a.write_clock(std::vector<double>{0.0}, std::vector<double>{1.0}),  // NOLINT
               InternalError);
  RunWriter c = RunWriter::create(dir / "c.h5", sample_meta(), 4);
  c = std::move(b);
  EXPECT_EQ(c.final_path(), dir / "a.h5");
  c.finish("complete");
  EXPECT_TRUE(std::filesystem::exists(dir / "a.h5"));
  EXPECT_TRUE(std::filesystem::exists(dir / "c.h5.partial"));  // left as a dead run's record
}

// ---------------------------------------------------------------- refusals and bad files

TEST(RecordRun, RefusesToOverwrite) {
  TempDir dir;
  const auto final_path = dir / "run.h5";
  write_text(final_path, "precious");
  try {
    (void)RunWriter::create(final_path, sample_meta(), 4);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("refusing to overwrite"), std::string::npos) << what;
    EXPECT_NE(what.find(final_path.string()), std::string::npos) << what;
  }
  EXPECT_FALSE(std::filesystem::exists(partial_of(final_path)));

  // A leftover .partial (another run, or one that died) is not clobbered either.
  const auto other = dir / "other.h5";
  { RunWriter first = RunWriter::create(other, sample_meta(), 4); }
  EXPECT_THROW((void)RunWriter::create(other, sample_meta(), 4), UsageError);
}

TEST(RecordRun, RejectsBadCompressionLevel) {
  TempDir dir;
  EXPECT_THROW((void)RunWriter::create(dir / "a.h5", sample_meta(), -1), UsageError);
  EXPECT_THROW((void)RunWriter::create(dir / "a.h5", sample_meta(), 10), UsageError);
}

TEST(RecordRun, UnwritableFolderNamesThePath) {
  TempDir dir;
  const auto blocker = dir / "not_a_folder";
  write_text(blocker, "x");
  const auto final_path = blocker / "out" / "run.h5";
  try {
    (void)RunWriter::create(final_path, sample_meta(), 4);
    FAIL() << "expected RuntimeFault";
  } catch (const RuntimeFault& e) {
    EXPECT_NE(std::string(e.what()).find(blocker.string()), std::string::npos) << e.what();
  }
  // HDF5 itself failing to create the file (a dangling symlink at the .partial path: exists()
  // says no, the exclusive create says yes), as root ignores folder permissions.
  const auto final2 = dir / "run2.h5";
  std::filesystem::create_symlink(dir / "nowhere" / "target", partial_of(final2));
  try {
    (void)RunWriter::create(final2, sample_meta(), 4);
    FAIL() << "expected RuntimeFault";
  } catch (const RuntimeFault& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(partial_of(final2).string()), std::string::npos) << what;
    EXPECT_NE(what.find("File exists"), std::string::npos) << what;
    EXPECT_NE(e.detail().find("H5Fcreate"), std::string::npos) << e.detail();
  }
}

TEST(RecordRun, OpenMissingFile) {
  TempDir dir;
  const auto missing = dir / "nope.h5";
  try {
    (void)RunFile::open(missing);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
    EXPECT_EQ(e.code(), ExitCode::kUsage);
  }
}

TEST(RecordRun, OpenNonHdf5File) {
  TempDir dir;
  const auto text = dir / "notes.h5";
  write_text(text, "this is not HDF5\n");
  try {
    (void)RunFile::open(text);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(text.string()), std::string::npos) << what;
    EXPECT_NE(what.find("not an HDF5 file"), std::string::npos) << what;
  }
  const auto empty = dir / "empty.h5";
  write_text(empty, "");
  EXPECT_THROW((void)RunFile::open(empty), UsageError);
  EXPECT_THROW((void)RunFile::open(dir.path()), UsageError);  // a folder
}

TEST(RecordRun, OpenForeignAndNewerFiles) {
  TempDir dir;
  const auto foreign = dir / "foreign.h5";
  { h5::File f = h5::create_file(foreign); }
  try {
    (void)RunFile::open(foreign);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(foreign.string()), std::string::npos) << what;
    EXPECT_NE(what.find("not a shakedown run file"), std::string::npos) << what;
  }
  const auto newer = dir / "newer.h5";
  {
    h5::File f = h5::create_file(newer);
    h5::write_attr(f.get(), schema::kAttrSchemaVersion, std::int64_t{schema::kSchemaVersion + 1});
  }
  try {
    (void)RunFile::open(newer);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(newer.string()), std::string::npos) << what;
    EXPECT_NE(what.find("uses file schema " + std::to_string(schema::kSchemaVersion + 1)),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("reads schemas 1 to " + std::to_string(schema::kSchemaVersion)),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("or newer"), std::string::npos) << what;
  }
  const auto older = dir / "older.h5";
  {
    h5::File f = h5::create_file(older);
    h5::write_attr(f.get(), schema::kAttrSchemaVersion, std::int64_t{0});
    h5::write_attr(f.get(), schema::kAttrShakedownVersion, std::string_view{"0.0.1"});
  }
  try {
    (void)RunFile::open(older);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("written by shakedown 0.0.1"), std::string::npos) << what;
    EXPECT_NE(what.find("read it with shakedown 0.0.1"), std::string::npos) << what;
  }
}

TEST(RecordRun, ReadsAFileWithMissingOptionalParts) {
  // A hand-made minimal file: only the schema version. Everything else reads as empty/default.
  TempDir dir;
  const auto minimal = dir / "minimal.h5";
  {
    h5::File f = h5::create_file(minimal);
    h5::write_attr(f.get(), schema::kAttrSchemaVersion, std::int64_t{1});
  }
  const RunFile f = RunFile::open(minimal);
  const RunMeta m = f.meta();
  EXPECT_EQ(m.schema_version, 1);
  EXPECT_EQ(m.status, "");
  EXPECT_EQ(m.world_size, 0);
  EXPECT_TRUE(f.ranks().empty());
  EXPECT_TRUE(f.inventory().empty());
  EXPECT_TRUE(f.clock_offsets_us().empty());
}

}  // namespace
}  // namespace shakedown
