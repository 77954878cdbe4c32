#pragma once
// Every name in the run's HDF5 file (docs/architecture.md "The run file"), in one place, so the
// writer, the reader, the analysis and scripts/analyze.py cannot drift apart. Datasets are
// descriptors (path template, element type, dimensions, unit, meaning): RunWriter and RunFile take
// them typed, docs/schema.md and scripts/schema.json are generated from them (a unit test keeps
// both current) and the e2e tests validate a run's file against them. Changing a name or a layout
// means bumping kSchemaVersion; adding a dataset or a table column does not (readers ignore what
// they do not know and default what is missing).
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace shakedown::schema {

// ---- descriptors ----
// How a dataset's elements are stored. kTable: a compound dataset, one row per record.
enum class Elem { kFloat64, kFloat32, kInt64, kUint64, kTable };
std::string_view elem_name(Elem elem);  // "float64", "float32", "int64", "uint64", "table"

// One dataset. `group` is a path template: <scope>, <op>, <dtype>, <mode> and <shape> stand for
// names chosen at run time. `dims` names each dimension ("S, iters, world"); an appended dataset
// grows along its first. Required datasets are present whenever their group is (a phase that
// measured a size or shape writes all of them); optional ones may be absent.
struct DatasetSpec {
  std::string_view group;
  std::string_view name;
  Elem elem;
  std::string_view dims;
  std::string_view unit;
  std::string_view doc;
  bool required = true;

  std::size_t rank() const;  // number of dimensions (0 for a table: one row dimension)
  // The dataset's path in the group instance `group_path` (the template with its names filled).
  std::string path(std::string_view group_path) const;
};

template <class T>
constexpr Elem elem_of() {
  if constexpr (std::is_same_v<T, double>) {
    return Elem::kFloat64;
  } else if constexpr (std::is_same_v<T, float>) {
    return Elem::kFloat32;
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return Elem::kInt64;
  } else {
    static_assert(std::is_same_v<T, std::uint64_t>, "datasets hold double, float, int64 or uint64");
    return Elem::kUint64;
  }
}

// A dataset of element type T: the writer and reader accept only spans and vectors of T for it.
template <class T>
struct Dataset {
  DatasetSpec spec;
  std::string path(std::string_view group_path) const { return spec.path(group_path); }
};

// One attribute of a group or dataset (documentation and the one place its name is spelled).
struct AttrSpec {
  std::string_view object;  // path template, as DatasetSpec::group
  std::string_view name;
  std::string_view type;  // "string", "int64", "float64"
  std::string_view doc;
};

// Every dataset and attribute of the file, in the order docs/schema.md lists them.
std::span<const DatasetSpec> all_datasets();
std::span<const AttrSpec> all_attrs();
// docs/schema.md and scripts/schema.json as generated from the descriptors.
std::string schema_markdown();
std::string schema_json();

inline constexpr int kSchemaVersion = 3;
// Readers also read files of these earlier versions (schema 1: arrival_us stamped after the
// barrier, so lateness is not judged from it; schemas 1-2: a sweep's samples are float64 with a
// column for every rank, arrival_us on rank 0's clock itself, no `ranks`).
inline constexpr int kOldestReadableSchema = 1;

// ---- root attributes ----
inline constexpr const char* kRoot = "/";
inline constexpr const char* kAttrSchemaVersion = "schema_version";        // int64
inline constexpr const char* kAttrShakedownVersion = "shakedown_version";  // string
// In shakedown_version after the git hash when the writer was a sanitizer build:
// "0.1.0+a0c6828+sanitize=address,undefined".
inline constexpr const char* kSanitizedVersionTag = "+sanitize=";
inline constexpr const char* kAttrCommandLine = "command_line";    // string
inline constexpr const char* kAttrConfigYaml = "config_yaml";      // string, effective config
inline constexpr const char* kAttrStartedUtc = "started_utc";      // ISO-8601, "...Z"
inline constexpr const char* kAttrFinishedUtc = "finished_utc";    // "" while running
inline constexpr const char* kAttrStatus = "status";               // kStatus* below
inline constexpr const char* kAttrWorldSize = "world_size";        // int64
inline constexpr const char* kAttrNodeCount = "node_count";        // int64
inline constexpr const char* kAttrVirtualNodes = "virtual_nodes";  // int64, 0 = real nodes
inline constexpr const char* kAttrBackend = "backend";             // "mpi" | "nccl" ...
inline constexpr const char* kAttrAbortReason = "abort_reason";  // only when aborted with a reason
inline constexpr const char* kAttrAbortPhase = "abort_phase";    // the phase an aborted run was in

inline constexpr const char* kStatusRunning = "running";
inline constexpr const char* kStatusComplete = "complete";
inline constexpr const char* kStatusAborted = "aborted";

// The file is written under this suffix and renamed when the run ends (complete or aborted).
inline constexpr const char* kPartialSuffix = ".partial";

// ---- /topology ----
inline constexpr const char* kTopologyGroup = "/topology";

// /topology/ranks: one row per rank (RankInfo). Integers are int64, text is UTF-8 vlen strings.
namespace ranks {
inline constexpr const char* kPath = "/topology/ranks";
inline constexpr const char* kRank = "rank";
inline constexpr const char* kNodeIndex = "node_index";
inline constexpr const char* kLocalRank = "local_rank";
inline constexpr const char* kLocalSize = "local_size";
inline constexpr const char* kHostname = "hostname";
inline constexpr const char* kCpus = "cpus";
inline constexpr const char* kCpuCount = "cpu_count";
inline constexpr const char* kNodeCores = "node_cores";
inline constexpr const char* kNodePus = "node_pus";
inline constexpr const char* kAllowedCpus = "allowed_cpus";  // the job's cpuset (cgroup, container)
inline constexpr const char* kAllowedCores = "allowed_cores";
inline constexpr const char* kAllowedPus = "allowed_pus";
inline constexpr const char* kNuma = "numa";
inline constexpr const char* kGpuCount = "gpu_count";
inline constexpr const char* kGpuIndex = "gpu_index";
inline constexpr const char* kGpuOrdinal = "gpu_ordinal";  // GpuInfo::index, CUDA device ordinal
inline constexpr const char* kGpuName = "gpu_name";
inline constexpr const char* kGpuUuid = "gpu_uuid";
inline constexpr const char* kGpuPci = "gpu_pci";
inline constexpr const char* kGpuMemoryBytes = "gpu_memory_bytes";
inline constexpr const char* kGpuNuma = "gpu_numa_node";
inline constexpr const char* kGpuCpus = "gpu_cpus";
inline constexpr const char* kGpuNote = "gpu_note";
inline constexpr const char* kNic = "nic";
inline constexpr const char* kSlurmJobId = "slurm_job_id";
inline constexpr const char* kSlurmNodeId = "slurm_node_id";
inline constexpr const char* kSlurmLocalId = "slurm_local_id";
inline constexpr const char* kSlurmProcid = "slurm_procid";
inline constexpr const char* kSlurmTopologyAddr = "slurm_topology_addr";
inline constexpr const char* kSlurmTopologyPattern = "slurm_topology_pattern";
inline constexpr const char* kLeafSwitch = "leaf_switch";  // Slurm's address or topology.blocks
inline constexpr const char* kBlock = "block";             // NVLink block from topology.blocks
}  // namespace ranks

// Check tables (placement checks; also the column names of /analysis/checks' first columns).
namespace checks {
inline constexpr const char* kName = "name";
inline constexpr const char* kStatus = "status";  // "pass" | "warn" | "fail" | "skip"
inline constexpr const char* kReason = "reason";
}  // namespace checks
inline constexpr const char* kPlacementChecks = "/topology/placement_checks";

// ---- /inventory ----
inline constexpr const char* kInventoryGroup = "/inventory";

// /inventory/nodes: one row per node, every scalar field of NodeInventory.
namespace nodes {
inline constexpr const char* kPath = "/inventory/nodes";
inline constexpr const char* kNodeIndex = "node_index";
inline constexpr const char* kHostname = "hostname";
inline constexpr const char* kCpuModel = "cpu_model";
inline constexpr const char* kSockets = "sockets";
inline constexpr const char* kCores = "cores";
inline constexpr const char* kPus = "pus";
inline constexpr const char* kNumaNodes = "numa_nodes";
inline constexpr const char* kMemoryBytes = "memory_bytes";  // uint64
inline constexpr const char* kOs = "os";
inline constexpr const char* kKernel = "kernel";
inline constexpr const char* kGpuNote = "gpu_note";  // why the node has no GPU rows
inline constexpr const char* kGpuDriver = "gpu_driver";
inline constexpr const char* kMpiVersion = "mpi_version";
inline constexpr const char* kNcclVersion = "nccl_version";
inline constexpr const char* kCudaRuntimeVersion = "cuda_runtime_version";
inline constexpr const char* kCudaDriverVersion = "cuda_driver_version";
inline constexpr const char* kHdf5Version = "hdf5_version";
inline constexpr const char* kUcxVersion = "ucx_version";
inline constexpr const char* kHwlocVersion = "hwloc_version";
inline constexpr const char* kOpenblasVersion = "openblas_version";
}  // namespace nodes

// /inventory/gpus: one row per GPU per node (node_index + GpuInfo).
namespace gpus {
inline constexpr const char* kPath = "/inventory/gpus";
inline constexpr const char* kNodeIndex = "node_index";
inline constexpr const char* kIndex = "index";
inline constexpr const char* kName = "name";
inline constexpr const char* kUuid = "uuid";
inline constexpr const char* kPciBusId = "pci_bus_id";
inline constexpr const char* kMemoryBytes = "memory_bytes";  // uint64
inline constexpr const char* kNumaNode = "numa_node";
inline constexpr const char* kCpus = "cpus";
}  // namespace gpus

// /inventory/nics: one row per NIC per node (node_index + NicInfo).
namespace nics {
inline constexpr const char* kPath = "/inventory/nics";
inline constexpr const char* kNodeIndex = "node_index";
inline constexpr const char* kName = "name";
inline constexpr const char* kKind = "kind";
inline constexpr const char* kNumaNode = "numa_node";
inline constexpr const char* kPciBusId = "pci_bus_id";
}  // namespace nics

// /inventory/facts: one row per fact per node (node_index + NodeFact): the set-up the audit checks
// (topology/node_facts.hpp lists the keys; docs/audit.md what each check makes of them).
namespace facts {
inline constexpr const char* kPath = "/inventory/facts";
inline constexpr const char* kNodeIndex = "node_index";
inline constexpr const char* kKey = "key";
inline constexpr const char* kValue = "value";  // "unknown (why)" when it could not be read
inline constexpr const char* kSource = "source";
}  // namespace facts

// ---- /clock ----  offsets of each rank's clock from rank 0's, and the ping-pong round trip.
inline constexpr const char* kClockGroup = "/clock";
inline constexpr Dataset<double> kClockOffsetUs{
    {kClockGroup, "offset_us", Elem::kFloat64, "world", "us",
     "each rank's clock minus rank 0's, from the ping-pong with the smallest round trip"}};
inline constexpr Dataset<double> kClockRttUs{
    {kClockGroup, "rtt_us", Elem::kFloat64, "world", "us",
     "that ping-pong's round trip: the offset is good to about half of it"}};

// ---- /collectives/<scope>/<op>/ ----
inline constexpr const char* kCollectivesGroup = "/collectives";
inline constexpr const char* kScopeWorld = "world";
inline constexpr const char* kScopeIntraNode = "intra_node";
inline constexpr const char* kScopeInterNode = "inter_node";
// One sweep: /collectives/<scope>/<op>/<dtype>[_<reduce>]/<in_place|out_of_place>/ (attributes in
// all_attrs(); one with `unsupported` has no datasets). A scope that cannot run has attribute
// `skipped` on its group.
inline constexpr const char* kSweepTemplate = "/collectives/<scope>/<op>/<dtype>/<mode>";
namespace coll {
inline constexpr Dataset<std::uint64_t> kSizes{
    {kSweepTemplate, "sizes", Elem::kUint64, "S", "bytes", "the message size of each step"}};
inline constexpr Dataset<std::uint64_t> kCount{
    {kSweepTemplate, "count", Elem::kUint64, "S", "elements", "elements per rank of each step"}};
inline constexpr Dataset<std::int64_t> kSkipped{
    {kSweepTemplate, "skipped", Elem::kInt64, "S", "code",
     "0 measured, 1 too small for one element per rank, 2 out of memory (then no timings)"}};
// The per-rank datasets of a sweep have one column per rank that took part (`ranks`): every
// rank for world, intra_node and inter_node, one local rank per node for rail_<L>. Samples are
// float32 microseconds rounded to 12 significant bits: within 2^-12 (0.024%) of what was measured,
// far below the run-to-run noise of any collective (record/collective_rows.cpp says why);
// arrivals and waits are also rounded to 1/64 us.
inline constexpr Dataset<std::int64_t> kRanks{
    {kSweepTemplate, "ranks", Elem::kInt64, "ranks", "rank",
     "the world rank of each column of the per-rank datasets (schema 3; before it, every rank in "
     "rank order)"}};
inline constexpr Dataset<float> kTimeUs{
    {kSweepTemplate, "time_us", Elem::kFloat32, "S, iters, ranks", "us",
     "each rank's collective, from the pre-iteration barrier's release to its completion (12 "
     "significant bits: within 0.024%)"}};
inline constexpr Dataset<float> kArrivalUs{
    {kSweepTemplate, "arrival_us", Elem::kFloat32, "S, iters, ranks", "us",
     "when the rank was ready for the iteration (before the barrier), on rank 0's clock, minus "
     "the iteration's earliest arrival (arrival_base_us); to 1/64 us or 12 significant bits"}};
inline constexpr Dataset<double> kArrivalBaseUs{
    {kSweepTemplate, "arrival_base_us", Elem::kFloat64, "S, iters", "us",
     "the iteration's earliest arrival on rank 0's clock (schema 3)"}};
inline constexpr Dataset<float> kWaitUs{
    {kSweepTemplate, "wait_us", Elem::kFloat32, "S, iters, ranks", "us",
     "the rank's time in the pre-iteration barrier (schema 2)", false}};
inline constexpr Dataset<std::int64_t> kWrong{
    {kSweepTemplate, "wrong", Elem::kInt64, "S, ranks", "elements",
     "output elements that differ from the expected values, per rank (validated iteration)"}};
inline constexpr Dataset<std::int64_t> kFirstWrong{{kSweepTemplate, "first_wrong", Elem::kInt64,
                                                    "S, ranks", "index",
                                                    "the first wrong element's index, -1 none"}};
inline constexpr Dataset<double> kTimeMedUs{
    {kSweepTemplate, "time_med_us", Elem::kFloat64, "S", "us",
     "the median iteration; an iteration lasts until its last rank is done"}};
inline constexpr Dataset<double> kTimeP5Us{
    {kSweepTemplate, "time_p5_us", Elem::kFloat64, "S", "us", "5th percentile iteration"}};
inline constexpr Dataset<double> kTimeP95Us{
    {kSweepTemplate, "time_p95_us", Elem::kFloat64, "S", "us", "95th percentile iteration"}};
inline constexpr Dataset<double> kAlgbwGBps{{kSweepTemplate, "algbw_GBps", Elem::kFloat64, "S",
                                             "GB/s",
                                             "bytes / median iteration (1e9 bytes per second)"}};
inline constexpr Dataset<double> kBusbwGBps{
    {kSweepTemplate, "busbw_GBps", Elem::kFloat64, "S", "GB/s",
     "algbw x the sweep's busbw_factor (nccl-tests' convention)"}};
// Attributes of a sweep's group (and of /collectives and a scope's group).
inline constexpr const char* kAttrScope = "scope";
inline constexpr const char* kAttrCollective = "collective";
inline constexpr const char* kAttrDtype = "dtype";
inline constexpr const char* kAttrReduceOp = "reduce_op";
inline constexpr const char* kAttrInPlace = "in_place";
inline constexpr const char* kAttrNranks = "nranks";
inline constexpr const char* kAttrBusbwFactor = "busbw_factor";
inline constexpr const char* kAttrLinkGBps = "link_GBps";
inline constexpr const char* kAttrPlannedSizes = "planned_sizes";
inline constexpr const char* kAttrUnsupported = "unsupported";
inline constexpr const char* kAttrScopeSkipped = "skipped";
inline constexpr const char* kAttrBackend = "backend";
inline constexpr const char* kAttrWrongTotal = "wrong_total";
// Rank 0's time in the phase: all of it, the timed iterations, the preparation around them
// (allocation, fills, validation, warm-up) and the recording (gather and writes).
inline constexpr const char* kAttrSecondsWall = "seconds_wall";
inline constexpr const char* kAttrSecondsTimed = "seconds_timed";
inline constexpr const char* kAttrSecondsPrepare = "seconds_prepare";
inline constexpr const char* kAttrSecondsRecord = "seconds_record";
inline constexpr const char* kAttrRecording = "recording";           // "background" | "inline"
inline constexpr const char* kAttrRecordingCpus = "recording_cpus";  // "" inline
}  // namespace coll
// The codes of a step's `skipped`: a collective size (coll::kSkipped) or a GEMM shape
// (gemm::kAttrSkipped, which is never too small).
inline constexpr std::int64_t kSkipMeasured = 0;
inline constexpr std::int64_t kSkipTooSmall = 1;
inline constexpr std::int64_t kSkipOutOfMemory = 2;

// ---- /gemm/<shape>/ ----
inline constexpr const char* kGemmGroup = "/gemm";
inline constexpr const char* kGemmTemplate = "/gemm/<shape>";
namespace gemm {
inline constexpr Dataset<double> kTflops{
    {kGemmTemplate, "tflops", Elem::kFloat64, "iters, world", "TFLOP/s", "2mnk / time_us"}};
inline constexpr Dataset<double> kTimeUs{{kGemmTemplate, "time_us", Elem::kFloat64, "iters, world",
                                          "us",
                                          "each rank's timed GEMM (device events on the GPU)"}};
inline constexpr Dataset<double> kMaxRelErr{
    {kGemmTemplate, "max_rel_err", Elem::kFloat64, "world", "fraction",
     "normwise error of the checked rows against the fp64 reference"}};
inline constexpr Dataset<double> kErrBoundRatio{
    {kGemmTemplate, "err_bound_ratio", Elem::kFloat64, "world", "x bound",
     "the worst element's error over its stated bound (above 1: wrong)"}};
inline constexpr Dataset<std::int64_t> kWorstIndex{
    {kGemmTemplate, "worst_index", Elem::kInt64, "world", "index", "that element's index in D"}};
inline constexpr Dataset<double> kWorstExpected{
    {kGemmTemplate, "worst_expected", Elem::kFloat64, "world", "", "its fp64 reference value"}};
inline constexpr Dataset<double> kWorstGot{
    {kGemmTemplate, "worst_got", Elem::kFloat64, "world", "", "its value"}};
inline constexpr Dataset<std::int64_t> kRowsChecked{
    {kGemmTemplate, "rows_checked", Elem::kInt64, "world", "rows",
     "rows compared with the reference (0: not checked, see attribute unchecked)"}};
inline constexpr Dataset<std::uint64_t> kOutputHash{
    {kGemmTemplate, "output_hash", Elem::kUint64, "world", "xxh64",
     "hash of the rank's output bits (ranks with one engine, library and device must agree)"}};
inline constexpr Dataset<std::int64_t> kHashGroup{
    {kGemmTemplate, "hash_group", Elem::kInt64, "world", "group",
     "which hash_group_<g> attribute describes the rank's engine"}};
inline constexpr const char* kAttrOrder = "order";
inline constexpr const char* kAttrM = "m";
inline constexpr const char* kAttrN = "n";
inline constexpr const char* kAttrK = "k";
inline constexpr const char* kAttrAFormat = "a_format";
inline constexpr const char* kAttrBFormat = "b_format";
inline constexpr const char* kAttrOutDtype = "out_dtype";
inline constexpr const char* kAttrFastAccum = "fast_accum";
inline constexpr const char* kAttrFlop = "flop";
inline constexpr const char* kAttrEngine = "engine";
inline constexpr const char* kAttrSkipped = "skipped";
inline constexpr const char* kAttrSkipReason = "skip_reason";
inline constexpr const char* kAttrHashGroups = "hash_groups";
inline constexpr const char* kAttrHashGroupPrefix = "hash_group_";
inline constexpr const char* kAttrUnchecked = "unchecked";
}  // namespace gemm

// ---- /train ----  the train phase (train/step.hpp): one row per measured step.
inline constexpr const char* kTrainGroup = "/train";
namespace training {
inline constexpr Dataset<double> kStepMs{
    {kTrainGroup, "step_ms", Elem::kFloat64, "steps, world", "ms", "the rank's whole step"}};
inline constexpr Dataset<double> kFwdMs{{kTrainGroup, "fwd_ms", Elem::kFloat64, "steps, world",
                                         "ms",
                                         "forward compute (the weights' FP8 casts, GEMMs, "
                                         "attention, quantisation), TP waits excluded"}};
inline constexpr Dataset<double> kBwdMs{{kTrainGroup, "bwd_ms", Elem::kFloat64, "steps, world",
                                         "ms", "backward compute, TP waits excluded"}};
inline constexpr Dataset<double> kTpCommMs{
    {kTrainGroup, "tp_comm_ms", Elem::kFloat64, "steps, world", "ms",
     "blocked in tensor-parallel collectives (forward, backward, amax)"}};
inline constexpr Dataset<double> kDpExposedMs{
    {kTrainGroup, "dp_exposed_ms", Elem::kFloat64, "steps, world", "ms",
     "blocked waiting for the data-parallel gradient reduction after backward"}};
inline constexpr Dataset<double> kDpSpanMs{
    {kTrainGroup, "dp_span_ms", Elem::kFloat64, "steps, world", "ms",
     "first gradient bucket posted to the last one complete (the DP communication time)"}};
inline constexpr Dataset<double> kOptimMs{
    {kTrainGroup, "optim_ms", Elem::kFloat64, "steps, world", "ms",
     "scale update, Adam, parameter all-gather (zero 1); the amax reduction's wait is in "
     "tp_comm_ms"}};
inline constexpr Dataset<double> kDpArrivalUs{
    {kTrainGroup, "dp_arrival_us", Elem::kFloat64, "steps, world", "us",
     "when the rank finished backward (reached the DP wait), on rank 0's clock, after the step's "
     "earliest rank"}};
inline constexpr Dataset<double> kZeroGradShare{
    {kTrainGroup, "zero_grad_share", Elem::kFloat64, "steps, world", "fraction",
     "share of the rank's gradient buffer exactly 0 after the step (FP8 underflow shows here)"}};
inline constexpr Dataset<std::uint64_t> kParamHash{
    {kTrainGroup, "param_hash", Elem::kUint64, "steps, world", "xxh3",
     "hash of the rank's fp32 master weights after the step (equal across its DP replicas)"}};
inline constexpr Dataset<double> kBucketStartUs{
    {kTrainGroup, "bucket_start_us", Elem::kFloat64, "steps, buckets, world", "us",
     "when the bucket's reduction was posted, on rank 0's clock, after the step's earliest DP "
     "arrival (negative: during backward)"}};
inline constexpr Dataset<double> kBucketEndUs{
    {kTrainGroup, "bucket_end_us", Elem::kFloat64, "steps, buckets, world", "us",
     "when the rank saw the bucket's reduction complete, same clock"}};
inline constexpr Dataset<std::int64_t> kBucketBytes{
    {kTrainGroup, "bucket_bytes", Elem::kInt64, "buckets", "bytes",
     "gradient bytes in each bucket, in the order they fill (reverse layer order)"}};
inline constexpr Dataset<std::int64_t> kTpRank{
    {kTrainGroup, "tp_rank", Elem::kInt64, "world", "index", "the rank's place in its TP group"}};
inline constexpr Dataset<std::int64_t> kDpRank{
    {kTrainGroup, "dp_rank", Elem::kInt64, "world", "index",
     "its replica index: ranks with one tp_rank hold the same parameters"}};
inline constexpr Dataset<std::int64_t> kScalesFinite{
    {kTrainGroup, "scales_finite", Elem::kInt64, "world", "0/1",
     "every FP8 scale and amax history entry finite and > 0 after the last step (written once "
     "the phase ends: absent when it did not)",
     false}};
// Attributes of /train (the layout and model that ran, the memory budget).
inline constexpr const char* kAttrModel = "model";
inline constexpr const char* kAttrLayers = "layers";
inline constexpr const char* kAttrHidden = "hidden";
inline constexpr const char* kAttrFfnHidden = "ffn_hidden";
inline constexpr const char* kAttrHeads = "heads";
inline constexpr const char* kAttrKvHeads = "kv_heads";
inline constexpr const char* kAttrSeqLen = "seq_len";
inline constexpr const char* kAttrMicroBatch = "micro_batch";
inline constexpr const char* kAttrMlp = "mlp";
inline constexpr const char* kAttrTp = "tp";
inline constexpr const char* kAttrDp = "dp";
inline constexpr const char* kAttrZero = "zero";
inline constexpr const char* kAttrSequenceParallel = "sequence_parallel";
inline constexpr const char* kAttrOverlap = "overlap";
inline constexpr const char* kAttrRecipe = "recipe";
inline constexpr const char* kAttrFormat = "format";
inline constexpr const char* kAttrEngine = "engine";
inline constexpr const char* kAttrCommunication = "communication";
inline constexpr const char* kAttrWarmupSteps = "warmup_steps";
inline constexpr const char* kAttrStepsPlanned = "steps_planned";
inline constexpr const char* kAttrParameters = "parameters";
inline constexpr const char* kAttrRankFlop = "rank_flop_per_step";
inline constexpr const char* kAttrTokensPerStep = "tokens_per_step";
inline constexpr const char* kAttrMemoryBytes = "memory_budget_bytes";
inline constexpr const char* kAttrMemoryDeviceBytes = "memory_device_bytes";
inline constexpr const char* kAttrMemoryDevice = "memory_device";
inline constexpr const char* kAttrMemoryItems = "memory_budget";
}  // namespace training

// ---- /checkpoint/ ----  the checkpoint phase (IOR's timing: aggregate bandwidth = bytes /
// (latest end - earliest start) on aligned clocks).
inline constexpr const char* kCheckpointGroup = "/checkpoint";
namespace checkpoint {
inline constexpr Dataset<std::int64_t> kBytes{
    {kCheckpointGroup, "bytes", Elem::kInt64, "world", "bytes", "the shard each rank writes"}};
inline constexpr Dataset<std::int64_t> kReadsShardOf{
    {kCheckpointGroup, "reads_shard_of", Elem::kInt64, "world", "rank",
     "whose shard each rank restores (a rank on another node when there is one)"}};
inline constexpr Dataset<double> kOpenS{
    {kCheckpointGroup, "open_s", Elem::kFloat64, "iters, world", "s", "open for the write"}};
inline constexpr Dataset<double> kWriteS{
    {kCheckpointGroup, "write_s", Elem::kFloat64, "iters, world", "s", "the write calls"}};
inline constexpr Dataset<double> kFsyncS{{kCheckpointGroup, "fsync_s", Elem::kFloat64,
                                          "iters, world", "s",
                                          "fsync (MPI_File_sync) before the write counts as done"}};
inline constexpr Dataset<double> kCloseS{
    {kCheckpointGroup, "close_s", Elem::kFloat64, "iters, world", "s", "close after the write"}};
inline constexpr Dataset<double> kReadS{
    {kCheckpointGroup, "read_s", Elem::kFloat64, "iters, world", "s",
     "the restore: open, read calls and close of the shard the rank restores"}};
inline constexpr Dataset<double> kWriteStartS{
    {kCheckpointGroup, "write_start_s", Elem::kFloat64, "iters, world", "s",
     "when the rank opened its shard for writing, on rank 0's clock, after the iteration's "
     "earliest"}};
inline constexpr Dataset<double> kWriteEndS{{kCheckpointGroup, "write_end_s", Elem::kFloat64,
                                             "iters, world", "s",
                                             "when its close returned, same clock"}};
inline constexpr Dataset<double> kReadStartS{{kCheckpointGroup, "read_start_s", Elem::kFloat64,
                                              "iters, world", "s",
                                              "when it opened the shard it restores, same clock"}};
inline constexpr Dataset<double> kReadEndS{{kCheckpointGroup, "read_end_s", Elem::kFloat64,
                                            "iters, world", "s",
                                            "when that read's close returned, same clock"}};
inline constexpr Dataset<std::int64_t> kVerifyOk{
    {kCheckpointGroup, "verify_ok", Elem::kInt64, "iters, world", "1/0/-1",
     "1: every block of the restored shard matched its checksum and content; 0: not; -1: not "
     "verified (checkpoint.verify false)"}};
inline constexpr Dataset<std::int64_t> kBadOffset{
    {kCheckpointGroup, "bad_offset", Elem::kInt64, "iters, world", "byte",
     "first wrong byte in the restored shard (in a shared file: from the start of the "
     "writer's range), -1 none"}};
inline constexpr Dataset<std::int64_t> kCacheDropped{
    {kCheckpointGroup, "cache_dropped", Elem::kInt64, "iters, world", "0/1",
     "posix_fadvise(DONTNEED) accepted after a write that was fsynced (the restore reads "
     "storage, not cache); 0 without fsync, whose dirty pages it cannot drop"}};
inline constexpr Dataset<double> kWriteGBps{
    {kCheckpointGroup, "write_GBps", Elem::kFloat64, "iters", "GB/s",
     "all shards' bytes / (latest write end - earliest write start)"}};
inline constexpr Dataset<double> kReadGBps{
    {kCheckpointGroup, "read_GBps", Elem::kFloat64, "iters", "GB/s",
     "all shards' bytes / (latest read end - earliest read start)"}};
inline constexpr Dataset<double> kRestoreS{
    {kCheckpointGroup, "restore_s", Elem::kFloat64, "iters", "s",
     "the whole checkpoint read back: earliest read start to latest read end"}};
// checkpoint.async only: training's stand-in (one FP8 GEMM per step) around the background write.
inline constexpr Dataset<double> kSnapshotS{
    {kCheckpointGroup, "snapshot_s", Elem::kFloat64, "iters, world", "s",
     "async: training blocked while its state was copied to the host buffer the thread writes",
     false}};
inline constexpr Dataset<double> kStepMsBefore{
    {kCheckpointGroup, "step_ms_before", Elem::kFloat64, "iters, world", "ms",
     "async: median stand-in training step before the checkpoint", false}};
inline constexpr Dataset<double> kStepMsDuring{
    {kCheckpointGroup, "step_ms_during", Elem::kFloat64, "iters, world", "ms",
     "async: median step while the write ran in the background (NaN: none fitted)", false}};
inline constexpr Dataset<std::int64_t> kStepsDuring{
    {kCheckpointGroup, "steps_during", Elem::kInt64, "iters, world", "steps",
     "async: stand-in steps that ran while the write did", false}};
// Attributes of /checkpoint.
inline constexpr const char* kAttrLayout = "layout";
inline constexpr const char* kAttrApi = "api";
inline constexpr const char* kAttrDir = "dir";
inline constexpr const char* kAttrFsType = "fs_type";
inline constexpr const char* kAttrFsMount = "fs_mount";
inline constexpr const char* kAttrFsOptions = "fs_options";
inline constexpr const char* kAttrFsNodeLocal = "fs_node_local";
inline constexpr const char* kAttrBlockSize = "block_size";
inline constexpr const char* kAttrFsync = "fsync";
inline constexpr const char* kAttrDirectIo = "direct_io";
inline constexpr const char* kAttrKept = "kept";
inline constexpr const char* kAttrAsync = "async";
}  // namespace checkpoint

// ---- /devices/ ----  the devices phase: each device alone, then every pair inside a node.
inline constexpr const char* kDevicesGroup = "/devices";
inline constexpr const char* kDevicesMemoryTemplate = "/devices/memory/<test>";
inline constexpr const char* kDevicesNodeTemplate = "/devices/nodes/<node>";
namespace devices {
inline constexpr Dataset<double> kAloneGBps{
    {kDevicesMemoryTemplate, "alone_GBps", Elem::kFloat64, "trials, world", "GB/s",
     "bytes counted (attribute counted) / trial time, the ranks of a node taking turns"}};
inline constexpr Dataset<double> kTogetherGBps{
    {kDevicesMemoryTemplate, "together_GBps", Elem::kFloat64, "trials, world", "GB/s",
     "the same with every rank of the node at once (a node's shared memory or PCIe)"}};
inline constexpr Dataset<double> kFreeBytes{
    {kDevicesGroup, "free_bytes", Elem::kFloat64, "world", "bytes",
     "GPU memory free once the CUDA runtime started (NaN on the host path)"}};
inline constexpr Dataset<double> kTotalBytes{{kDevicesGroup, "total_bytes", Elem::kFloat64, "world",
                                              "bytes", "the GPU's memory (NaN: host)"}};
inline constexpr Dataset<double> kPcieCurrentGTs{
    {kDevicesGroup, "pcie_current_GTs", Elem::kFloat64, "world", "GT/s",
     "the GPU's PCIe link speed read while it copied (NaN: not read)", false}};
inline constexpr Dataset<double> kPcieMaxGTs{
    {kDevicesGroup, "pcie_max_GTs", Elem::kFloat64, "world", "GT/s",
     "the most it can train to: the lower of its own and its upstream port's maximum", false}};
inline constexpr Dataset<double> kPcieCurrentWidth{{kDevicesGroup, "pcie_current_width",
                                                    Elem::kFloat64, "world", "lanes",
                                                    "its link width read while it copied", false}};
inline constexpr Dataset<double> kPcieMaxWidth{
    {kDevicesGroup, "pcie_max_width", Elem::kFloat64, "world", "lanes",
     "its maximum width (held to its upstream port's)", false}};
inline constexpr Dataset<double> kNicPcieCurrentGTs{
    {kDevicesGroup, "nic_pcie_current_GTs", Elem::kFloat64, "world", "GT/s",
     "the PCIe link speed of the rank's NIC (topology's nearest NIC), read during the phase "
     "(NaN: not read)",
     false}};
inline constexpr Dataset<double> kNicPcieMaxGTs{
    {kDevicesGroup, "nic_pcie_max_GTs", Elem::kFloat64, "world", "GT/s",
     "the most the NIC's link can train to (its own and its upstream port's maximum)", false}};
inline constexpr Dataset<double> kNicPcieCurrentWidth{{kDevicesGroup, "nic_pcie_current_width",
                                                       Elem::kFloat64, "world", "lanes",
                                                       "the NIC's link width", false}};
inline constexpr Dataset<double> kNicPcieMaxWidth{
    {kDevicesGroup, "nic_pcie_max_width", Elem::kFloat64, "world", "lanes",
     "the NIC's maximum width (held to its upstream port's)", false}};
inline constexpr Dataset<std::int64_t> kNodeRanks{
    {kDevicesNodeTemplate, "ranks", Elem::kInt64, "G", "rank",
     "the rank of each device slot (local rank 0 .. G-1)"}};
inline constexpr Dataset<double> kUnidirectionalGBps{
    {kDevicesNodeTemplate, "unidirectional_GBps", Elem::kFloat64, "trials, src, dst", "GB/s",
     "copy_bytes / time of dst reading src's buffer, one pair at a time (NaN: not measured)"}};
inline constexpr Dataset<double> kBidirectionalGBps{
    {kDevicesNodeTemplate, "bidirectional_GBps", Elem::kFloat64, "trials, src, dst", "GB/s",
     "the same while src reads dst's buffer at the same time (each direction timed on its side)"}};
inline constexpr Dataset<double> kConcurrentGBps{
    {kDevicesNodeTemplate, "concurrent_GBps", Elem::kFloat64, "trials, src, dst", "GB/s",
     "the same while every device of the node reads from another at once"}};
// Attributes of /devices.
inline constexpr const char* kAttrPath = "path";  // cpu | cuda
inline constexpr const char* kAttrTrials = "trials";
inline constexpr const char* kAttrWarmup = "warmup";
inline constexpr const char* kAttrBytes = "bytes";
inline constexpr const char* kAttrCopyBytes = "copy_bytes";
inline constexpr const char* kAttrPairs = "pairs";
inline constexpr const char* kAttrTests = "tests";  // the tests in the order they ran, "copy,triad"
// Attributes of /devices/memory/<test>.
inline constexpr const char* kAttrBytesCounted = "bytes_counted";
inline constexpr const char* kAttrCounted = "counted";
// Attributes of /devices/nodes/<node>.
inline constexpr const char* kAttrNode = "node";
inline constexpr const char* kAttrDevicePrefix = "device_";  // device_<slot>: what it is
inline constexpr const char* kAttrRefused = "refused";       // pairs whose copy was refused, why
}  // namespace devices

// ---- /linkscan/ ----  the link scan: node pairs over UCX (or MPI), one rail at a time.
inline constexpr const char* kLinkscanGroup = "/linkscan";
inline constexpr const char* kLinkscanRailTemplate = "/linkscan/<rail>";
namespace linkscan {
inline constexpr Dataset<std::int64_t> kNodes{
    {kLinkscanRailTemplate, "nodes", Elem::kInt64, "N", "node",
     "the node of each scan position (the nodes that have a rank on this rail)"}};
inline constexpr Dataset<std::int64_t> kRanks{
    {kLinkscanRailTemplate, "ranks", Elem::kInt64, "N", "rank", "the rank that stood for it"}};
inline constexpr Dataset<std::int64_t> kPairs{
    {kLinkscanRailTemplate, "pairs", Elem::kInt64, "P, 2", "position",
     "each tested pair (a, b), a < b, scan positions; a initiates and times", false}};
inline constexpr Dataset<std::int64_t> kPass{
    {kLinkscanRailTemplate, "pass", Elem::kInt64, "P", "",
     "1: the scan; 2: a retest of a suspect (against good partners, or its slow pair again); 3: a "
     "failed retest run once more (it counts only when it fails again)",
     false}};
inline constexpr Dataset<std::int64_t> kRound{
    {kLinkscanRailTemplate, "round", Elem::kInt64, "P", "",
     "the round it ran in (pairs of a round run at the same time)", false}};
inline constexpr Dataset<double> kBwGBps{
    {kLinkscanRailTemplate, "bw_GBps", Elem::kFloat64, "P, reps", "GB/s",
     "bytes x window / the sender's time from the first send to the receiver's acknowledgement "
     "(NaN: failed)",
     false}};
inline constexpr Dataset<double> kLatUs{
    {kLinkscanRailTemplate, "lat_us", Elem::kFloat64, "P", "us",
     "median half round trip of lat_bytes messages (NaN: failed)", false}};
inline constexpr Dataset<double> kLatP99Us{
    {kLinkscanRailTemplate, "lat_p99_us", Elem::kFloat64, "P", "us", "its 99th percentile", false}};
// Attributes of /linkscan.
inline constexpr const char* kAttrTransport = "transport";
inline constexpr const char* kAttrSchedule = "schedule";
inline constexpr const char* kAttrSeed = "seed";
inline constexpr const char* kAttrBytes = "bytes";
inline constexpr const char* kAttrWindow = "window";
inline constexpr const char* kAttrReps = "reps";
inline constexpr const char* kAttrWarmup = "warmup";
inline constexpr const char* kAttrLatBytes = "lat_bytes";
inline constexpr const char* kAttrLatIters = "lat_iters";
inline constexpr const char* kAttrBwFraction = "bw_fraction";
inline constexpr const char* kAttrLatFactor = "lat_factor";
inline constexpr const char* kAttrRails = "rails";
inline constexpr const char* kAttrConcurrent = "concurrent";
inline constexpr const char* kAttrBidirectional = "bidirectional";
inline constexpr const char* kAttrMemory = "memory";
inline constexpr const char* kAttrMemoryNote = "memory_note";
// Attributes of /linkscan/<rail>.
inline constexpr const char* kAttrRail = "rail";
inline constexpr const char* kAttrNetDevices = "net_devices";
inline constexpr const char* kAttrRetestBudget = "retest_budget";
inline constexpr const char* kAttrTransports = "transports";
inline constexpr const char* kAttrSkipped = "skipped";
inline constexpr const char* kAttrPasses = "passes";
}  // namespace linkscan

// ---- /telemetry/ ----  hardware signals sampled on each node while the phases ran (one sampler
// thread on the node's first rank; telemetry/). Channels are one signal of one device; the node
// keeps per phase each channel's min/median/max and a decimated series, and the full-rate series
// only for phases in which it saw an event (telemetry.keep: all keeps it always).
inline constexpr const char* kTelemetryGroup = "/telemetry";
inline constexpr const char* kTelemetryNodeTemplate = "/telemetry/<node>";
namespace telemetry {
inline constexpr Dataset<double> kBase{
    {kTelemetryNodeTemplate, "base", Elem::kFloat64, "C", "",
     "each counter channel's value at the node's first sample (NaN: a gauge or bit mask); "
     "counters are stored as their increase since then"}};
inline constexpr Dataset<double> kPhaseStartUs{
    {kTelemetryNodeTemplate, "phase_start_us", Elem::kFloat64, "P", "us",
     "each phase's start on rank 0's clock (/clock), in the order of the phases attribute"}};
inline constexpr Dataset<double> kPhaseEndUs{
    {kTelemetryNodeTemplate, "phase_end_us", Elem::kFloat64, "P", "us", "and its end"}};
inline constexpr Dataset<std::int64_t> kPhaseSamples{
    {kTelemetryNodeTemplate, "phase_samples", Elem::kInt64, "P", "samples",
     "samples taken since the previous phase ended (0: the sampler gave none)"}};
inline constexpr Dataset<float> kStats{
    {kTelemetryNodeTemplate, "stats", Elem::kFloat32, "P, C, 3", "channel's unit",
     "per phase and channel: min, median and max of its samples (NaN: no value); every "
     "telemetry float32 keeps 12 significant bits (0.024%)"}};
inline constexpr Dataset<double> kDecimatedTimeUs{
    {kTelemetryNodeTemplate, "decimated_time_us", Elem::kFloat64, "D", "us",
     "each decimation window's first sample, rank 0's clock (absent: no phase had a sample)",
     false}};
inline constexpr Dataset<float> kDecimated{
    {kTelemetryNodeTemplate, "decimated", Elem::kFloat32, "D, C", "channel's unit",
     "per window of decimate_ms: gauges' mean, counters' last, bit masks' OR", false}};
inline constexpr Dataset<double> kFullTimeUs{
    {kTelemetryNodeTemplate, "full_time_us", Elem::kFloat64, "F", "us",
     "every sample's time, for the phases kept at full rate", false}};
inline constexpr Dataset<float> kFull{{kTelemetryNodeTemplate, "full", Elem::kFloat32, "F, C",
                                       "channel's unit", "every sample of those phases", false}};
// Attributes of /telemetry.
inline constexpr const char* kAttrIntervalMs = "interval_ms";
inline constexpr const char* kAttrDecimateMs = "decimate_ms";
inline constexpr const char* kAttrKeep = "keep";
// Attributes of /telemetry/<node>.
inline constexpr const char* kAttrNode = "node";
inline constexpr const char* kAttrHost = "host";
inline constexpr const char* kAttrDevices = "devices";  // comma-separated, one per channel
inline constexpr const char* kAttrSignals = "signals";
inline constexpr const char* kAttrUnits = "units";
inline constexpr const char* kAttrKinds = "kinds";
inline constexpr const char* kAttrGpuBusIds = "gpu_bus_ids";  // comma-separated, by NVML index
inline constexpr const char* kAttrPhases = "phases";          // comma-separated
inline constexpr const char* kAttrNotes = "notes";            // one per line
inline constexpr const char* kAttrEvents = "events";          // "<phase>: <what>" one per line
inline constexpr const char* kAttrSampleCostUs = "sample_cost_us";
inline constexpr const char* kAttrSamplerCpus = "sampler_cpus";
}  // namespace telemetry

// ---- /analysis/ ----  written by `run` when the run completes; `summary` recomputes the same
// verdict for files without it (aborted runs, files of older versions).
inline constexpr const char* kAnalysisGroup = "/analysis";
inline constexpr const char* kAnalysisChecks = "/analysis/checks";  // table, one row per Finding
namespace findings {
inline constexpr const char* kCheck = "check";
inline constexpr const char* kStatus = "status";  // "pass" | "warn" | "fail" | "skip"
inline constexpr const char* kSubjectKind = "subject_kind";
inline constexpr const char* kSubject = "subject";
inline constexpr const char* kValue = "value";        // double, NaN when none
inline constexpr const char* kExpected = "expected";  // double, NaN when none
inline constexpr const char* kUnit = "unit";
inline constexpr const char* kEvidence = "evidence";
inline constexpr const char* kMessage = "message";
inline constexpr const char* kHost = "host";              // to drain when failed; "" none
inline constexpr const char* kNode = "node";              // int64, -1 none
inline constexpr const char* kRank = "rank";              // int64, -1 none
inline constexpr const char* kCorruption = "corruption";  // int64 0/1
}  // namespace findings
// attributes on /analysis
inline constexpr const char* kAttrVerdict = "verdict";  // the headline
inline constexpr const char* kAttrExitCode = "exit_code";
inline constexpr const char* kAttrTested = "tested";  // what was measured, in words
inline constexpr const char* kAttrPassed = "checks_passed";
inline constexpr const char* kAttrWarned = "checks_warned";
inline constexpr const char* kAttrFailed = "checks_failed";
inline constexpr const char* kAttrSkipped = "checks_skipped";

// ---- composed paths ----
inline std::string join(std::string_view parent, std::string_view child) {
  std::string out(parent);
  if (out.empty() || out.back() != '/') out += '/';
  out += child;
  return out;
}
// "/collectives/<scope>/<op>"
inline std::string collective_group(std::string_view scope, std::string_view op) {
  return join(join(kCollectivesGroup, scope), op);
}
// kSweepTemplate filled: "/collectives/<scope>/<op>/<dtype>/<mode>"
inline std::string sweep_group(std::string_view scope, std::string_view op, std::string_view dtype,
                               std::string_view mode) {
  return join(join(collective_group(scope, op), dtype), mode);
}
// "/devices/memory/<test>", "/devices/nodes/node<N>"
inline std::string devices_memory_group(std::string_view test) {
  return join("/devices/memory", test);
}
inline std::string devices_node_group(int node) {
  return join("/devices/nodes", "node" + std::to_string(node));
}
// "/linkscan/rail<L>"
inline std::string linkscan_rail_group(int rail) {
  return join(kLinkscanGroup, "rail" + std::to_string(rail));
}
// "/telemetry/node<N>"
inline std::string telemetry_node_group(int node) {
  return join(kTelemetryGroup, "node" + std::to_string(node));
}
// "/gemm/<shape>"
inline std::string gemm_group(std::string_view shape) {
  return join(kGemmGroup, shape);
}

}  // namespace shakedown::schema
