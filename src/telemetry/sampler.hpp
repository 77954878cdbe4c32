#pragma once
// The telemetry sampler: one thread on each host's first rank that reads the host's and the
// GPUs' signals every `interval` and keeps them until the main thread takes them at the end of a
// phase. The thread never calls MPI (the ranks run MPI_THREAD_SINGLE) and never writes the file:
// the phase boundary is where the main thread summarises the samples on the node and sends them
// to rank 0 (phases/telemetry.cpp).
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "telemetry/channels.hpp"
#include "telemetry/host.hpp"
#include "telemetry/nvml.hpp"
#include "telemetry/xid.hpp"

namespace shakedown::telemetry {

// Samples in the order taken: time_us[t] (the process's steady clock, runtime/clock.hpp's
// now_us) and values[t * channels + c].
struct Batch {
  std::vector<double> time_us;
  std::vector<double> values;
};

class Sampler {
 public:
  // Takes a first sample at once, then one every `interval` until destroyed. With `cpus`, the
  // thread runs only on those (CPUs no rank is bound to, so it never takes a measuring rank's
  // core); empty: where the process may run.
  // With NVML loaded it also counts the GPUs' Xid errors from now on: through NVML's event set,
  // and from `kernel_log` for any GPU the event set does not take.
  Sampler(HostReader host, Nvml nvml, std::chrono::milliseconds interval,
          std::vector<int> cpus = {}, const std::string& kernel_log = "/dev/kmsg");
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  ~Sampler();  // stops the thread

  // The host's channels, then each GPU's signals (device "gpu<i>").
  const std::vector<Channel>& channels() const noexcept { return channels_; }
  // The GPUs' bus ids by NVML index ("" unknown), for tying a GPU to the ranks that use it.
  const std::vector<std::string>& gpu_bus_ids() const noexcept { return bus_ids_; }
  // The samples taken since the last take(). When there are none (a phase shorter than the
  // interval), the thread takes one at once and take() waits for it, at most twice the interval
  // (and never over a second: a GPU whose NVML calls hang must not hold the run), so every phase
  // has its samples; the thread's grid of sample times stays as it was.
  Batch take();
  // What is not sampled, and why: the host reader's notes, NVML's state, each GPU signal NVML
  // gave no value for.
  std::vector<std::string> notes() const;
  // How long one sample took on average so far (microseconds): the sampler's cost.
  double sample_cost_us() const;

 private:
  void run();
  void sample_once(std::vector<double>& row);
  void read_xids(std::vector<double>& row);

  HostReader host_;
  Nvml nvml_;
  const std::chrono::milliseconds interval_;
  const std::vector<int> cpus_;
  std::vector<Channel> channels_;
  std::vector<std::string> bus_ids_;
  std::string nvml_note_;                     // why there are no GPU signals, "" when NVML loaded
  std::optional<XidReader> xid_;              // a GPU NVML's event set does not watch
  std::vector<double> xid_count_, xid_last_;  // per GPU; the sampler thread's

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool sample_now_ = false;             // take() waits for a sample; guarded by mutex_
  std::condition_variable sampled_;     // a sample asked for by take() is in batch_
  Batch batch_;                         // guarded by mutex_
  std::vector<std::string> gpu_notes_;  // guarded by mutex_
  std::vector<std::string> xid_notes_;  // guarded by mutex_
  std::size_t xid_lost_seen_ = 0;       // NVML's Xid notes copied so far (the sampler thread's)
  double cost_sum_us_ = 0;              // guarded by mutex_
  long samples_ = 0;                    // guarded by mutex_
  std::thread thread_;                  // last: started once everything above exists
};

}  // namespace shakedown::telemetry
