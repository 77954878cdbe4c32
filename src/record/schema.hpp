#pragma once
// Every name in the run's HDF5 file (docs/architecture.md "The run file"), in one place, so the
// writer, the reader, the analysis and scripts/analyze.py cannot drift apart. Changing a name or a
// layout means bumping kSchemaVersion; adding a dataset or a table column does not (readers ignore
// what they do not know and default what is missing).
#include <cstdint>
#include <string>
#include <string_view>

namespace shakedown::schema {

inline constexpr int kSchemaVersion = 2;
// Readers also read files of these earlier versions (schema 1: arrival_us stamped after the
// barrier, so lateness is not judged from it).
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

// ---- /clock ----  offsets of each rank's clock from rank 0's, and the ping-pong round trip.
inline constexpr const char* kClockGroup = "/clock";
inline constexpr const char* kClockOffsetUs = "/clock/offset_us";  // double [world]
inline constexpr const char* kClockRttUs = "/clock/rtt_us";        // double [world]

// ---- /collectives/<scope>/<op>/ ----
inline constexpr const char* kCollectivesGroup = "/collectives";
inline constexpr const char* kScopeWorld = "world";
inline constexpr const char* kScopeIntraNode = "intra_node";
inline constexpr const char* kScopeInterNode = "inter_node";
inline constexpr const char* kScopePairs = "pairs";
// One sweep: /collectives/<scope>/<op>/<dtype>[_<reduce>]/<in_place|out_of_place>/, attrs scope,
// collective, dtype, reduce_op, in_place, nranks, busbw_factor, link_GBps, planned_sizes, and
// unsupported (then no datasets). A scope that cannot run has attr skipped on its group.
inline constexpr const char* kCollSizes = "sizes";           // uint64 [S] bytes
inline constexpr const char* kCollCount = "count";           // uint64 [S] elements per rank
inline constexpr const char* kCollSkipped = "skipped";       // int64 [S] 0 ran, 1 too small, 2 OOM
inline constexpr const char* kCollTimeUs = "time_us";        // double [S, iters, world]
inline constexpr const char* kCollArrivalUs = "arrival_us";  // double [S, iters, world]
inline constexpr const char* kCollWrong = "wrong";           // int64 [S, world]
inline constexpr const char* kCollFirstWrong = "first_wrong";  // int64 [S, world]
inline constexpr const char* kCollTimeMedUs = "time_med_us";   // double [S]
inline constexpr const char* kCollTimeP5Us = "time_p5_us";     // double [S]
inline constexpr const char* kCollTimeP95Us = "time_p95_us";   // double [S]
inline constexpr const char* kCollAlgbwGBps = "algbw_GBps";    // double [S]
inline constexpr const char* kCollBusbwGBps = "busbw_GBps";    // double [S]
inline constexpr std::int64_t kCollMeasured = 0;
inline constexpr std::int64_t kCollTooSmall = 1;
inline constexpr std::int64_t kCollOutOfMemory = 2;

// ---- /linkscan/ ----
inline constexpr const char* kLinkscanGroup = "/linkscan";
inline constexpr const char* kLinkscanPairs = "/linkscan/pairs";     // int64 [P, 2] node indices
inline constexpr const char* kLinkscanBwGBps = "/linkscan/bw_GBps";  // double [P, reps]
inline constexpr const char* kLinkscanLatUs = "/linkscan/lat_us";    // double [P, reps]
inline constexpr const char* kLinkscanRound = "/linkscan/round";     // int64 [P]

// ---- /gemm/<shape>/ ----
inline constexpr const char* kGemmGroup = "/gemm";
// attrs: order (1, 2, ... as run), m, n, k, a_format, b_format, out_dtype, fast_accum, flop,
// engine, skipped (0 measured, 2 out of memory; then skip_reason), hash_groups and hash_group_<g>
// (engine description).
inline constexpr const char* kGemmTflops = "tflops";                  // double [iters, world]
inline constexpr const char* kGemmTimeUs = "time_us";                 // double [iters, world]
inline constexpr const char* kGemmMaxRelErr = "max_rel_err";          // double [world], normwise
inline constexpr const char* kGemmErrBoundRatio = "err_bound_ratio";  // double [world], > 1 wrong
inline constexpr const char* kGemmWorstIndex = "worst_index";         // int64 [world], index in D
inline constexpr const char* kGemmWorstExpected = "worst_expected";   // double [world], fp64
inline constexpr const char* kGemmWorstGot = "worst_got";             // double [world]
inline constexpr const char* kGemmRowsChecked = "rows_checked";       // int64 [world]
inline constexpr const char* kGemmOutputHash = "output_hash";         // uint64 [world]
inline constexpr const char* kGemmHashGroup = "hash_group";  // int64 [world]: hash_group_<g>

// ---- /train/ ----
inline constexpr const char* kTrainGroup = "/train";
inline constexpr const char* kTrainStepMs = "/train/step_ms";    // double [steps, world]
inline constexpr const char* kTrainPhaseMs = "/train/phase_ms";  // double [steps, world, phases]
inline constexpr const char* kAttrPhaseNames = "phase_names";    // on phase_ms: "fwd,bwd,..."
inline constexpr const char* kAttrTokensPerS = "tokens_per_s";   // on /train
inline constexpr const char* kAttrMfu = "mfu";                   // on /train

// ---- /checkpoint/ ----
inline constexpr const char* kCheckpointGroup = "/checkpoint";
inline constexpr const char* kCheckpointBytes = "/checkpoint/bytes";     // uint64 [world]
inline constexpr const char* kCheckpointWriteS = "/checkpoint/write_s";  // double [iters, world]
inline constexpr const char* kCheckpointReadS = "/checkpoint/read_s";    // double [iters, world]
inline constexpr const char* kCheckpointVerifyOk = "/checkpoint/verify_ok";  // int64 [world] 0/1
inline constexpr const char* kAttrWriteGBps = "write_GBps";                  // on /checkpoint
inline constexpr const char* kAttrReadGBps = "read_GBps";                    // on /checkpoint

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
// "/gemm/<shape>"
inline std::string gemm_group(std::string_view shape) {
  return join(kGemmGroup, shape);
}

}  // namespace shakedown::schema
