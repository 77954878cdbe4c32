#pragma once
// What a node keeps of a phase's samples, decided on the node before anything is sent, so 1,024
// nodes x 8 GPUs x 20 signals at 10 Hz do not all travel to rank 0 and into the file:
//   - per channel the phase's min, median and max (always);
//   - a decimated series, one row per `window` (gauges: the window's mean; counters: its last
//     value; bit masks: the OR of the window, so a short throttle stays visible), at most
//     `max_rows` rows a phase (a longer phase gets wider windows) (always);
//   - the full-rate series, only when the node saw an event in the phase (a GPU throttled for
//     power or heat, an uncorrected ECC error, a remap pending or failed, an error counter of an
//     InfiniBand port or GPU that grew) or when `keep_all` is set.
// Counters are kept as the increase since the node's first sample (their first values apart, in
// base()): small numbers that float32 holds exactly, and what the checks judge.
#include <string>
#include <vector>

#include "telemetry/channels.hpp"
#include "telemetry/sampler.hpp"

namespace shakedown::telemetry {

struct NodePhase {
  std::string phase;
  double start_us = 0;  // the phase's span on rank 0's clock
  double end_us = 0;
  int samples = 0;                        // samples the phase's span held
  std::vector<double> stats;              // [channels, 3]: min, median, max (NaN: no value)
  std::vector<double> decimated_time_us;  // [Td], the window's first sample's time
  std::vector<double> decimated;          // [Td, channels]
  std::vector<double> full_time_us;       // [Tf] (empty unless events or keep_all)
  std::vector<double> full;               // [Tf, channels]
  std::string events;                     // what made the full-rate series kept, "" none
};

class NodeSummarizer {
 public:
  // `max_rows`: at most this many decimated rows per phase; a phase longer than max_rows
  // windows gets wider windows (its span / max_rows), so a long run's file stays bounded.
  NodeSummarizer(std::vector<Channel> channels, double window_us, bool keep_all,
                 std::size_t max_rows = 128);

  // Summarises `batch` (its times already on rank 0's clock) as the phase `name` that ran from
  // `start_us` to `end_us`.
  NodePhase summarize(const std::string& name, double start_us, double end_us, const Batch& batch);
  const std::vector<Channel>& channels() const noexcept { return channels_; }
  // Each counter's value at its first reading (NaN for gauges and bit masks, or never read).
  const std::vector<double>& base() const noexcept { return base_; }

 private:
  std::vector<Channel> channels_;
  double window_us_;
  std::size_t max_rows_;
  bool keep_all_;
  std::vector<double> base_;
  std::vector<double> last_;  // counters: the largest increase summarised so far
};

// Whether an increase of this counter is a fault (the node keeps the full series; the checks
// judge it): uncorrected ECC errors, uncorrectable remapped rows, Xid errors, InfiniBand error
// counters.
bool is_error_counter(const std::string& signal);

// What a node sends rank 0 after a phase, and rank 0 reads back: the phase, and once (the
// first phase) the node's channels, counter bases, GPU bus ids and notes.
struct NodeMessage {
  int node = 0;
  std::string host;
  bool with_header = false;
  std::vector<Channel> channels;     // with_header only
  std::vector<double> base;          // with_header only
  std::vector<std::string> bus_ids;  // with_header only
  std::vector<std::string> notes;    // every phase (NVML's grow as signals fail)
  double sample_cost_us = 0;
  std::string sampler_cpus;  // "5,6,7" or why it shares the ranks' CPUs
  NodePhase phase;
};
std::string pack(const NodeMessage& message);
NodeMessage unpack(const std::string& bytes);  // InternalError on a malformed message

}  // namespace shakedown::telemetry
