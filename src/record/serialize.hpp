#pragma once
// JSON forms of the per-rank records, used to gather them to rank 0 over MPI (one string per rank).
// Every field of each record is listed: a new field must be added here and to record/tables.cpp
// (tests/unit/test_record_serialize.cpp checks both round trips with operator==).
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "runtime/mpi.hpp"

#include "topology/rank_info.hpp"

namespace shakedown {

NLOHMANN_JSON_SERIALIZE_ENUM(CheckStatus, {{CheckStatus::kPass, "pass"},
                                           {CheckStatus::kWarn, "warn"},
                                           {CheckStatus::kFail, "fail"},
                                           {CheckStatus::kSkip, "skip"}})

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GpuInfo, index, name, uuid, pci_bus_id, memory_bytes, numa_node,
                                   cpus)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(NicInfo, name, kind, numa_node, pci_bus_id)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RankInfo, rank, node_index, local_rank, local_size, hostname,
                                   cpus, cpu_count, node_cores, node_pus, allowed_cpus,
                                   allowed_cores, allowed_pus, numa, gpu_count, gpu_index, gpu,
                                   gpu_note, nic, slurm_job_id, slurm_node_id, slurm_local_id,
                                   slurm_procid, slurm_topology_addr, slurm_topology_pattern,
                                   leaf_switch, block)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(NodeFact, key, value, source)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(NodeInventory, node_index, hostname, cpu_model, sockets, cores,
                                   pus, numa_nodes, memory_bytes, os, kernel, gpus, gpu_note, nics,
                                   gpu_driver, mpi_version, nccl_version, cuda_runtime_version,
                                   cuda_driver_version, hdf5_version, ucx_version, hwloc_version,
                                   openblas_version, facts)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CheckResult, name, status, reason)

// Gathers one record per rank to `root` (empty vector elsewhere). Collective over `comm`.
template <class T>
std::vector<T> gather_records(MPI_Comm comm, int root, const T& mine) {
  std::vector<std::string> rows = gather_strings(comm, root, nlohmann::json(mine).dump());
  std::vector<T> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.push_back(nlohmann::json::parse(row).get<T>());
  return out;
}

}  // namespace shakedown
