#pragma once
// Telemetry alongside the phases (not a phase of its own): each host's first rank runs a sampler
// thread (telemetry/sampler.hpp) from before the first phase to after the last; after each phase
// it summarises what it sampled and rank 0 writes it to /telemetry/node<N> (N: that rank's node;
// pretend nodes on one host share the host's sampler), so a run that dies later keeps the
// telemetry of every phase it completed.
#include <map>
#include <memory>
#include <string>

#include "phases/phase.hpp"
#include "record/telemetry_rows.hpp"

namespace shakedown {

namespace telemetry {
class Sampler;
class NodeSummarizer;
}  // namespace telemetry

class TelemetryRun {
 public:
  // Collective over the world: starts the samplers when telemetry.enabled.
  explicit TelemetryRun(PhaseEnv& env);
  TelemetryRun(const TelemetryRun&) = delete;
  TelemetryRun& operator=(const TelemetryRun&) = delete;
  ~TelemetryRun();

  // Collective over the world, after the phase `name` that ran from `start_us` to `end_us`
  // (runtime/clock.hpp's now_us on this rank): each node's summary of the phase reaches rank 0,
  // which writes it. Nothing when telemetry is off.
  void record_phase(const std::string& name, double start_us, double end_us);

 private:
  PhaseEnv& env_;
  bool enabled_ = false;
  bool header_sent_ = false;
  std::string sampler_cpus_;  // hosts' first ranks: where the sampler runs, for the record
  std::unique_ptr<telemetry::Sampler> sampler_;            // hosts' first ranks
  std::unique_ptr<telemetry::NodeSummarizer> summarizer_;  // hosts' first ranks
  std::map<int, TelemetryGroup> written_;  // rank 0: what each node's group says so far
};

}  // namespace shakedown
