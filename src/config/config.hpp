#pragma once
// The run configuration as plain structs. Loading and validation live in config/load.hpp.
// Every field's default here is what a key missing from a config file takes; configs/full.yaml
// spells them all out and configs/README.md documents them. default_config() (= configs/smoke.yaml)
// starts from these and shrinks a few to CI size.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shakedown {

// The pipeline, in order. Phase names in configs and on the command line are these strings.
inline const std::vector<std::string>& pipeline_phases() {
  static const std::vector<std::string> kPhases = {
      "inventory", "devices", "linkscan", "collectives", "gemm", "train", "checkpoint"};
  return kPhases;
}

// A list of byte sizes: either explicit values or a geometric range min:max with a factor.
struct SizeList {
  std::vector<std::uint64_t> values;  // always expanded, ascending, no duplicates
  std::string spec;                   // what the user wrote, for the record

  friend bool operator==(const SizeList&, const SizeList&) = default;
};

// lo, 2*lo, 4*lo ... <= hi: lets the built-in defaults below be written as the spec a user would
// type, so Config{} is complete without calling the parser (which lives in load.cpp).
inline SizeList doubling_sizes(std::uint64_t lo, std::uint64_t hi, std::string spec) {
  SizeList list{{}, std::move(spec)};
  for (std::uint64_t v = lo; v <= hi; v *= 2) list.values.push_back(v);
  return list;
}

struct TopologyConfig {
  int virtual_nodes = 0;  // 0 or 1: off; N>1 splits each host's ranks into N pretend nodes
  // More ranks than cores on a node is a warning instead of a fail.
  bool allow_oversubscribe = false;
  int expected_gpus_per_node = 0;  // 0: take what is visible
  std::string blocks;              // optional block map file (NVL72-style domains), "" = none

  friend bool operator==(const TopologyConfig&, const TopologyConfig&) = default;
};

struct CollectivesConfig {
  std::string backend = "auto";  // auto | mpi | nccl
  std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter",
                                  "broadcast",  "all_to_all", "send_recv"};
  // float32 bfloat16 float16 int32 fp8_e4m3 fp8_e5m2
  std::vector<std::string> dtypes = {"float32"};
  std::vector<std::string> reduce_ops = {"sum"};                // sum | max
  SizeList sizes = doubling_sizes(8, 64ull << 20, "8:64M");     // MPI backend (host memory)
  SizeList nccl_sizes = doubling_sizes(8, 8ull << 30, "8:8G");  // NCCL backend (device memory)
  int warmup = 5;
  int iters = 20;
  std::uint64_t iter_bytes_budget = 0;  // 0 = no budget; else fewer iters for huge sizes
  std::string in_place = "both";        // no | yes | both
  std::vector<std::string> scopes = {"world", "intra_node", "inter_node", "rail"};
  std::string validate = "per_size";  // per_size | every_iteration | off
  std::string on_wrong = "abort";     // abort | continue
  std::uint64_t seed = 1;
  // Per-rank link rates (GB/s, one direction) of the paths a scope uses; 0 = unknown. A busbw
  // above the rate is kept but flagged: NVLS/tree algorithms can beat the ring model's formula.
  double intra_node_link_GBps = 0;
  double inter_node_link_GBps = 0;

  friend bool operator==(const CollectivesConfig&, const CollectivesConfig&) = default;
};

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;

  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

struct GemmConfig {
  std::string engine = "auto";     // auto | cpu | cublaslt
  std::vector<GemmShape> shapes;   // empty: derived from hidden size
  std::int64_t hidden = 1024;      // transformer hidden size for the default layer shapes
  std::int64_t tokens = 2048;      // m of the default layer shapes (sequence x micro-batch)
  std::string format = "e4m3";     // e4m3 | hybrid
  std::string out_dtype = "bf16";  // bf16 | fp32
  int warmup = 2;
  int iters = 10;   // compare's exact test over thousands of rank x shape items needs 10 vs 10
  int threads = 0;  // CPU engine; 0: the rank's share of its host's cores
  bool fast_accum = true;
  std::uint64_t seed = 1;

  friend bool operator==(const GemmConfig&, const GemmConfig&) = default;
};

