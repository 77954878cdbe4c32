#include "analysis/run_facts.hpp"

#include <algorithm>

#include "config/load.hpp"
#include "record/schema.hpp"

namespace shakedown {

double RunFacts::straggler_slowdown() const {
  const ChecksConfig& c = config.checks;
  return oversubscribed ? std::max(c.straggler_slowdown, c.straggler_slowdown_shared)
                        : c.straggler_slowdown;
}

StragglerLimits RunFacts::straggler_limits() const {
  return {straggler_slowdown(), config.checks.straggler_z, 0.01, oversubscribed};
}

bool RunFacts::asked_for(const std::string& phase) const {
  return std::find(config.phases.begin(), config.phases.end(), phase) != config.phases.end();
}

std::string RunFacts::rank_name(int rank) const {
  for (const auto& r : ranks) {
    if (r.rank == rank) {
      return "rank " + std::to_string(rank) + " (host " + r.hostname + ", node " +
             std::to_string(r.node_index) + ")";
    }
  }
  return "rank " + std::to_string(rank);
}

std::string RunFacts::node_name(int node) const {
  const std::string host = host_of_node(node);
  std::string out = "node " + std::to_string(node);
  if (!host.empty()) out += " (host " + host + (meta.virtual_nodes > 0 ? ", virtual" : "") + ")";
  return out;
}

std::string RunFacts::host_of_rank(int rank) const {
  for (const auto& r : ranks) {
    if (r.rank == rank) return r.hostname;
  }
  return "";
}

std::string RunFacts::host_of_node(int node) const {
  for (const auto& r : ranks) {
    if (r.node_index == node) return r.hostname;
  }
  return "";
}

int RunFacts::node_of_rank(int rank) const {
  for (const auto& r : ranks) {
    if (r.rank == rank) return r.node_index;
  }
  return -1;
}

RunFacts read_run_facts(const RunFile& file) {
  RunFacts f;
  f.meta = file.meta();
  try {
    f.config = load_config(f.meta.config_yaml, file.path().string() + ":/config_yaml");
    f.config_known = true;
  } catch (const Error&) {
    f.config = Config{};
  }
  if (const auto tag = f.meta.shakedown_version.find(schema::kSanitizedVersionTag);
      tag != std::string::npos) {
    f.sanitizers = f.meta.shakedown_version.substr(
        tag + std::string_view(schema::kSanitizedVersionTag).size());
  }
  f.ranks = file.ranks();
  f.placement = file.placement_checks();
  for (const auto& c : f.placement) {
    if (c.name == "placement.oversubscription" && c.status != CheckStatus::kPass &&
        c.status != CheckStatus::kSkip) {
      f.oversubscribed = true;
    }
  }
  for (const auto& node : file.inventory()) {
    f.node_gpu_names.push_back(node.gpus.empty() ? "" : node.gpus.front().name);
  }
  const std::string& name = f.config.checks.platform;
  if (name == "auto") {
    const bool any_gpu = std::any_of(f.node_gpu_names.begin(), f.node_gpu_names.end(),
                                     [](const std::string& g) { return !g.empty(); });
    if (f.node_gpu_names.empty()) {
      f.platform_choice = "auto: no inventory recorded, so no GPU model to pick a platform from";
    } else if (!any_gpu) {
      f.platform = find_platform("cpu-local");
      f.platform_choice = "auto: no node has a GPU, so cpu-local";
    } else if ((f.platform = match_platform(f.node_gpu_names))) {
      f.platform_choice =
          "auto: " + f.platform->name + " from the GPU model " + f.node_gpu_names.front();
    } else {
      f.platform_choice = "auto: no built-in platform matches the GPUs (" +
                          f.node_gpu_names.front() + "); set checks.platform";
    }
  } else if (!name.empty()) {
    f.platform = find_platform(name);
    f.platform_choice = f.platform ? "checks.platform: " + name
                                   : "checks.platform: " + name +
                                         " is not a platform of this "
                                         "version of shakedown";
  }
  return f;
}

}  // namespace shakedown
