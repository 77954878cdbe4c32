#include "topology/placement.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/strings.hpp"
#include "topology/cpu_list.hpp"
#include "topology/network_checks.hpp"

namespace shakedown {
namespace {

// "rank 3" or "ranks 0-3,8".
std::string ranks_text(std::vector<int> ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + format_cpu_list(std::move(ranks));
}

std::string node_label(const RankInfo& r, bool virtual_nodes) {
  return "node " + std::to_string(r.node_index) + " (host " + r.hostname +
         (virtual_nodes ? ", virtual" : "") + ")";
}

CheckResult result(std::string_view name, CheckStatus status, std::string reason) {
  return CheckResult{std::string(name), status, std::move(reason)};
}

// Identity of a physical GPU: CUDA UUIDs are unique world-wide; PCI bus ids only per host.
std::optional<std::string> gpu_key(const RankInfo& r) {
  if (!r.gpu.uuid.empty()) return r.gpu.uuid;
  if (!r.gpu.pci_bus_id.empty()) return r.hostname + "/" + r.gpu.pci_bus_id;
  return std::nullopt;
}

std::string gpu_label(const RankInfo& r) {
  std::string label = "GPU " + (r.gpu.uuid.empty() ? std::to_string(r.gpu_index) : r.gpu.uuid);
  if (!r.gpu.pci_bus_id.empty()) label += " (" + r.gpu.pci_bus_id + ")";
  return label;
}

bool uses_gpu(const RankInfo& r) {
  return r.gpu_count > 0 && r.gpu_index >= 0;
}

CheckResult check_ranks_per_node(const std::vector<RankInfo>& ranks, const PlacementOptions& opt) {
  std::map<int, std::vector<const RankInfo*>> nodes;
  for (const auto& r : ranks) nodes[r.node_index].push_back(&r);
  std::map<std::size_t, int> frequency;
  for (const auto& [node, members] : nodes) ++frequency[members.size()];
  const std::string virt = opt.virtual_nodes ? " (virtual nodes)" : "";
  if (frequency.size() == 1) {
    return result(kCheckRanksPerNode, CheckStatus::kPass,
                  plural(nodes.size(), "node") + " x " + plural(frequency.begin()->first, "rank") +
                      " per node" + virt);
  }
  // The most common count is taken as intended (ties: the larger one).
  std::size_t usual = 0;
  int best = 0;
  for (const auto& [count, times] : frequency) {
    if (times >= best) {
      usual = count;
      best = times;
    }
  }
  std::vector<std::string> odd;
  for (const auto& [node, members] : nodes) {
    if (members.size() != usual) {
      odd.push_back(node_label(*members.front(), opt.virtual_nodes) + " has " +
                    plural(members.size(), "rank"));
    }
  }
  return result(kCheckRanksPerNode, CheckStatus::kFail,
                join_limited(odd, "; ") + ", others have " + std::to_string(usual) +
                    ": launch the same number of ranks on every node (mpirun --map-by ppr:" +
                    std::to_string(usual) +
                    ":node, srun --ntasks-per-node=" + std::to_string(usual) + ")");
}

CheckResult check_gpu_unique(const std::vector<RankInfo>& ranks, const PlacementOptions& opt) {
  std::vector<const RankInfo*> users, without;
  for (const auto& r : ranks) (uses_gpu(r) ? users : without).push_back(&r);
  if (users.empty()) {
    const RankInfo& r0 = ranks.front();
    return result(kCheckGpuUnique, CheckStatus::kSkip,
                  "no rank uses a GPU (rank " + std::to_string(r0.rank) + " on host " +
                      r0.hostname + ": " + (r0.gpu_note.empty() ? "no GPU visible" : r0.gpu_note) +
                      ")");
  }
  std::vector<std::string> missing, sharing, unused;

  if (!without.empty()) {
    // Some ranks have GPUs and these do not: typically one node lost its driver or a GPU.
    std::map<int, std::vector<const RankInfo*>> by_node;
    for (const auto* r : without) by_node[r->node_index].push_back(r);
    for (const auto& [node, members] : by_node) {
      std::vector<int> rank_ids;
      for (const auto* r : members) rank_ids.push_back(r->rank);
      const RankInfo& first = *members.front();
      missing.push_back(ranks_text(rank_ids) + " on " + node_label(first, opt.virtual_nodes) +
                        " see no GPU while other ranks do (" +
                        (first.gpu_note.empty() ? "no reason recorded" : first.gpu_note) + ")");
    }
  }

  std::map<std::string, std::vector<const RankInfo*>> by_gpu;
  std::vector<int> unknown;
  for (const auto* r : users) {
    if (auto key = gpu_key(*r)) {
      by_gpu[*key].push_back(r);
    } else {
      unknown.push_back(r->rank);
    }
  }
  for (const auto& [key, members] : by_gpu) {
    if (members.size() < 2) continue;
    std::vector<int> rank_ids;
    std::set<int> node_ids;
    for (const auto* r : members) {
      rank_ids.push_back(r->rank);
      node_ids.insert(r->node_index);
    }
    const std::vector<int> nodes(node_ids.begin(), node_ids.end());
    sharing.push_back(gpu_label(*members.front()) + " on host " + members.front()->hostname +
                      " is used by " + ranks_text(rank_ids) + " (node" +
                      (nodes.size() > 1 ? "s " : " ") + format_cpu_list(nodes) + ")");
  }

  // GPUs a host shows but no rank uses stay untested.
  std::map<std::string, std::vector<const RankInfo*>> by_host;
  for (const auto* r : users) by_host[r->hostname].push_back(r);
  for (const auto& [host, members] : by_host) {
    int visible = 0;
    std::set<std::string> used;
    for (const auto* r : members) {
      visible = std::max(visible, r->gpu_count);
      if (auto key = gpu_key(*r)) used.insert(*key);
    }
    if (unknown.empty() && static_cast<int>(used.size()) < visible) {
      unused.push_back("host " + host + ": ranks use " + std::to_string(used.size()) + " of " +
                       std::to_string(visible) + " visible GPUs; run " + std::to_string(visible) +
                       " ranks per host to test them all");
    }
  }

  std::vector<std::string> failures, warnings;
  if (!missing.empty()) {
    failures.push_back(join_limited(missing, "; ") +
                       ": check those nodes with nvidia-smi and drain them if a GPU is missing");
  }
  if (!sharing.empty()) {
    if (opt.allow_oversubscribe) {
      warnings.push_back(join_limited(sharing, "; ") +
                         " (GPU sharing allowed: timings will be noisy)");
    } else {
      failures.push_back(join_limited(sharing, "; ") +
                         ": run at most one rank per GPU (ranks per host <= GPUs per host)");
    }
  }
  if (!unused.empty()) warnings.push_back(join_limited(unused, "; "));

  std::string reason;
  CheckStatus status = CheckStatus::kPass;
  if (!failures.empty()) {
    status = CheckStatus::kFail;
    reason = join_limited(failures, "; ");
    if (!warnings.empty()) reason += "; also: " + join_limited(warnings, "; ");
  } else if (!warnings.empty()) {
    status = CheckStatus::kWarn;
    reason = join_limited(warnings, "; ");
  } else {
    reason = "each of " + plural(by_gpu.size(), "GPU") + " is used by exactly one rank";
  }
  if (!unknown.empty()) {
    reason += " (" + ranks_text(unknown) + ": GPU has no UUID or PCI id, not compared)";
  }
  return result(kCheckGpuUnique, status, reason);
}

CheckResult check_gpu_numa_affinity(const std::vector<RankInfo>& ranks) {
  std::vector<std::string> failures, warnings;
  std::vector<int> unknown;
  int users = 0, good = 0;
  for (const auto& r : ranks) {
    if (!uses_gpu(r)) continue;
    ++users;
    const std::string who = "rank " + std::to_string(r.rank) + " (host " + r.hostname + ")";
    const std::string numa_note = r.numa.empty() ? "" : " (NUMA " + r.numa + ")";
    const auto bound = parse_cpu_list(r.cpus);
    const auto local = parse_cpu_list(r.gpu.cpus);
    if (bound && local && !bound->empty() && !local->empty()) {
      std::vector<int> outside;
      std::set_difference(bound->begin(), bound->end(), local->begin(), local->end(),
                          std::back_inserter(outside));
      const std::string gpu_side =
          "GPU " + r.gpu.pci_bus_id + " is local to CPUs " + r.gpu.cpus +
          (r.gpu.numa_node >= 0 ? " (NUMA " + std::to_string(r.gpu.numa_node) + ")" : "");
      if (outside.empty()) {
        ++good;
      } else if (outside.size() < bound->size()) {
        warnings.push_back(who + " is bound to CPUs " + r.cpus + numa_note + ", wider than its " +
                           gpu_side);
      } else {
        failures.push_back(who + " is bound to CPUs " + r.cpus + numa_note + " but its " +
                           gpu_side);
      }
      continue;
    }
    const auto rank_numas = parse_cpu_list(r.numa);  // "0,1" parses like a CPU list
    if (r.gpu.numa_node >= 0 && rank_numas && !rank_numas->empty()) {
      const bool has = std::binary_search(rank_numas->begin(), rank_numas->end(), r.gpu.numa_node);
      const std::string gpu_side =
          "GPU " + r.gpu.pci_bus_id + " is on NUMA " + std::to_string(r.gpu.numa_node);
      if (has && rank_numas->size() == 1) {
        ++good;
      } else if (has) {
        warnings.push_back(who + " spans NUMA " + r.numa + "; its " + gpu_side);
      } else {
        failures.push_back(who + " runs on NUMA " + r.numa + " but its " + gpu_side);
      }
      continue;
    }
    unknown.push_back(r.rank);
  }
  if (users == 0) {
    return result(kCheckGpuNumaAffinity, CheckStatus::kSkip, "no rank uses a GPU");
  }
  if (static_cast<int>(unknown.size()) == users) {
    return result(
        kCheckGpuNumaAffinity, CheckStatus::kSkip,
        "GPU locality unknown for all " + plural(unknown.size(), "rank") +
            " (hwloc found no PCI locality for their GPUs, or ranks have no CPU binding)");
  }
  const std::string unknown_note =
      unknown.empty() ? "" : " (" + ranks_text(unknown) + ": locality unknown, not checked)";
  const std::string fix =
      ": bind each rank next to its GPU (use the rankfile from `shakedown plan`)";
  if (!failures.empty()) {
    std::string reason = join_limited(failures, "; ") + fix;
    if (!warnings.empty()) reason += "; also: " + join_limited(warnings, "; ");
    return result(kCheckGpuNumaAffinity, CheckStatus::kFail, reason + unknown_note);
  }
  if (!warnings.empty()) {
    return result(kCheckGpuNumaAffinity, CheckStatus::kWarn,
                  join_limited(warnings, "; ") + fix + unknown_note);
  }
  return result(kCheckGpuNumaAffinity, CheckStatus::kPass,
                plural(static_cast<std::size_t>(good), "rank") +
                    " bound to CPUs local to their GPU" + unknown_note);
}

// A rank is unbound when its CPUs cover everything it may use: the job's cpuset (Slurm cgroup,
// container --cpuset-cpus) or, for records without one (older files), every thread of the host.
// Unbound ranks of one job all get that same set; they are spread by the kernel, not sharing.
bool is_unbound(const RankInfo& r, const std::vector<int>& cpus, int host_pus) {
  if (const auto allowed = parse_cpu_list(r.allowed_cpus); allowed && !allowed->empty()) {
    return std::includes(cpus.begin(), cpus.end(), allowed->begin(), allowed->end());
  }
  return host_pus > 0 && static_cast<int>(cpus.size()) >= host_pus;
}

// Cores the ranks of one host may run on: the job's allowed cores when every rank there reports
// the same allowed set (one job, one cgroup), the whole host otherwise.
struct HostCapacity {
  int cores = 0;             // 0 unknown
  int host_cores = 0;        // physical cores of the machine
  std::string allowed_cpus;  // set when `cores` counts only the job's cpuset
};

HostCapacity host_capacity(const std::vector<const RankInfo*>& members) {
  HostCapacity cap;
  for (const auto* r : members) cap.host_cores = std::max(cap.host_cores, r->node_cores);
  cap.cores = cap.host_cores;
  const auto first = parse_cpu_list(members.front()->allowed_cpus);
  if (!first || first->empty()) return cap;
  int allowed_cores = 0;
  for (const auto* r : members) {
    if (parse_cpu_list(r->allowed_cpus) != first) return cap;
    allowed_cores = std::max(allowed_cores, r->allowed_cores);
  }
  if (allowed_cores > 0 && (cap.host_cores == 0 || allowed_cores < cap.host_cores)) {
    cap.cores = allowed_cores;
    cap.allowed_cpus = format_cpu_list(*first);
  }
  return cap;
}

CheckResult check_oversubscription(const std::vector<RankInfo>& ranks,
                                   const PlacementOptions& opt) {
  std::map<std::string, std::vector<const RankInfo*>> hosts;
  for (const auto& r : ranks) hosts[r.hostname].push_back(&r);
  std::vector<std::string> issues;
  std::vector<int> unbound;
  bool cpuset_limited = false;  // an issue comes from the job's cpuset, not the machine
  std::string limited_example;  // a host whose cores are counted within the job's cpuset
  std::size_t limited_hosts = 0;
  for (const auto& [host, members] : hosts) {
    const HostCapacity cap = host_capacity(members);
    if (!cap.allowed_cpus.empty()) {
      if (limited_hosts == 0) {
        limited_example = "host " + host + ": CPUs " + cap.allowed_cpus + ", " +
                          std::to_string(cap.cores) + " of " + std::to_string(cap.host_cores) +
                          " cores";
      }
      ++limited_hosts;
    }
    if (cap.cores > 0 && static_cast<int>(members.size()) > cap.cores) {
      std::string text = "host " + host + " runs " + plural(members.size(), "rank") + " on ";
      if (cap.allowed_cpus.empty()) {
        text += plural(static_cast<std::size_t>(cap.cores), "core");
      } else {
        cpuset_limited = true;
        text += "the " + plural(static_cast<std::size_t>(cap.cores), "core") +
                " this job may use there (CPUs " + cap.allowed_cpus + " of the host's " +
                std::to_string(cap.host_cores) + " cores)";
      }
      issues.push_back(text);
    }
    int pus = 0;
    for (const auto* r : members) pus = std::max(pus, r->node_pus);
    // Unbound ranks: only the count above says whether they fit. Bound ranks must not share.
    // Ranks confined to different cpusets on one host (per-task cgroups) each count against
    // their own set's cores.
    std::map<std::vector<int>, std::vector<const RankInfo*>> pools;  // unbound, by allowed set
    std::map<int, int> owner;                                        // cpu -> first bound rank
    std::map<std::pair<int, int>, std::vector<int>> shared;
    for (const auto* r : members) {
      const auto cpus = parse_cpu_list(r->cpus);
      if (!cpus || cpus->empty()) continue;
      if (is_unbound(*r, *cpus, pus)) {
        unbound.push_back(r->rank);
        pools[*cpus].push_back(r);
        continue;
      }
      for (int c : *cpus) {
        const auto [it, inserted] = owner.emplace(c, r->rank);
        if (!inserted) shared[{it->second, r->rank}].push_back(c);
      }
    }
    if (cap.allowed_cpus.empty() && pools.size() > 1) {
      for (const auto& [cpus, pool] : pools) {
        int cores = 0;
        std::vector<int> rank_ids;
        for (const auto* r : pool) {
          cores = std::max(cores, r->allowed_cores);
          rank_ids.push_back(r->rank);
        }
        if (cores > 0 && static_cast<int>(pool.size()) > cores) {
          cpuset_limited = true;
          issues.push_back(ranks_text(rank_ids) + " on host " + host +
                           " are not bound and may only use CPUs " + format_cpu_list(cpus) + " (" +
                           plural(static_cast<std::size_t>(cores), "core") + ")");
        }
      }
    }
    for (const auto& [pair, cpus] : shared) {
      issues.push_back("ranks " + std::to_string(pair.first) + " and " +
                       std::to_string(pair.second) + " on host " + host + " are both bound to CPU" +
                       (cpus.size() > 1 ? "s " : " ") + format_cpu_list(cpus));
    }
  }
  const std::string virt =
      opt.virtual_nodes ? " (virtual nodes on one host share its CPUs; counted per host)" : "";
  const std::string unbound_note =
      unbound.empty() ? "" : " (" + ranks_text(unbound) + " not bound to CPUs)";
  if (!issues.empty()) {
    std::string fix =
        opt.allow_oversubscribe
            ? " (oversubscription allowed: timings will be noisy)"
            : ": run fewer ranks per host or bind them to separate cores (shakedown plan), or set "
              "topology.allow_oversubscribe for a functional test";
    if (cpuset_limited) {
      fix +=
          "; the job's cpuset (Slurm cgroup, container --cpuset-cpus) allows fewer cores than "
          "the host has: ask for more (srun --cpus-per-task, docker --cpuset-cpus)";
    }
    return result(kCheckOversubscription,
                  opt.allow_oversubscribe ? CheckStatus::kWarn : CheckStatus::kFail,
                  join_limited(issues, "; ") + fix + virt + unbound_note);
  }
  std::string limited_note;
  if (limited_hosts > 0) {
    limited_note = " (cores counted within the job's cpuset: " + limited_example +
                   (limited_hosts > 1 ? "; and " + plural(limited_hosts - 1, "more host") : "") +
                   ")";
  }
  return result(kCheckOversubscription, CheckStatus::kPass,
                plural(hosts.size(), "host") +
                    ": no host has more ranks than cores and no two ranks share a CPU" + virt +
                    limited_note + unbound_note);
}

CheckResult check_expected_gpus(const std::vector<RankInfo>& ranks, const PlacementOptions& opt) {
  const int expected = opt.expected_gpus_per_node;
  // Virtual nodes split one host's GPUs between them, so the count that must match is the host's.
  std::map<std::string, std::vector<const RankInfo*>> groups;
  for (const auto& r : ranks) {
    groups[opt.virtual_nodes ? r.hostname : std::to_string(r.node_index)].push_back(&r);
  }
  std::vector<std::string> failures, warnings;
  for (const auto& [key, members] : groups) {
    int visible = 0;
    std::set<std::string> used;
    for (const auto* r : members) {
      visible = std::max(visible, r->gpu_count);
      if (uses_gpu(*r)) {
        if (auto k = gpu_key(*r)) used.insert(*k);
      }
    }
    // With one GPU per rank (Slurm --gpu-bind) each rank sees 1: the node's count is the union.
    const int seen = std::max(visible, static_cast<int>(used.size()));
    const RankInfo& first = *members.front();
    const std::string where =
        opt.virtual_nodes ? "host " + first.hostname : node_label(first, false);
    if (seen < expected) {
      std::string text = where + " sees " + plural(static_cast<std::size_t>(seen), "GPU") +
                         ", expected " + std::to_string(expected);
      if (seen == 0 && !first.gpu_note.empty()) text += " (" + first.gpu_note + ")";
      failures.push_back(text);
    } else if (seen > expected) {
      warnings.push_back(where + " sees " + plural(static_cast<std::size_t>(seen), "GPU") +
                         ", expected " + std::to_string(expected));
    }
  }
  if (!failures.empty()) {
    return result(kCheckExpectedGpus, CheckStatus::kFail,
                  join_limited(failures, "; ") +
                      ": check the node with nvidia-smi and drain it if a GPU is missing");
  }
  if (!warnings.empty()) {
    return result(kCheckExpectedGpus, CheckStatus::kWarn,
                  join_limited(warnings, "; ") +
                      ": update topology.expected_gpus_per_node if this is intended");
  }
  return result(kCheckExpectedGpus, CheckStatus::kPass,
                "every " + std::string(opt.virtual_nodes ? "host" : "node") + " sees " +
                    std::to_string(expected) + " GPUs (" +
                    plural(groups.size(), opt.virtual_nodes ? "host" : "node") + ")");
}

}  // namespace

std::vector<CheckResult> check_placement(const std::vector<RankInfo>& ranks,
                                         const PlacementOptions& options) {
  const bool blocks = options.network != nullptr && !options.network->blocks().empty();
  std::vector<std::string_view> names = {kCheckRanksPerNode, kCheckGpuUnique, kCheckGpuNumaAffinity,
                                         kCheckOversubscription};
  if (options.expected_gpus_per_node > 0) names.push_back(kCheckExpectedGpus);
  names.push_back(kCheckLeafSwitches);
  if (blocks) names.push_back(kCheckBlocks);
  std::vector<CheckResult> results;
  if (ranks.empty()) {
    for (auto name : names)
      results.push_back(result(name, CheckStatus::kSkip, "no rank records to check"));
    return results;
  }
  results.push_back(check_ranks_per_node(ranks, options));
  results.push_back(check_gpu_unique(ranks, options));
  results.push_back(check_gpu_numa_affinity(ranks));
  results.push_back(check_oversubscription(ranks, options));
  if (options.expected_gpus_per_node > 0) results.push_back(check_expected_gpus(ranks, options));
  results.push_back(check_leaf_switches(ranks, options.network));
  if (blocks) results.push_back(check_blocks(ranks, *options.network));
  return results;
}

}  // namespace shakedown