struct TrainConfig {
  // custom, or a preset (llama2-7b, llama2-70b, gpt3-175b) that sets hidden, ffn_hidden, heads,
  // kv_heads, vocab and mlp (train/model.hpp); layers, when not 0, cuts the preset's layer count.
  std::string model = "custom";
  int layers = 0;  // 0: the preset's count (custom: 2)
  std::int64_t hidden = 1024;
  std::int64_t ffn_hidden = 0;  // 0: 4 x hidden (gelu), 256-rounded 8/3 x hidden (swiglu)
  int heads = 16;
  int kv_heads = 0;  // 0: = heads (multi-head attention); fewer: grouped-query attention
  std::int64_t seq_len = 512;
  int micro_batch = 1;
  std::int64_t vocab = 32000;
  std::string mlp = "gelu";  // gelu | swiglu
  // Where the step runs: cpu (OpenBLAS GEMMs, MPI) | cublaslt (device-resident on the rank's
  // GPU: cuBLASLt GEMMs, NCCL) | auto (cublaslt when every rank has a GPU of its own).
  std::string engine = "cpu";
  int tp = 1;  // tensor-parallel ranks, inside a node
  int dp = 0;  // data-parallel replicas; 0: world / tp
  bool sequence_parallel = false;
  int zero = 0;           // 0: gradients all-reduced; 1: reduce-scattered, Adam on the shard
  double bucket_mb = 25;  // gradient bucket (MiB); the first bucket is 1 MiB, as DDP's
  bool overlap = true;    // DP reduction overlapped with the backward pass
  int steps = 12;         // enough for the rank-sum tests of the straggler and lateness checks
  int warmup_steps = 1;
  std::string recipe = "delayed";  // delayed | current
  std::string format = "hybrid";   // e4m3 | hybrid
  int amax_history_len = 16;
  std::string amax_compute_algo = "max";  // max | most_recent
  int margin = 0;

  friend bool operator==(const TrainConfig&, const TrainConfig&) = default;
};

struct CheckpointConfig {
  std::string dir;                          // "" = next to the run file (<run>.ckpt)
  std::string api = "posix";                // posix | mpiio
  std::string layout = "file_per_process";  // file_per_process | shared_file
  std::uint64_t bytes_per_rank = 64ull << 20;
  bool from_train = false;  // shard sizes from train: (DLIO's rules) instead of bytes_per_rank
  std::uint64_t block_size = 4ull << 20;
  int iters = 2;
  bool fsync = true;
  bool verify = true;
  bool cleanup = true;
  bool keep = false;       // keep the last checkpoint (cleanup removes the others)
  bool direct_io = false;  // O_DIRECT (posix api)
  bool async = false;      // snapshot, then write in a background thread while "training" runs
  double expected_write_gbps = 0;  // aggregate GB/s the storage should reach; 0: not judged
  double expected_read_gbps = 0;

  friend bool operator==(const CheckpointConfig&, const CheckpointConfig&) = default;
};

// The devices phase (docs/devices.md): each device's memory and, on the GPU path, its PCIe
// copies, then every ordered pair of devices inside a node.
struct DevicesConfig {
  std::string path = "auto";                // auto | cpu | cuda
  std::uint64_t bytes = 1ull << 30;         // GPU: each device buffer of the copy and triad
  std::uint64_t host_bytes = 256ull << 20;  // CPU: each array of the host copy and triad
  std::uint64_t copy_bytes = 64ull << 20;   // host<->device copies and pair copies
  int warmup = 1;
  int trials = 5;             // medians of this many timed trials
  std::string pairs = "all";  // none | ring | all
  int threads = 0;            // CPU: threads per rank, 0 = its cores
  // Minimums (0: the platform file's figure, else not judged).
  double min_free_GiB = 0;     // GPU memory free once the CUDA runtime has started
  double min_memory_GBps = 0;  // device memory copy, bytes read + written per second
  double min_host_GBps = 0;    // pinned host->device and device->host, each
  double min_pair_GBps = 0;    // one ordered GPU pair, unidirectional

  friend bool operator==(const DevicesConfig&, const DevicesConfig&) = default;
};

// Hardware telemetry sampled while the phases run (telemetry/): one sampler thread on each host's
// first rank.
struct TelemetryConfig {
  bool enabled = true;
  int interval_ms = 100;        // one sample of every signal per interval
  int decimate_ms = 1000;       // the decimated series' window
  std::string keep = "events";  // events | all: phases kept at full rate

  friend bool operator==(const TelemetryConfig&, const TelemetryConfig&) = default;
};

