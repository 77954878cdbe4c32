#pragma once
// The telemetry's findings, from the run file alone (/telemetry):
//  - telemetry.coverage: what was sampled (nodes, GPUs through NVML, host signals, InfiniBand
//    ports), how often, through which phases, and what was not and why;
//  - telemetry.gpu_errors: uncorrected ECC errors (before or during the run), uncorrectable rows
//    remapped during the run, a remap pending or failed: fail, naming the node and GPU;
//  - telemetry.links: an InfiniBand port whose symbol_error, link_downed or port_rcv_errors grew
//    during the run, a GPU with fewer NVLink links up than its node's others or than it had at the
//    start: fail, naming the node and the port or GPU;
//  - telemetry.pcie: a GPU busy in a phase (median utilization >= 50%) whose PCIe link never
//    reached its maximum generation or width in it: fail;
//  - telemetry.throttling: a GPU slowed for power or heat (NVML's clock event reasons) during a
//    phase: a warning naming the phase, the reasons and its power against its limit.
// Checks with nothing to judge (no GPU telemetry, no ports) say SKIP and why, never PASS.
#include <string>
#include <vector>

#include "analysis/run_facts.hpp"
#include "record/findings.hpp"
#include "record/reader.hpp"
#include "telemetry/channels.hpp"

namespace shakedown {

struct TelemetryNode {
  int node = 0;
  std::string host;
  std::vector<telemetry::Channel> channels;
  std::vector<std::string> gpu_bus_ids;
  std::vector<std::string> phases;
  std::vector<double> phase_start_us, phase_end_us;
  std::vector<std::int64_t> phase_samples;
  std::vector<double> base;   // [C]
  std::vector<double> stats;  // [P, C, 3]
  std::vector<double> decimated_time_us;
  std::vector<double> decimated;  // [D, C]
  std::string notes, events;
  double sample_cost_us = 0;

  double stat(std::size_t phase, std::size_t channel, int which) const {
    return stats[(phase * channels.size() + channel) * 3 + static_cast<std::size_t>(which)];
  }
  // The channel of `signal` on `device`, or -1.
  int channel(const std::string& device, const std::string& signal) const;
  std::vector<std::string> gpus() const;  // "gpu0", "gpu1", ... in channel order
};

struct TelemetryFindings {
  bool ran = false;  // the file has /telemetry
  std::int64_t interval_ms = 0;
  std::vector<TelemetryNode> nodes;
  std::vector<Finding> findings;
};

TelemetryFindings telemetry_findings(const RunFile& file, const RunFacts& facts);
// A slow rank's finding (gemm.stragglers, train.stragglers, devices.memory...: a warn or fail
// naming a rank) gains what its GPU was doing in that phase when the telemetry saw it throttled:
// "; its GPU (gpu1, 0000:1c:00.0) ran below its clocks in gemm (sw_power_cap; power up to 700 W
// of 700 W)". The GPU is the rank's own (the topology's bus id against NVML's).
void attach_throttling(std::vector<Finding>& findings, const TelemetryFindings& telemetry,
                       const RunFacts& facts);
// One line for the summary ("telemetry: 2 nodes every 100 ms; 0 GPUs; ...") or "" when absent.
std::string format_telemetry(const TelemetryFindings& findings);

}  // namespace shakedown
