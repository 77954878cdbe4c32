#pragma once
// The collectives tables (nccl-tests style, one per scope / collective / dtype / mode), from the
// phase as read_collectives() read it.
#include <string>

#include "analysis/collectives_data.hpp"

namespace shakedown {

// "" when the run has no /collectives.
std::string format_collectives(const CollectivesData& data);

}  // namespace shakedown
