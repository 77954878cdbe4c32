#include "phases/telemetry.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "core/host.hpp"
#include "record/schema.hpp"
#include "runtime/clock.hpp"
#include "runtime/mpi.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/summary.hpp"
#include "topology/cpu_list.hpp"
#include "topology/discovery.hpp"

namespace shakedown {
namespace {

namespace tm = telemetry;
namespace st = schema::telemetry;

std::string join_with(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::vector<float> to_float(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// Rank 0: one node's message into /telemetry/node<N>.
void write_node(RunWriter& w, const tm::NodeMessage& m, std::size_t channels, std::string& phases,
                std::string& events) {
  const std::string group = schema::telemetry_node_group(m.node);
  if (m.with_header) {
    std::vector<std::string> devices, signals, units, kinds;
    for (const tm::Channel& c : m.channels) {
      devices.push_back(c.device);
      signals.push_back(c.signal);
      units.push_back(c.unit);
      kinds.emplace_back(tm::kind_name(c.kind));
    }
    w.set_attr(group, st::kAttrNode, m.node);
    w.set_attr(group, st::kAttrHost, m.host);
    w.set_attr(group, st::kAttrDevices, join_with(devices, ","));
    w.set_attr(group, st::kAttrSignals, join_with(signals, ","));
    w.set_attr(group, st::kAttrUnits, join_with(units, ","));
    w.set_attr(group, st::kAttrKinds, join_with(kinds, ","));
    w.set_attr(group, st::kAttrGpuBusIds, join_with(m.bus_ids, ","));
    w.write_array(group, st::kBase, m.base, {channels});
  }
  const tm::NodePhase& p = m.phase;
  phases += (phases.empty() ? "" : ",") + p.phase;
  if (!p.events.empty()) events += (events.empty() ? "" : "\n") + p.phase + ": " + p.events;
  w.set_attr(group, st::kAttrPhases, phases);
  w.set_attr(group, st::kAttrEvents, events);
  w.set_attr(group, st::kAttrNotes, join_with(m.notes, "\n"));
  w.set_attr(group, st::kAttrSampleCostUs, m.sample_cost_us);
  w.set_attr(group, st::kAttrSamplerCpus, m.sampler_cpus);
  w.append_rows(group, st::kPhaseStartUs, std::span<const double>(&p.start_us, 1), {});
  w.append_rows(group, st::kPhaseEndUs, std::span<const double>(&p.end_us, 1), {});
  const std::int64_t samples = p.samples;
  w.append_rows(group, st::kPhaseSamples, std::span<const std::int64_t>(&samples, 1), {});
  w.append_rows(group, st::kStats, to_float(p.stats), {channels, 3});
  if (!p.decimated_time_us.empty()) {  // a phase shorter than the interval may have no sample
    w.append_rows(group, st::kDecimatedTimeUs, p.decimated_time_us, {});
    w.append_rows(group, st::kDecimated, to_float(p.decimated), {channels});
  }
  if (!p.full_time_us.empty()) {
    w.append_rows(group, st::kFullTimeUs, p.full_time_us, {});
    w.append_rows(group, st::kFull, to_float(p.full), {channels});
  }
}

// Collective over the world. For the host's first rank: the CPUs it may use that no rank of the
// host is bound to (the sampler's place, out of every measuring rank's way); empty when every
// allowed CPU has a rank (or the ranks are not bound: then each may run anywhere).
std::vector<int> free_cpus(const Context& ctx, const RankInfo& self) {
  MPI_Comm host = MPI_COMM_NULL;
  SD_MPI_CHECK(
      MPI_Comm_split_type(ctx.world(), MPI_COMM_TYPE_SHARED, ctx.rank(), MPI_INFO_NULL, &host));
  const CommHandle host_handle(host);
  const std::vector<std::string> bound = allgather_strings(host, bound_cpus());
  std::vector<int> out;
  const auto allowed = parse_cpu_list(self.allowed_cpus);
  if (!allowed) return out;
  std::set<int> used;
  for (const std::string& text : bound) {
    const auto cpus = parse_cpu_list(text);
    if (!cpus) return out;  // a rank's binding unknown: nothing is known to be free
    used.insert(cpus->begin(), cpus->end());
  }
  for (int cpu : *allowed) {
    if (used.count(cpu) == 0) out.push_back(cpu);
  }
  return out;
}

std::string cpu_text(const std::vector<int>& cpus) {
  std::vector<std::string> parts;
  for (int c : cpus) parts.push_back(std::to_string(c));
  return join_with(parts, ",");
}

}  // namespace

std::string nvml_library_to_load() {
  if (const char* test = std::getenv("SHAKEDOWN_TEST_NVML_LIBRARY"); test != nullptr && *test) {
    return test;
  }
  return "libnvidia-ml.so.1";
}

TelemetryRun::TelemetryRun(PhaseEnv& env) : env_(env), enabled_(env.config.telemetry.enabled) {
  if (!enabled_) return;
  const TelemetryConfig& cfg = env.config.telemetry;
  const std::vector<int> cpus = free_cpus(env.ctx, env.self);
  if (env.ctx.local_rank() == 0) {
    // NVML only where an NVIDIA driver is (a CPU host has nothing for it to say, and the library
    // is not loaded for nothing), or where a test names its stand-in.
    const std::string library = nvml_library_to_load();
    const bool driver = std::filesystem::exists("/proc/driver/nvidia");
    tm::Nvml nvml = driver || library != "libnvidia-ml.so.1"
                        ? tm::Nvml::open(library)
                        : tm::Nvml::absent("no NVIDIA driver on this host (/proc/driver/nvidia)");
    tm::HostReader host;
    const char* kmsg = std::getenv("SHAKEDOWN_TEST_KERNEL_LOG");  // tests: a file they write
    sampler_ = std::make_unique<tm::Sampler>(std::move(host), std::move(nvml),
                                             std::chrono::milliseconds(cfg.interval_ms), cpus,
                                             kmsg != nullptr && *kmsg ? kmsg : "/dev/kmsg");
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
      Written& done = written_[m.node];
      const std::size_t channels = m.with_header ? m.channels.size() : m.phase.stats.size() / 3;
      write_node(w, m, channels, done.phases, done.events);
    }
  });
}

}  // namespace shakedown
