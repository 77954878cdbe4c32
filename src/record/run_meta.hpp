#pragma once
// The root attributes of a run file (docs/architecture.md "The run file"): who ran what, when, and
// how it ended.
#include <string>

#include "record/schema.hpp"

namespace shakedown {

struct RunMeta {
  int schema_version = schema::kSchemaVersion;  // the writer always writes kSchemaVersion
  std::string shakedown_version;
  std::string command_line;
  std::string config_yaml;   // the effective configuration, as YAML
  std::string started_utc;   // ISO-8601 UTC; the writer fills "now" when empty
  std::string finished_utc;  // "" while running
  std::string status;        // schema::kStatusRunning | kStatusComplete | kStatusAborted
  std::string abort_phase;   // the phase an aborted run was in, "" none (read only)
  int world_size = 0;
  int node_count = 0;
  int virtual_nodes = 0;  // 0: real nodes
  std::string backend;
};

// Now as ISO-8601 UTC with seconds, e.g. "2025-01-31T13:45:07Z".
std::string utc_now_iso8601();

// True for "running", "complete" and "aborted".
bool is_run_status(const std::string& status);

}  // namespace shakedown
