#include "telemetry/sampler.hpp"

#include <sched.h>

#include <utility>

#include "core/strings.hpp"
#include "runtime/clock.hpp"

namespace shakedown::telemetry {

Sampler::Sampler(HostReader host, Nvml nvml, std::chrono::milliseconds interval,
                 std::vector<int> cpus, const std::string& kernel_log)
    : host_(std::move(host)), nvml_(std::move(nvml)), interval_(interval), cpus_(std::move(cpus)) {
  channels_ = host_.channels();
  if (nvml_.loaded()) {
    for (int g = 0; g < nvml_.count(); ++g) {
      for (Channel c : gpu_signals()) {
        c.device = "gpu" + std::to_string(g);
        channels_.push_back(std::move(c));
      }
      bus_ids_.push_back(nvml_.bus_id(g));
    }
    xid_count_.assign(static_cast<std::size_t>(nvml_.count()), 0.0);
    xid_last_.assign(static_cast<std::size_t>(nvml_.count()), kNaN);
    // Xids from NVML's event set where it takes the GPU, else from the kernel log.
    nvml_.watch_xids();
    xid_lost_seen_ = nvml_.xid_notes().size();  // registration's notes are judged here
    std::vector<std::string> unwatched;
    for (int g = 0; g < nvml_.count(); ++g) {
      if (!nvml_.watching_xids(g)) unwatched.push_back("gpu" + std::to_string(g));
    }
    // Followed from now on even when NVML watches every GPU: it takes over if the event set
    // is given up during the run.
    xid_.emplace(kernel_log);
    if (!unwatched.empty()) {
      if (!xid_->readable()) {
        // Neither source: NVML's reasons, then the log's.
        xid_notes_ = nvml_.xid_notes();
        xid_notes_.push_back(
            "no Xid errors" +
            (static_cast<int>(unwatched.size()) == nvml_.count() ? "" : " for " + join(unwatched)) +
            ": " + xid_->why());
      }
    }
  } else {
    nvml_note_ = "no GPU signals: " + nvml_.why();
  }
  thread_ = std::thread([this] { run(); });
}

Sampler::~Sampler() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Sampler::sample_once(std::vector<double>& row) {
  const std::size_t host_channels = host_.channels().size();
  const std::size_t per_gpu = gpu_signals().size();
  host_.read(std::span<double>(row.data(), host_channels));
  for (int g = 0; g < nvml_.count(); ++g) {
    nvml_.read(g, std::span<double>(
                      row.data() + host_channels + static_cast<std::size_t>(g) * per_gpu, per_gpu));
  }
  read_xids(row);
}

void Sampler::read_xids(std::vector<double>& row) {
  std::vector<std::string> unmatched;
  for (const Nvml::Xid& x : nvml_.poll_xids()) {
    if (x.gpu < 0) {
      unmatched.push_back("Xid " + std::to_string(x.code) +
                          " from NVML's event set for a device it does not list");
      continue;
    }
    xid_count_[static_cast<std::size_t>(x.gpu)] += 1;
    xid_last_[static_cast<std::size_t>(x.gpu)] = x.code;
  }
  const bool log = xid_ && xid_->readable();
  for (const XidEvent& e : log ? xid_->poll() : std::vector<XidEvent>{}) {
    // The driver writes "0000:1b:00", NVML "0000:1b:00.0".
    const std::string bus = lowercase(e.bus);
    bool matched = false;
    for (std::size_t g = 0; g < bus_ids_.size(); ++g) {
      if (bus.empty() || bus_ids_[g].rfind(bus, 0) != 0) continue;
      matched = true;
      // A GPU NVML's event set watches has this Xid counted already.
      if (nvml_.watching_xids(static_cast<int>(g))) continue;
      xid_count_[g] += 1;
      xid_last_[g] = e.code;
    }
    if (!matched) {
      unmatched.push_back("Xid " + std::to_string(e.code) + " of " + e.bus +
                          ", a device NVML does not list: " + e.text);
    }
  }
  if (!unmatched.empty()) {
    std::lock_guard lock(mutex_);
    for (std::string& note : unmatched) {
      if (xid_notes_.size() < 16) xid_notes_.push_back(std::move(note));
    }
  }
  const std::size_t host_channels = host_.channels().size();
  const std::size_t per_gpu = gpu_signals().size();
  for (std::size_t g = 0; g < xid_count_.size(); ++g) {
    // NaN where neither source watches the GPU (the notes say why).
    if (!log && !nvml_.watching_xids(static_cast<int>(g))) continue;
    const std::size_t at = host_channels + g * per_gpu + per_gpu - 2;  // the last two signals
    row[at] = xid_count_[g];
    row[at + 1] = xid_last_[g];
  }
}

void Sampler::run() {
  if (!cpus_.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus_) {
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
    }
    // This thread only (pid 0): a CPU the cgroup forbids leaves it where it was, which is
    // still correct, only not out of the way.
    sched_setaffinity(0, sizeof set, &set);
  }
  std::vector<double> row(channels_.size());
  auto next = std::chrono::steady_clock::now();
  bool asked = false;  // this sample is one take() asked for: off the grid, which stays
  for (;;) {
    const double t0 = now_us();
    sample_once(row);
    const double t1 = now_us();
    {
      std::unique_lock lock(mutex_);
      batch_.time_us.push_back(t0);
      batch_.values.insert(batch_.values.end(), row.begin(), row.end());
      cost_sum_us_ += t1 - t0;
      ++samples_;
      if (nvml_.unavailable().size() != gpu_notes_.size()) gpu_notes_ = nvml_.unavailable();
      // An event set that failed during the run says so (NVML's notes after the first).
      if (const auto& lost = nvml_.xid_notes(); lost.size() > xid_lost_seen_) {
        const std::string log = xid_->readable() ? "" : "; no kernel log either: " + xid_->why();
        for (std::size_t i = xid_lost_seen_; i < lost.size(); ++i) {
          xid_notes_.push_back(lost[i] + log);
        }
        xid_lost_seen_ = lost.size();
      }
      if (sample_now_) {
        sample_now_ = false;
        sampled_.notify_all();
      }
      // On a fixed grid, not "interval after the last sample": the rate stays what was asked
      // however long a sample takes (a slow one is followed at once by the next).
      if (!asked) next += interval_;
      if (const auto now = std::chrono::steady_clock::now(); next < now) {
        next = now + interval_;  // ticks a slow sample missed are skipped, not caught up
      }
      wake_.wait_until(lock, next, [this] { return stop_ || sample_now_; });
      if (stop_) return;
      asked = sample_now_;
    }
  }
}

Batch Sampler::take() {
  std::unique_lock lock(mutex_);
  if (batch_.time_us.empty() && !stop_) {
    sample_now_ = true;
    wake_.notify_all();
    const auto most = std::min<std::chrono::milliseconds>(2 * interval_, std::chrono::seconds(1));
    sampled_.wait_for(lock, most, [this] { return !batch_.time_us.empty() || stop_; });
  }
  Batch out;
  std::swap(out, batch_);
  return out;
}

std::vector<std::string> Sampler::notes() const {
  std::vector<std::string> out = host_.notes();
  if (!nvml_note_.empty()) out.push_back(nvml_note_);
  std::lock_guard lock(mutex_);
  out.insert(out.end(), gpu_notes_.begin(), gpu_notes_.end());
  out.insert(out.end(), xid_notes_.begin(), xid_notes_.end());
  return out;
}

double Sampler::sample_cost_us() const {
  std::lock_guard lock(mutex_);
  return samples_ > 0 ? cost_sum_us_ / static_cast<double>(samples_) : 0.0;
}

}  // namespace shakedown::telemetry
