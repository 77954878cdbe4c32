#pragma once
// A node's telemetry of one phase as rank 0 stores it (schema.hpp /telemetry/node<N>): one writer
// for the run (phases/telemetry.cpp) and for the scale generator (bench/gen_runfile.cpp).
#include <string>

#include "record/writer.hpp"
#include "telemetry/summary.hpp"

namespace shakedown {

// What a node's group says so far (its phases and events grow with each phase).
struct TelemetryGroup {
  std::string phases;
  std::string events;
};

// Appends `message` (a node's summary of one phase; with its header the first time) to
// /telemetry/node<N>.
void write_telemetry_node(RunWriter& writer, const telemetry::NodeMessage& message,
                          TelemetryGroup& group);

}  // namespace shakedown
