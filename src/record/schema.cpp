#include "record/schema.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

namespace shakedown::schema {

std::string_view elem_name(Elem elem) {
  switch (elem) {
    case Elem::kFloat64:
      return "float64";
    case Elem::kFloat32:
      return "float32";
    case Elem::kInt64:
      return "int64";
    case Elem::kUint64:
      return "uint64";
    case Elem::kTable:
      return "table";
  }
  return "?";
}

std::size_t DatasetSpec::rank() const {
  if (elem == Elem::kTable || dims.empty()) return elem == Elem::kTable ? 1 : 0;
  std::size_t n = 1;
  for (char c : dims) n += c == ',' ? 1 : 0;
  return n;
}

std::string DatasetSpec::path(std::string_view group_path) const {
  return join(group_path, name);
}

namespace {

constexpr DatasetSpec kTables[] = {
    {kTopologyGroup, "ranks", Elem::kTable, "world", "",
     "one row per rank: where it runs (host, node, CPUs, NUMA, GPU, NIC, Slurm ids, leaf "
     "switch, NVLink block); columns in schema::ranks"},
    {kTopologyGroup, "placement_checks", Elem::kTable, "checks", "",
     "the placement checks: name, status (pass, warn, fail, skip), reason"},
    {kInventoryGroup, "nodes", Elem::kTable, "nodes", "",
     "one row per node: CPU, cores, memory, OS, kernel, driver and library versions"},
    {kInventoryGroup, "gpus", Elem::kTable, "GPUs", "", "one row per GPU per node", false},
    {kInventoryGroup, "nics", Elem::kTable, "NICs", "", "one row per NIC per node", false},
    {kInventoryGroup, "facts", Elem::kTable, "facts", "",
     "one row per node and fact of its set-up the audit checks: key, value ('unknown (why)' when "
     "unreadable), where it was read",
     false},
    {kAnalysisGroup, "checks", Elem::kTable, "findings", "",
     "the verdict's findings: check, status, subject_kind, subject, value, expected, unit, "
     "evidence, message, host, node, rank, corruption"},
};

const std::vector<DatasetSpec>& datasets() {
  static const std::vector<DatasetSpec> all = [] {
    std::vector<DatasetSpec> v(std::begin(kTables), std::end(kTables));
    for (const DatasetSpec& d : {kClockOffsetUs.spec,
                                 kClockRttUs.spec,
                                 coll::kSizes.spec,
                                 coll::kCount.spec,
                                 coll::kSkipped.spec,
                                 coll::kRanks.spec,
                                 coll::kTimeUs.spec,
                                 coll::kArrivalUs.spec,
                                 coll::kArrivalBaseUs.spec,
                                 coll::kWaitUs.spec,
                                 coll::kWrong.spec,
                                 coll::kFirstWrong.spec,
                                 coll::kTimeMedUs.spec,
                                 coll::kTimeP5Us.spec,
                                 coll::kTimeP95Us.spec,
                                 coll::kAlgbwGBps.spec,
                                 coll::kBusbwGBps.spec,
                                 gemm::kTflops.spec,
                                 gemm::kTimeUs.spec,
                                 gemm::kMaxRelErr.spec,
                                 gemm::kErrBoundRatio.spec,
                                 gemm::kWorstIndex.spec,
                                 gemm::kWorstExpected.spec,
                                 gemm::kWorstGot.spec,
                                 gemm::kRowsChecked.spec,
                                 gemm::kOutputHash.spec,
                                 gemm::kHashGroup.spec,
                                 training::kStepMs.spec,
                                 training::kFwdMs.spec,
                                 training::kBwdMs.spec,
                                 training::kTpCommMs.spec,
                                 training::kDpExposedMs.spec,
                                 training::kDpSpanMs.spec,
                                 training::kOptimMs.spec,
                                 training::kDpArrivalUs.spec,
                                 training::kZeroGradShare.spec,
                                 training::kParamHash.spec,
                                 training::kBucketStartUs.spec,
                                 training::kBucketEndUs.spec,
                                 training::kBucketBytes.spec,
                                 training::kTpRank.spec,
                                 training::kDpRank.spec,
                                 training::kScalesFinite.spec,
                                 devices::kAloneGBps.spec,
                                 devices::kTogetherGBps.spec,
                                 devices::kFreeBytes.spec,
                                 devices::kTotalBytes.spec,
                                 devices::kPcieCurrentGTs.spec,
                                 devices::kPcieMaxGTs.spec,
                                 devices::kPcieCurrentWidth.spec,
                                 devices::kPcieMaxWidth.spec,
                                 devices::kNicPcieCurrentGTs.spec,
                                 devices::kNicPcieMaxGTs.spec,
                                 devices::kNicPcieCurrentWidth.spec,
                                 devices::kNicPcieMaxWidth.spec,
                                 devices::kNodeRanks.spec,
                                 devices::kUnidirectionalGBps.spec,
                                 devices::kBidirectionalGBps.spec,
                                 devices::kConcurrentGBps.spec,
                                 linkscan::kNodes.spec,
                                 linkscan::kRanks.spec,
                                 linkscan::kPairs.spec,
                                 linkscan::kPass.spec,
                                 linkscan::kRound.spec,
                                 linkscan::kBwGBps.spec,
                                 linkscan::kLatUs.spec,
                                 linkscan::kLatP99Us.spec,
                                 checkpoint::kBytes.spec,
                                 checkpoint::kReadsShardOf.spec,
                                 checkpoint::kOpenS.spec,
                                 checkpoint::kWriteS.spec,
                                 checkpoint::kFsyncS.spec,
                                 checkpoint::kCloseS.spec,
                                 checkpoint::kReadS.spec,
                                 checkpoint::kWriteStartS.spec,
                                 checkpoint::kWriteEndS.spec,
                                 checkpoint::kReadStartS.spec,
                                 checkpoint::kReadEndS.spec,
                                 checkpoint::kVerifyOk.spec,
                                 checkpoint::kBadOffset.spec,
                                 checkpoint::kCacheDropped.spec,
                                 checkpoint::kWriteGBps.spec,
                                 checkpoint::kReadGBps.spec,
                                 checkpoint::kRestoreS.spec,
                                 checkpoint::kSnapshotS.spec,
                                 checkpoint::kStepMsBefore.spec,
                                 checkpoint::kStepMsDuring.spec,
                                 checkpoint::kStepsDuring.spec,
                                 telemetry::kBase.spec,
                                 telemetry::kPhaseStartUs.spec,
                                 telemetry::kPhaseEndUs.spec,
                                 telemetry::kPhaseSamples.spec,
                                 telemetry::kStats.spec,
                                 telemetry::kDecimatedTimeUs.spec,
                                 telemetry::kDecimated.spec,
                                 telemetry::kFullTimeUs.spec,
                                 telemetry::kFull.spec}) {
      v.push_back(d);
    }
    return v;
  }();
  return all;
}

constexpr AttrSpec kAttrs[] = {
    {kRoot, kAttrSchemaVersion, "int64", "this layout's version"},
    {kRoot, kAttrShakedownVersion, "string",
     "the writer's version and git hash (+sanitize=... for a sanitizer build)"},
    {kRoot, kAttrCommandLine, "string", "as typed, shell-quoted"},
    {kRoot, kAttrConfigYaml, "string", "the effective configuration"},
    {kRoot, kAttrStartedUtc, "string", "ISO-8601 UTC"},
    {kRoot, kAttrFinishedUtc, "string", "\"\" while running"},
    {kRoot, kAttrStatus, "string", "running, complete or aborted"},
    {kRoot, kAttrWorldSize, "int64", "ranks"},
    {kRoot, kAttrNodeCount, "int64", "nodes"},
    {kRoot, kAttrVirtualNodes, "int64", "pretend nodes per host, 0 real nodes"},
    {kRoot, kAttrBackend, "string",
     "what ran, per phase: \"devices cpu, collectives mpi, gemm cpu, linkscan ucx\""},
    {kRoot, kAttrAbortReason, "string", "why the run was aborted (only then)"},
    {kRoot, kAttrAbortPhase, "string",
     "the phase an aborted run was in (only then; absent when it ended between phases)"},
    {kCollectivesGroup, coll::kAttrBackend, "string", "mpi or nccl"},
    {kCollectivesGroup, coll::kAttrWrongTotal, "int64", "wrong elements over every sweep"},
    {kCollectivesGroup, coll::kAttrSecondsWall, "float64",
     "rank 0's seconds in the phase, until its rows were written"},
    {kCollectivesGroup, coll::kAttrSecondsTimed, "float64",
     "of them, in the timed iterations (barrier and collective)"},
    {kCollectivesGroup, coll::kAttrSecondsPrepare, "float64",
     "in allocation, fills, the validation run and its check, and warm-up"},
    {kCollectivesGroup, coll::kAttrSecondsRecord, "float64",
     "in gathering each size to rank 0 and writing it (handing it to the writer thread when "
     "recording is background)"},
    {kCollectivesGroup, coll::kAttrRecording, "string",
     "background: rank 0's writer thread wrote each size behind the next measurement (rank 0 "
     "may use 2 CPUs or more, or its host has CPUs no rank is bound to); inline: rank 0 wrote "
     "it before going on"},
    {kCollectivesGroup, coll::kAttrRecordingCpus, "string",
     "the CPUs the writer thread ran on (rank 0's own, or its host's that no rank is bound "
     "to); empty when inline"},
    {"/collectives/<scope>", coll::kAttrScopeSkipped, "string",
     "why the scope could not run (then it has no sweeps)"},
    {kSweepTemplate, coll::kAttrScope, "string", "world, intra_node, inter_node, rail_<L>"},
    {kSweepTemplate, coll::kAttrCollective, "string", "all_reduce, all_gather, ..."},
    {kSweepTemplate, coll::kAttrDtype, "string", "element type"},
    {kSweepTemplate, coll::kAttrReduceOp, "string", "sum, max, ... (\"\" for non-reducing)"},
    {kSweepTemplate, coll::kAttrInPlace, "int64", "1 in place, 0 out of place"},
    {kSweepTemplate, coll::kAttrNranks, "int64", "ranks in one instance of the scope"},
    {kSweepTemplate, coll::kAttrBusbwFactor, "float64", "busbw = algbw x this"},
    {kSweepTemplate, coll::kAttrLinkGBps, "float64", "the path's configured rate, 0 unknown"},
    {kSweepTemplate, coll::kAttrPlannedSizes, "int64", "sizes the sweep set out to measure"},
    {kSweepTemplate, coll::kAttrUnsupported, "string", "not run, and why (then no datasets)"},
    {kGemmTemplate, gemm::kAttrOrder, "int64", "1, 2, ... in the order the shapes ran"},
    {kGemmTemplate, gemm::kAttrM, "int64", "rows of A and D"},
    {kGemmTemplate, gemm::kAttrN, "int64", "columns of B and D"},
    {kGemmTemplate, gemm::kAttrK, "int64", "the inner dimension"},
    {kGemmTemplate, gemm::kAttrAFormat, "string", "e4m3 or e5m2"},
    {kGemmTemplate, gemm::kAttrBFormat, "string", "e4m3 or e5m2"},
    {kGemmTemplate, gemm::kAttrOutDtype, "string", "bf16, fp16 or fp32"},
    {kGemmTemplate, gemm::kAttrFastAccum, "int64", "1: cuBLASLt fast accumulation"},
    {kGemmTemplate, gemm::kAttrFlop, "float64", "2mnk"},
    {kGemmTemplate, gemm::kAttrEngine, "string", "cpu or cublaslt"},
    {kGemmTemplate, gemm::kAttrSkipped, "int64", "0 measured, 2 out of memory"},
    {kGemmTemplate, gemm::kAttrSkipReason, "string", "why not measured (only then)"},
    {kGemmTemplate, gemm::kAttrHashGroups, "int64", "engine groups whose hashes are compared"},
    {kGemmTemplate, "hash_group_<g>", "string", "group g's engine, library and device"},
    {kGemmTemplate, gemm::kAttrUnchecked, "string", "ranks whose output was not checked, and why"},
    {kTrainGroup, training::kAttrModel, "string", "custom or the preset (train.model)"},
    {kTrainGroup, training::kAttrLayers, "int64", "layers that ran"},
    {kTrainGroup, training::kAttrHidden, "int64", "hidden size"},
    {kTrainGroup, training::kAttrFfnHidden, "int64", "MLP hidden size"},
    {kTrainGroup, training::kAttrHeads, "int64", "attention heads"},
    {kTrainGroup, training::kAttrKvHeads, "int64", "key/value heads"},
    {kTrainGroup, training::kAttrSeqLen, "int64", "tokens per sequence"},
    {kTrainGroup, training::kAttrMicroBatch, "int64", "sequences per replica per step"},
    {kTrainGroup, training::kAttrMlp, "string", "gelu or swiglu"},
    {kTrainGroup, training::kAttrTp, "int64", "tensor-parallel ranks (inside a node)"},
    {kTrainGroup, training::kAttrDp, "int64", "data-parallel replicas"},
    {kTrainGroup, training::kAttrZero, "int64", "0 all-reduced gradients, 1 distributed optimizer"},
    {kTrainGroup, training::kAttrSequenceParallel, "int64", "1: sequence parallelism"},
    {kTrainGroup, training::kAttrOverlap, "int64", "1: DP reduction overlapped with backward"},
    {kTrainGroup, training::kAttrRecipe, "string", "delayed or current scaling"},
    {kTrainGroup, training::kAttrFormat, "string", "e4m3 or hybrid (E5M2 gradients)"},
    {kTrainGroup, training::kAttrEngine, "string", "the GEMM engine (cpu, cublaslt)"},
    {kTrainGroup, training::kAttrCommunication, "string",
     "mpi (host buffers) or nccl (device-resident step); absent in files before it: mpi"},
    {kTrainGroup, training::kAttrWarmupSteps, "int64", "steps run before the measured ones"},
    {kTrainGroup, training::kAttrStepsPlanned, "int64",
     "measured steps the phase set out to run (train.steps); the step datasets hold those that "
     "completed, one appended per step"},
    {kTrainGroup, training::kAttrParameters, "int64", "the model's parameters (all ranks)"},
    {kTrainGroup, training::kAttrRankFlop, "float64",
     "model FLOPs of one step on one rank (the replica's / tp; attention counted in full)"},
    {kTrainGroup, training::kAttrTokensPerStep, "int64", "tokens of one step over all replicas"},
    {kTrainGroup, training::kAttrMemoryBytes, "float64",
     "memory one GPU would need for this config (shakedown plan's budget)"},
    {kTrainGroup, training::kAttrMemoryDeviceBytes, "float64",
     "rank 0's GPU memory, 0 without a GPU"},
    {kTrainGroup, training::kAttrMemoryDevice, "string", "that GPU's name, \"\" none"},
    {kTrainGroup, training::kAttrMemoryItems, "string", "the budget's items, one per line"},
    {kDevicesGroup, devices::kAttrPath, "string", "cpu (host memory, MPI shared memory) or cuda"},
    {kDevicesGroup, devices::kAttrTrials, "int64", "timed trials per test and pair"},
    {kDevicesGroup, devices::kAttrWarmup, "int64", "untimed trials before them"},
    {kDevicesGroup, devices::kAttrBytes, "int64", "each buffer of the copy and triad"},
    {kDevicesGroup, devices::kAttrCopyBytes, "int64", "each host<->device and pair copy"},
    {kDevicesGroup, devices::kAttrPairs, "string", "none, ring or all"},
    {kDevicesGroup, devices::kAttrTests, "string", "the tests, in the order they ran"},
    {kDevicesMemoryTemplate, devices::kAttrBytesCounted, "float64", "bytes counted per trial"},
    {kDevicesMemoryTemplate, devices::kAttrCounted, "string",
     "which: \"read + written (STREAM)\" or \"copied\""},
    {kDevicesNodeTemplate, devices::kAttrNode, "int64", "the node's index"},
    {kDevicesNodeTemplate, "device_<slot>", "string", "the device of each slot"},
    {kDevicesNodeTemplate, devices::kAttrRefused, "string",
     "pairs whose buffer could not be opened, and why (\"\" none)"},
    {kLinkscanGroup, linkscan::kAttrTransport, "string", "ucx or mpi"},
    {kLinkscanGroup, linkscan::kAttrSchedule, "string", "all_pairs or random"},
    {kLinkscanGroup, linkscan::kAttrSeed, "uint64", "random: round r shuffled with seed + r"},
    {kLinkscanGroup, linkscan::kAttrBytes, "int64", "each bandwidth message"},
    {kLinkscanGroup, linkscan::kAttrWindow, "int64", "messages in flight per window"},
    {kLinkscanGroup, linkscan::kAttrReps, "int64", "timed windows per pair"},
    {kLinkscanGroup, linkscan::kAttrWarmup, "int64", "untimed windows before them"},
    {kLinkscanGroup, linkscan::kAttrLatBytes, "int64", "each latency message"},
    {kLinkscanGroup, linkscan::kAttrLatIters, "int64", "round trips per pair"},
    {kLinkscanGroup, linkscan::kAttrBwFraction, "float64",
     "a pair is suspect below this fraction of the pass's best bandwidth"},
    {kLinkscanGroup, linkscan::kAttrLatFactor, "float64",
     "... or above this factor times its lowest latency"},
    {kLinkscanGroup, linkscan::kAttrRails, "string", "auto, first or the UCX devices given"},
    {kLinkscanGroup, linkscan::kAttrConcurrent, "int64",
     "1: a round's pairs ran at once; 0: one after another (linkscan.concurrent false, or auto "
     "and a host ran more ranks than CPUs)"},
    {kLinkscanGroup, linkscan::kAttrBidirectional, "int64",
     "1: both ends sent at once and bw_GBps counts both directions; 0: one way"},
    {kLinkscanGroup, linkscan::kAttrMemory, "string",
     "where the bandwidth messages lived: host, or cuda (each rank's GPU memory)"},
    {kLinkscanGroup, linkscan::kAttrMemoryNote, "string",
     "why linkscan.memory auto chose host memory (\"\" when it did not)"},
    {kLinkscanRailTemplate, linkscan::kAttrRail, "int64", "the local rank whose NIC it is"},
    {kLinkscanRailTemplate, linkscan::kAttrNetDevices, "string",
     "UCX_NET_DEVICES of its ranks (\"\": UCX's choice)"},
    {kLinkscanRailTemplate, linkscan::kAttrRetestBudget, "int64", "retest pairs allowed"},
    {kLinkscanRailTemplate, linkscan::kAttrTransports, "string",
     "per pair, what carried it: \"a-b: transport/device,...\" one per line"},
    {kLinkscanRailTemplate, linkscan::kAttrSkipped, "string",
     "why the rail was not scanned (\"\": it was)"},
    {kLinkscanRailTemplate, linkscan::kAttrPasses, "int64",
     "passes recorded, each appended when measured: 1 the scan, 2 its retests, 3 the failed "
     "retests again (fewer: the run stopped during the next; absent in files before it)"},
    {kCheckpointGroup, checkpoint::kAttrLayout, "string", "file_per_process or shared_file"},
    {kCheckpointGroup, checkpoint::kAttrApi, "string", "posix or mpiio"},
    {kCheckpointGroup, checkpoint::kAttrDir, "string", "the folder this run's checkpoints went to"},
    {kCheckpointGroup, checkpoint::kAttrFsType, "string", "its file system (ext4, lustre, ...)"},
    {kCheckpointGroup, checkpoint::kAttrFsMount, "string", "its mount point"},
    {kCheckpointGroup, checkpoint::kAttrFsOptions, "string", "its mount options"},
    {kCheckpointGroup, checkpoint::kAttrFsNodeLocal, "int64",
     "1: a file system of one node (a restore on another node cannot read it)"},
    {kCheckpointGroup, checkpoint::kAttrBlockSize, "int64", "bytes per write or read call"},
    {kCheckpointGroup, checkpoint::kAttrFsync, "int64", "1: fsync inside the timed write"},
    {kCheckpointGroup, checkpoint::kAttrDirectIo, "int64", "1: O_DIRECT"},
    {kCheckpointGroup, checkpoint::kAttrKept, "string",
     "the checkpoint left on disk (checkpoint.keep), \"\" none"},
    {kCheckpointGroup, checkpoint::kAttrAsync, "int64",
     "1: written by a background thread while training's stand-in ran"},
    {kTelemetryGroup, telemetry::kAttrIntervalMs, "int64", "the sampling interval"},
    {kTelemetryGroup, telemetry::kAttrDecimateMs, "int64", "the decimation window"},
    {kTelemetryGroup, telemetry::kAttrKeep, "string",
     "events (full rate only for phases with an event) or all"},
    {kTelemetryNodeTemplate, telemetry::kAttrNode, "int64", "the node's index"},
    {kTelemetryNodeTemplate, telemetry::kAttrHost, "string", "its host name"},
    {kTelemetryNodeTemplate, telemetry::kAttrDevices, "string",
     "each channel's device (host, gpu<i>, <ib device>:<port>), comma-separated"},
    {kTelemetryNodeTemplate, telemetry::kAttrSignals, "string", "each channel's signal"},
    {kTelemetryNodeTemplate, telemetry::kAttrUnits, "string", "each channel's unit"},
    {kTelemetryNodeTemplate, telemetry::kAttrKinds, "string", "gauge, counter or bits"},
    {kTelemetryNodeTemplate, telemetry::kAttrGpuBusIds, "string",
     "each GPU's PCI bus id by NVML index (ties gpu<i> to the ranks using it)"},
    {kTelemetryNodeTemplate, telemetry::kAttrPhases, "string", "the phases recorded, in order"},
    {kTelemetryNodeTemplate, telemetry::kAttrNotes, "string",
     "what was not sampled and why, one per line"},
    {kTelemetryNodeTemplate, telemetry::kAttrEvents, "string",
     "per phase, what kept it at full rate (\"<phase>: gpu1 throttled (hw_slowdown)\")"},
    {kTelemetryNodeTemplate, telemetry::kAttrSampleCostUs, "float64",
     "the sampler's mean time per sample"},
    {kTelemetryNodeTemplate, telemetry::kAttrSamplerCpus, "string",
     "the CPUs the sampler ran on (none of the host's ranks is bound to them), or why it shared "
     "theirs"},
    {kAnalysisGroup, kAttrVerdict, "string", "the verdict's headline"},
    {kAnalysisGroup, kAttrExitCode, "int64", "0 pass, 1 a check failed, 3 corruption"},
    {kAnalysisGroup, kAttrTested, "string", "what was measured, in words"},
    {kAnalysisGroup, kAttrPassed, "int64", "checks by their worst finding"},
    {kAnalysisGroup, kAttrWarned, "int64", ""},
    {kAnalysisGroup, kAttrFailed, "int64", ""},
    {kAnalysisGroup, kAttrSkipped, "int64", ""},
};

}  // namespace

std::span<const DatasetSpec> all_datasets() {
  return datasets();
}
std::span<const AttrSpec> all_attrs() {
  return kAttrs;
}

std::string schema_markdown() {
  std::ostringstream os;
  os << "# The run file's layout (schema " << kSchemaVersion << ")\n\n"
     << "Generated from `src/record/schema.hpp` (a unit test fails when this file is out of "
        "date; the test prints how to regenerate it). `<scope>`, `<op>`, `<dtype>`, `<mode>` "
        "and `<shape>` stand for names chosen at run time; dimensions are listed outermost "
        "first, and appended datasets grow along the first as each step is measured. "
        "`scripts/schema.json` holds the same for Python.\n\n"
     << "## Datasets\n\n| path | type | dims | unit | required | meaning "
        "|\n|---|---|---|---|---|---|\n";
  for (const DatasetSpec& d : all_datasets()) {
    os << "| `" << d.path(d.group) << "` | " << elem_name(d.elem) << " | " << d.dims << " | "
       << d.unit << " | " << (d.required ? "yes" : "no") << " | " << d.doc << " |\n";
  }
  os << "\n## Attributes\n\n| object | name | type | meaning |\n|---|---|---|---|\n";
  for (const AttrSpec& a : all_attrs()) {
    os << "| `" << a.object << "` | `" << a.name << "` | " << a.type << " | " << a.doc << " |\n";
  }
  return os.str();
}

std::string schema_json() {
  nlohmann::ordered_json j;
  j["schema_version"] = kSchemaVersion;
  j["oldest_readable"] = kOldestReadableSchema;
  nlohmann::ordered_json sets = nlohmann::ordered_json::array();
  for (const DatasetSpec& d : all_datasets()) {
    nlohmann::ordered_json dims = nlohmann::ordered_json::array();
    if (d.elem != Elem::kTable) {
      std::string_view rest = d.dims;
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        std::string_view one = rest.substr(0, comma);
        while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
        dims.push_back(std::string(one));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      }
    }
    sets.push_back({{"group", d.group},
                    {"name", d.name},
                    {"path", d.path(d.group)},
                    {"type", elem_name(d.elem)},
                    {"dims", dims},
                    {"unit", d.unit},
                    {"required", d.required},
                    {"doc", d.doc}});
  }
  j["datasets"] = std::move(sets);
  nlohmann::ordered_json attrs = nlohmann::ordered_json::array();
  for (const AttrSpec& a : all_attrs()) {
    attrs.push_back({{"object", a.object}, {"name", a.name}, {"type", a.type}, {"doc", a.doc}});
  }
  j["attributes"] = std::move(attrs);
  return j.dump(1) + "\n";
}

}  // namespace shakedown::schema
