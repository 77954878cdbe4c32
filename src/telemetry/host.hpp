#pragma once
// The host's signals for the telemetry sampler: load, memory available, the cores' clock (min,
// median and max over the cores: one slow core is what matters, and 192 series per node would
// not scale), and every InfiniBand port's traffic and error counters. Read from files only
// (/proc, /sys); the roots are parameters so tests read a tree laid out as the kernel's.
#include <span>
#include <string>
#include <vector>

#include "telemetry/channels.hpp"

namespace shakedown::telemetry {

class HostReader {
 public:
  explicit HostReader(const std::string& sys_root = "/sys", const std::string& proc_root = "/proc");

  // The host's channels (device "host") then each port's (device "<ib device>:<port>").
  const std::vector<Channel>& channels() const noexcept { return channels_; }
  // One reading of every channel into `out` (NaN where a file could not be read).
  void read(std::span<double> out) const;
  // What could not be sampled and why ("no cpufreq: the cores' clock from /proc/cpuinfo",
  // "no InfiniBand ports under /sys/class/infiniband").
  const std::vector<std::string>& notes() const noexcept { return notes_; }

 private:
  std::string proc_root_;
  std::vector<std::string> cpufreq_files_;  // scaling_cur_freq per core (kHz); empty: cpuinfo
  std::vector<std::string> counter_files_;  // per port, its counters in channel order
  std::vector<Channel> channels_;
  std::vector<std::string> notes_;
};

}  // namespace shakedown::telemetry
