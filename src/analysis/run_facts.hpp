#pragma once
// What every phase's checks need to know about the run, read from the file once: its metadata,
// its effective configuration (read back from /config_yaml), its ranks and how they were placed.
#include <optional>
#include <string>
#include <vector>

#include "analysis/stragglers.hpp"
#include "config/config.hpp"
#include "config/platforms.hpp"
#include "record/reader.hpp"
#include "topology/rank_info.hpp"

namespace shakedown {

struct RunFacts {
  RunMeta meta;
  Config config;              // the run's own; the defaults when it cannot be read back
  bool config_known = false;  // config_yaml parsed
  std::vector<RankInfo> ranks;
  std::vector<CheckResult> placement;
  bool oversubscribed = false;  // more ranks than cores on some host: timings are noisy
  std::string sanitizers;       // the writer was a sanitizer build ("address,undefined")
  // The expected numbers the run is held to (checks.platform; `auto` resolved from the
  // inventory's GPU names), and how it was chosen ("checks.platform: h100-sxm", "auto: ...").
  std::optional<Platform> platform;
  std::string platform_choice;
  std::vector<std::string> node_gpu_names;  // per inventoried node: its first GPU's name, "" none

  bool asked_for(const std::string& phase) const;
  // checks.straggler_slowdown, raised to checks.straggler_slowdown_shared when ranks share cores.
  double straggler_slowdown() const;
  // What find_stragglers judges this run's ranks by: that slowdown, checks.straggler_z, p < 0.01,
  // and whether ranks share cores.
  StragglerLimits straggler_limits() const;
  // "rank 2 (host vm, node 1)"; "rank 2" when the topology was not recorded.
  std::string rank_name(int rank) const;
  // "node 1 (host vm)", with "[virtual]" on pretend nodes.
  std::string node_name(int node) const;
  std::string host_of_rank(int rank) const;  // "" when unknown
  std::string host_of_node(int node) const;
  int node_of_rank(int rank) const;  // -1 when unknown
};

RunFacts read_run_facts(const RunFile& file);

}  // namespace shakedown
