#include "record/tables.hpp"

#include "record/schema.hpp"

namespace shakedown::tables {

CheckStatus parse_check_status(const std::string& text) {
  for (CheckStatus s :
       {CheckStatus::kPass, CheckStatus::kWarn, CheckStatus::kFail, CheckStatus::kSkip}) {
    if (text == to_string(s)) return s;
  }
  throw UsageError("unknown check status '" + text + "' (expected pass, warn, fail or skip)");
}

const std::vector<Field<RankInfo>>& rank_fields() {
  namespace c = schema::ranks;
  using R = RankInfo;
  static const std::vector<Field<R>> kFields = {
      field(c::kRank, &R::rank),
      field(c::kNodeIndex, &R::node_index),
      field(c::kLocalRank, &R::local_rank),
      field(c::kLocalSize, &R::local_size),
      field(c::kHostname, &R::hostname),
      field(c::kCpus, &R::cpus),
      field(c::kCpuCount, &R::cpu_count),
      field(c::kNodeCores, &R::node_cores),
      field(c::kNodePus, &R::node_pus),
      field(c::kAllowedCpus, &R::allowed_cpus),
      field(c::kAllowedCores, &R::allowed_cores),
      field(c::kAllowedPus, &R::allowed_pus),
      field(c::kNuma, &R::numa),
      field(c::kGpuCount, &R::gpu_count),
      field(c::kGpuIndex, &R::gpu_index),
      field(c::kGpuOrdinal, &R::gpu, &GpuInfo::index),
      field(c::kGpuName, &R::gpu, &GpuInfo::name),
      field(c::kGpuUuid, &R::gpu, &GpuInfo::uuid),
      field(c::kGpuPci, &R::gpu, &GpuInfo::pci_bus_id),
      field(c::kGpuMemoryBytes, &R::gpu, &GpuInfo::memory_bytes),
      field(c::kGpuNuma, &R::gpu, &GpuInfo::numa_node),
      field(c::kGpuCpus, &R::gpu, &GpuInfo::cpus),
      field(c::kGpuNote, &R::gpu_note),
      field(c::kNic, &R::nic),
      field(c::kSlurmJobId, &R::slurm_job_id),
      field(c::kSlurmNodeId, &R::slurm_node_id),
      field(c::kSlurmLocalId, &R::slurm_local_id),
      field(c::kSlurmProcid, &R::slurm_procid),
      field(c::kSlurmTopologyAddr, &R::slurm_topology_addr),
      field(c::kSlurmTopologyPattern, &R::slurm_topology_pattern),
      field(c::kLeafSwitch, &R::leaf_switch),
      field(c::kBlock, &R::block),
  };
  return kFields;
}

const std::vector<Field<CheckResult>>& check_fields() {
  namespace c = schema::checks;
  static const std::vector<Field<CheckResult>> kFields = {
      field(c::kName, &CheckResult::name),
      field(c::kStatus, &CheckResult::status),
      field(c::kReason, &CheckResult::reason),
  };
  return kFields;
}

const std::vector<Field<Finding>>& finding_fields() {
  namespace c = schema::findings;
  static const std::vector<Field<Finding>> kFields = {
      field(c::kCheck, &Finding::check),
      field(c::kStatus, &Finding::status),
      field(c::kSubjectKind, &Finding::subject_kind),
      field(c::kSubject, &Finding::subject),
      field(c::kValue, &Finding::value),
      field(c::kExpected, &Finding::expected),
      field(c::kUnit, &Finding::unit),
      field(c::kEvidence, &Finding::evidence),
      field(c::kMessage, &Finding::message),
      field(c::kHost, &Finding::host),
      field(c::kNode, &Finding::node),
      field(c::kRank, &Finding::rank),
      field(c::kCorruption, &Finding::corruption),
  };
  return kFields;
}

const std::vector<Field<NodeInventory>>& node_fields() {
  namespace c = schema::nodes;
  using N = NodeInventory;
  static const std::vector<Field<N>> kFields = {
      field(c::kNodeIndex, &N::node_index),
      field(c::kHostname, &N::hostname),
      field(c::kCpuModel, &N::cpu_model),
      field(c::kSockets, &N::sockets),
      field(c::kCores, &N::cores),
      field(c::kPus, &N::pus),
      field(c::kNumaNodes, &N::numa_nodes),
      field(c::kMemoryBytes, &N::memory_bytes),
      field(c::kOs, &N::os),
      field(c::kKernel, &N::kernel),
      field(c::kGpuNote, &N::gpu_note),
      field(c::kGpuDriver, &N::gpu_driver),
      field(c::kMpiVersion, &N::mpi_version),
      field(c::kNcclVersion, &N::nccl_version),
      field(c::kCudaRuntimeVersion, &N::cuda_runtime_version),
      field(c::kCudaDriverVersion, &N::cuda_driver_version),
      field(c::kHdf5Version, &N::hdf5_version),
      field(c::kUcxVersion, &N::ucx_version),
      field(c::kHwlocVersion, &N::hwloc_version),
      field(c::kOpenblasVersion, &N::openblas_version),
  };
  return kFields;
}

const std::vector<Field<NodeGpu>>& gpu_fields() {
  namespace c = schema::gpus;
  static const std::vector<Field<NodeGpu>> kFields = {
      field(c::kNodeIndex, &NodeGpu::node_index),
      field(c::kIndex, &NodeGpu::gpu, &GpuInfo::index),
      field(c::kName, &NodeGpu::gpu, &GpuInfo::name),
      field(c::kUuid, &NodeGpu::gpu, &GpuInfo::uuid),
      field(c::kPciBusId, &NodeGpu::gpu, &GpuInfo::pci_bus_id),
      field(c::kMemoryBytes, &NodeGpu::gpu, &GpuInfo::memory_bytes),
      field(c::kNumaNode, &NodeGpu::gpu, &GpuInfo::numa_node),
      field(c::kCpus, &NodeGpu::gpu, &GpuInfo::cpus),
  };
  return kFields;
}

const std::vector<Field<NodeNic>>& nic_fields() {
  namespace c = schema::nics;
  static const std::vector<Field<NodeNic>> kFields = {
      field(c::kNodeIndex, &NodeNic::node_index),
      field(c::kName, &NodeNic::nic, &NicInfo::name),
      field(c::kKind, &NodeNic::nic, &NicInfo::kind),
      field(c::kNumaNode, &NodeNic::nic, &NicInfo::numa_node),
      field(c::kPciBusId, &NodeNic::nic, &NicInfo::pci_bus_id),
  };
  return kFields;
}

const std::vector<Field<NodeFactRow>>& fact_fields() {
  namespace c = schema::facts;
  static const std::vector<Field<NodeFactRow>> kFields = {
      field(c::kNodeIndex, &NodeFactRow::node_index),
      field(c::kKey, &NodeFactRow::fact, &NodeFact::key),
      field(c::kValue, &NodeFactRow::fact, &NodeFact::value),
      field(c::kSource, &NodeFactRow::fact, &NodeFact::source),
  };
  return kFields;
}

}  // namespace shakedown::tables