struct LinkscanConfig {
  std::string transport = "ucx";       // ucx | mpi
  std::string schedule = "all_pairs";  // all_pairs | random
  int rounds = 0;                      // 0: n-1 rounds (all pairs, and random's default)
  std::uint64_t seed = 1;              // random: round r shuffles with seed + r
  std::string rails = "auto";  // auto: each local rank a rail; first: local rank 0; or a list of
                               // UCX_NET_DEVICES values, one per local rank
  std::uint64_t bytes = 4ull << 20;
  int window = 32;  // messages in flight per bandwidth window (ucx_perftest's tag_bw)
  int reps = 5;     // timed windows per pair
  int warmup = 1;   // untimed windows before them
  std::uint64_t lat_bytes = 8;
  int lat_iters = 200;        // round trips per pair
  double lat_factor = 2.1;    // a pair is bad when latency > factor x the minimum seen
  double bw_fraction = 0.93;  // ... or bandwidth < fraction x the maximum seen
  int retest_budget = 0;      // retest pairs at most; 0: 4 per node of the rail
  // A round's pairs at once ("true"), one after another ("false": no pair shares the fabric or a
  // host's cores with another), or "auto": at once unless some host runs more ranks than CPUs.
  std::string concurrent = "auto";
  bool bidirectional = false;  // both ends send at once; the figure counts both directions
  // Where the bandwidth messages live: host memory, GPU memory (cuda: GPUDirect RDMA where UCX
  // has it), or auto: cuda when every rank has a GPU and UCX reports CUDA memory support.
  std::string memory = "auto";

  friend bool operator==(const LinkscanConfig&, const LinkscanConfig&) = default;
};

struct ChecksConfig {
  std::string platform = "auto";     // "", "auto" or a name from configs/platforms/
  double straggler_z = 3.5;          // robust z-score threshold
  double straggler_slowdown = 0.10;  // and at least this much slower than the median
  // the least slowdown named when ranks share cores (one that shares with a busier neighbour is
  // up to ~20% slower with nothing wrong)
  double straggler_slowdown_shared = 0.25;
  double min_busbw_fraction = 0.8;   // of the platform's expected busbw
  double min_tflops_fraction = 0.8;  // of the platform's expected GEMM TFLOP/s

  friend bool operator==(const ChecksConfig&, const ChecksConfig&) = default;
};

// What `shakedown audit` (and the inventory phase of `run`) holds every node to, beyond drift
// between nodes (docs/audit.md). Empty or 0: not checked, or the platform's figure.
struct AuditConfig {
  std::string driver_min;    // least NVIDIA driver version, "570.124" ("" none)
  std::string nccl_min;      // least NCCL version loaded at run time, "2.21" ("" none)
  double nic_rate_gbps = 0;  // each InfiniBand port's rate (0: the platform's, else none)
  std::string governor = "performance";  // every CPU's cpufreq governor ("" not checked)
  std::string image;                     // every node inside a container whose image contains this
  bool allow_mig = false;                // MIG on a GPU is expected (else a full GPU is)
  std::vector<std::string> allow_nccl;   // NCCL_* settings set on purpose: not warned

  friend bool operator==(const AuditConfig&, const AuditConfig&) = default;
};

struct OutputConfig {
  std::string dir = "results";
  std::string file;     // "" = <dir>/<UTC timestamp>.h5
  int compression = 1;  // gzip level for large datasets, 0 = off (1: see configs/README.md)

  friend bool operator==(const OutputConfig&, const OutputConfig&) = default;
};

struct TimeoutsConfig {
  double init_s = 60;    // MPI init and context setup
  double phase_s = 300;  // every barrier, collective and phase step
  double run_s = 3600;   // the whole run

  friend bool operator==(const TimeoutsConfig&, const TimeoutsConfig&) = default;
};

struct CostConfig {
  // Price of one GPU for one hour (0: not set). The train phase's summary then prices a step and
  // a million tokens as world_size GPUs for the step's median time.
  double gpu_hour_usd = 0;

  friend bool operator==(const CostConfig&, const CostConfig&) = default;
};

struct Config {
  // A subset of pipeline_phases(), run in pipeline order.
  std::vector<std::string> phases = {"inventory"};
  TopologyConfig topology;
  CollectivesConfig collectives;
  GemmConfig gemm;
  TrainConfig train;
  CheckpointConfig checkpoint;
  DevicesConfig devices;
  LinkscanConfig linkscan;
  TelemetryConfig telemetry;
  ChecksConfig checks;
  AuditConfig audit;
  CostConfig cost;
  OutputConfig output;
  TimeoutsConfig timeouts;

  friend bool operator==(const Config&, const Config&) = default;
};

}  // namespace shakedown
