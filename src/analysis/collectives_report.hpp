#pragma once
// The collectives tables (nccl-tests style, one per scope / collective / dtype / mode), read from
// the run file alone.
#include <cstdint>
#include <string>

#include "record/reader.hpp"

namespace shakedown {

// "" when the run has no /collectives.
std::string format_collectives(const RunFile& file);

}  // namespace shakedown
