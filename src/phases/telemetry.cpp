#include "phases/telemetry.hpp"

#include <unistd.h>

#include <chrono>
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

TelemetryRun::TelemetryRun(PhaseEnv& env) : env_(env), enabled_(env.config.telemetry.enabled) {
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
}

TelemetryRun::~TelemetryRun() = default;

void TelemetryRun::record_phase(const std::string& name, double start_us, double end_us) {
  if (!enabled_) return;
  const Context& ctx = env_.ctx;
  std::string mine;
  if (sampler_) {
    tm::Batch batch = sampler_->take();
    const double offset = ctx.clock_offset_us();
    for (double& t : batch.time_us) t -= offset;
    tm::NodeMessage m;
    m.node = ctx.node_index();
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
    mine = tm::pack(m);
  }
  const std::vector<std::string> all = gather_strings(ctx.world(), 0, mine);
  if (!ctx.is_root()) return;
  env_.recorder.write([&](RunWriter& w) {
    for (const std::string& bytes : all) {
      if (bytes.empty()) continue;
      const tm::NodeMessage m = tm::unpack(bytes);
      write_telemetry_node(w, m, written_[m.node]);
    }
  });
}

}  // namespace shakedown
