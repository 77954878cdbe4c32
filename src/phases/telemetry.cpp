#include "phases/telemetry.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "core/host.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"
#include "record/telemetry_rows.hpp"
#include "runtime/clock.hpp"
#include "runtime/mpi.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/summary.hpp"
#include "topology/cpu_list.hpp"

namespace shakedown {
namespace {

namespace tm = telemetry;
namespace st = schema::telemetry;

std::string cpu_text(const std::vector<int>& cpus) {
  std::vector<std::string> parts;
  for (int c : cpus) parts.push_back(std::to_string(c));
  return join(parts, ",");
}

}  // namespace

TelemetryRun::TelemetryRun(PhaseEnv& env)
    : ctx_(env.ctx),
      recorder_(env.recorder),
      watchdog_(env.watchdog),
      enabled_(env.config.telemetry.enabled) {
  if (!enabled_) return;
  const TelemetryConfig& cfg = env.config.telemetry;
  const std::vector<int>& cpus = env.free_cpus;
  // One sampler per host: pretend nodes (virtual nodes) share their host's GPUs, ports and
  // cores, so its first rank samples for them all (its node's group holds the host's telemetry),
  // and a test host with six pretend nodes does not wake six samplers beside busy ranks.
  if (env.ctx.host_local_rank() == 0) {
    // NVML only where an NVIDIA driver is (a CPU host has nothing for it to say, and the library
    // is not loaded for nothing), or where a test names its stand-in.
    const std::string stand_in = test_override("SHAKEDOWN_TEST_NVML_LIBRARY");
    const std::string kernel_log = test_override("SHAKEDOWN_TEST_KERNEL_LOG");
    tm::Nvml nvml = !stand_in.empty() ? tm::Nvml::open(stand_in)
                    : std::filesystem::exists("/proc/driver/nvidia")
                        ? tm::Nvml::open()
                        : tm::Nvml::absent("no NVIDIA driver on this host (/proc/driver/nvidia)");
    sampler_ = std::make_unique<tm::Sampler>(tm::HostReader(), std::move(nvml),
                                             std::chrono::milliseconds(cfg.interval_ms), cpus,
                                             kernel_log.empty() ? "/dev/kmsg" : kernel_log);
    sampler_cpus_ = cpus.empty() ? "shared with the ranks (no CPU free of them)" : cpu_text(cpus);
    summarizer_ = std::make_unique<tm::NodeSummarizer>(sampler_->channels(),
                                                       cfg.decimate_ms * 1000.0, cfg.keep == "all");
  }
  env.recorder.write([&](RunWriter& w) {  // rank 0 only
    w.set_attr(schema::kTelemetryGroup, st::kAttrIntervalMs, cfg.interval_ms);
    w.set_attr(schema::kTelemetryGroup, st::kAttrDecimateMs, cfg.decimate_ms);
    w.set_attr(schema::kTelemetryGroup, st::kAttrKeep, cfg.keep);
  });
  if (sampler_) report_registration_ = watchdog_.on_abort_report([this] { return abort_report(); });
  if (ctx_.is_root()) {
    write_registration_ = recorder_.on_abort([this](RunWriter& w) { write_abort_reports(w); });
  }
}

// The registrations go first (members end in reverse order): an abort that runs meanwhile
// finishes before the sampler it reads is gone.
TelemetryRun::~TelemetryRun() {
  write_registration_.reset();
  report_registration_.reset();
}

void TelemetryRun::begin_phase(const std::string& name, double start_us) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  phase_ = name;
  phase_start_us_ = start_us;
}

tm::NodeMessage TelemetryRun::summarize_locked(const std::string& name, double start_us,
                                               double end_us) {
  tm::Batch batch = sampler_->take();
  const double offset = ctx_.clock_offset_us();
  for (double& t : batch.time_us) t -= offset;
  tm::NodeMessage m;
  m.node = ctx_.node_index();
  m.host = local_hostname();
  m.with_header = !header_sent_;
  if (m.with_header) {
    m.channels = summarizer_->channels();
    m.bus_ids = sampler_->gpu_bus_ids();
  }
  m.phase = summarizer_->summarize(name, start_us - offset, end_us - offset, batch);
  if (m.with_header) m.base = summarizer_->base();
  m.notes = sampler_->notes();
  m.sampler_cpus = sampler_cpus_;
  m.sample_cost_us = sampler_->sample_cost_us();
  header_sent_ = true;
  return m;
}

void TelemetryRun::record_phase(const std::string& name, double start_us, double end_us) {
  if (!enabled_) return;
  std::string mine;
  {
    std::lock_guard lock(mutex_);
    phase_.clear();
    if (sampler_) {
      in_flight_ = std::make_unique<tm::NodeMessage>(summarize_locked(name, start_us, end_us));
      mine = tm::pack(*in_flight_);
    }
  }
  const std::vector<std::string> all = gather_strings(ctx_.world(), 0, mine);
  {
    std::lock_guard lock(mutex_);
    in_flight_.reset();  // at rank 0 now
  }
  if (!ctx_.is_root()) return;
  recorder_.write([&](RunWriter& w) {
    for (const std::string& bytes : all) {
      if (bytes.empty()) continue;
      const tm::NodeMessage m = tm::unpack(bytes);
      write_telemetry_node(w, m, written_[m.node]);
    }
  });
}

std::string TelemetryRun::abort_report() {
  std::lock_guard lock(mutex_);
  if (!sampler_) return "";
  tm::NodeMessage m;
  if (in_flight_) {
    m = *in_flight_;  // the last phase's summary, which the gather did not bring to rank 0
  } else if (!phase_.empty()) {
    m = summarize_locked(phase_, phase_start_us_, now_us());  // up to now: the run ends in it
  } else {
    return "";  // between phases: everything sampled so far is in the file
  }
  // The watchdog carries a bounded report: the full-rate series go first, then decimated rows
  // (every other one, as often as needed); the statistics and events always stay.
  std::string bytes = tm::pack(m);
  const std::size_t limit = Watchdog::kMaxAbortReport - 1024;
  if (bytes.size() > limit) {
    m.phase.full_time_us.clear();
    m.phase.full.clear();
    bytes = tm::pack(m);
  }
  const std::size_t channels = m.phase.stats.size() / 3;
  while (bytes.size() > limit && !m.phase.decimated_time_us.empty()) {
    std::vector<double> times, rows;
    for (std::size_t t = 0; t < m.phase.decimated_time_us.size(); t += 2) {
      times.push_back(m.phase.decimated_time_us[t]);
      rows.insert(rows.end(), m.phase.decimated.begin() + static_cast<std::ptrdiff_t>(t * channels),
                  m.phase.decimated.begin() + static_cast<std::ptrdiff_t>((t + 1) * channels));
    }
    if (times.size() == m.phase.decimated_time_us.size()) {  // one row left
      times.clear();
      rows.clear();
    }
    m.phase.decimated_time_us = std::move(times);
    m.phase.decimated = std::move(rows);
    bytes = tm::pack(m);
  }
  return bytes;
}

void TelemetryRun::write_abort_reports(RunWriter& w) {
  for (const std::string& bytes : watchdog_.abort_reports()) {
    if (bytes.empty()) continue;
    try {
      const tm::NodeMessage m = tm::unpack(bytes);
      // A node whose header never reached the file has no group to add a phase to.
      if (!m.with_header && !written_.contains(m.node)) continue;
      write_telemetry_node(w, m, written_[m.node]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shakedown: the telemetry of the last phase was not recorded: %s\n",
                   e.what());
    }
  }
}

}  // namespace shakedown
