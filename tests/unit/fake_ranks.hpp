#pragma once
// Synthetic ranks for analysis tests that write run files through RunWriter: `per` per host
// (two by default; "gpu-0", "gpu-1", ...), each on a core of its own (not oversubscribed).
#include <string>
#include <vector>

#include "topology/rank_info.hpp"

namespace shakedown::testing_support {

inline std::vector<RankInfo> per_host(int world, int per) {
  std::vector<RankInfo> out;
  for (int r = 0; r < world; ++r) {
    RankInfo info;
    info.rank = r;
    info.node_index = r / per;
    info.local_rank = r % per;
    info.local_size = per;
    info.hostname = "gpu-" + std::to_string(r / per);
    info.cpus = std::to_string(r % per);
    info.cpu_count = 1;
    info.node_cores = 8;
    info.node_pus = 8;
    info.allowed_cpus = "0-7";
    info.allowed_cores = 8;
    info.allowed_pus = 8;
    out.push_back(info);
  }
  return out;
}

inline std::vector<RankInfo> two_per_host(int world) {
  return per_host(world, 2);
}

}  // namespace shakedown::testing_support
