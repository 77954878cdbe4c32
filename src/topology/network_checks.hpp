#pragma once
// The placement checks about the fabric (placement.leaf_switches, placement.blocks); called by
// check_placement (placement.hpp), which documents them.
#include <vector>

#include "topology/network.hpp"
#include "topology/rank_info.hpp"

namespace shakedown {

// Pass when the job's nodes sit under as few leaf switches as their number allows, warn when
// they are spread over more (or some nodes have none while others do), skip when no node's leaf
// switch is known. Leaf sizes come from `map` (may be null) when it lists leaf switches, else the
// most job nodes seen on one leaf is taken as a lower bound of a leaf's size.
CheckResult check_leaf_switches(const std::vector<RankInfo>& ranks, const NetworkMap* map);

// The same for NVLink blocks, whose sizes `map` always gives; nodes outside every block warn.
CheckResult check_blocks(const std::vector<RankInfo>& ranks, const NetworkMap& map);

}  // namespace shakedown
