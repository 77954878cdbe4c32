#pragma once
// Telemetry alongside the phases (not a phase of its own): each host's first rank runs a sampler
// thread (telemetry/sampler.hpp) from before the first phase to after the last; after each phase
// it summarises what it sampled and rank 0 writes it to /telemetry/node<N> (N: that rank's node;
// pretend nodes on one host share the host's sampler), so a run that dies later keeps the
// telemetry of every phase it completed. When the watchdog ends the run in a phase (a hang, a
// failed or dead rank; not a signal), each sampler's node sends what it sampled of that phase
// with its acknowledgement, and rank 0 adds it to the file as it marks it aborted: the phase a
// GPU fell off the bus in is the one whose telemetry says so.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "phases/phase.hpp"
#include "record/recorder.hpp"
#include "record/telemetry_rows.hpp"
#include "runtime/watchdog.hpp"

namespace shakedown {

namespace telemetry {
class Sampler;
class NodeSummarizer;
struct NodeMessage;
}  // namespace telemetry

class TelemetryRun {
 public:
  // Collective over the world: starts the samplers when telemetry.enabled. Keeps references to
  // env's context, recorder and watchdog (not to env): it may outlive the pipeline that made
  // it, so that a failure thrown out of a phase still finds it when the job ends.
  explicit TelemetryRun(PhaseEnv& env);
  TelemetryRun(const TelemetryRun&) = delete;
  TelemetryRun& operator=(const TelemetryRun&) = delete;
  ~TelemetryRun();

  // The phase `name` begins at `start_us` (runtime/clock.hpp's now_us on this rank): what the
  // samplers take from now on is its own, also if the run ends in it.
  void begin_phase(const std::string& name, double start_us);
  // Collective over the world, after the phase `name` that ran from `start_us` to `end_us`:
  // each node's summary of the phase reaches rank 0, which writes it. Nothing when telemetry is
  // off.
  void record_phase(const std::string& name, double start_us, double end_us);

 private:
  // The watchdog's AbortReport: the packed summary of the phase this rank's node was in (or
  // of the last one, if it had not reached rank 0 yet), "" when there is none.
  std::string abort_report();
  // The recorder's AbortWrite on rank 0: every node's abort report into the file.
  void write_abort_reports(RunWriter& w);
  // This node's summary of the phase from `start_us` to `end_us` (this rank's clock); mutex_
  // held.
  telemetry::NodeMessage summarize_locked(const std::string& name, double start_us, double end_us);

  const Context& ctx_;
  Recorder& recorder_;
  Watchdog& watchdog_;
  bool enabled_ = false;
  std::string sampler_cpus_;  // hosts' first ranks: where the sampler runs, for the record

  // Guards what the watchdog's thread reads when the run ends: the sampler's batches, the
  // summarizer, the header flag, the phase in progress and the summary in flight. Never held
  // across a collective.
  std::mutex mutex_;
  bool header_sent_ = false;
  std::string phase_;  // the phase in progress, "" between phases
  double phase_start_us_ = 0;
  std::unique_ptr<telemetry::NodeMessage> in_flight_;      // summarised, not yet at rank 0
  std::unique_ptr<telemetry::Sampler> sampler_;            // hosts' first ranks
  std::unique_ptr<telemetry::NodeSummarizer> summarizer_;  // hosts' first ranks
  std::map<int, TelemetryGroup> written_;  // rank 0: what each node's group says so far
                                           // (under the recorder's writer lock)
  Watchdog::AbortRegistration report_registration_;
  std::unique_ptr<Recorder::AbortWriteRegistration> write_registration_;  // rank 0
};

}  // namespace shakedown
