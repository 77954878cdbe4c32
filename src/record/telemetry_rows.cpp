#include "record/telemetry_rows.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/strings.hpp"
#include "record/precision.hpp"
#include "record/schema.hpp"

namespace shakedown {
namespace {

namespace tm = telemetry;
namespace st = schema::telemetry;

// Telemetry keeps 12 significant bits (0.024%): far finer than any signal's meaning (a watt of
// 700, a degree, a MHz of 2,000), and the zeroed low bits compress.
constexpr int kTelemetryBits = 12;
// The series arrive a phase (hundreds of rows) at a time: chunks of about 64 KiB compress, one
// row of a few hundred channels per chunk would not.
constexpr std::uint64_t kChunkBytes = 64 << 10;
constexpr std::uint64_t kChunkRows = 1024;  // the times: 8 KiB

std::vector<float> to_float(const std::vector<double>& v) {
  std::vector<float> out;
  out.reserve(v.size());
  for (double x : v) out.push_back(round_significant(x, kTelemetryBits));
  return out;
}

}  // namespace

void write_telemetry_node(RunWriter& w, const tm::NodeMessage& m, TelemetryGroup& done) {
  const std::size_t channels = m.with_header ? m.channels.size() : m.phase.stats.size() / 3;
  std::string& phases = done.phases;
  std::string& events = done.events;
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
    w.set_attr(group, st::kAttrDevices, join(devices, ","));
    w.set_attr(group, st::kAttrSignals, join(signals, ","));
    w.set_attr(group, st::kAttrUnits, join(units, ","));
    w.set_attr(group, st::kAttrKinds, join(kinds, ","));
    w.set_attr(group, st::kAttrGpuBusIds, join(m.bus_ids, ","));
    w.write_array(group, st::kBase, m.base, {channels});
  }
  const tm::NodePhase& p = m.phase;
  phases += (phases.empty() ? "" : ",") + p.phase;
  if (!p.events.empty()) events += (events.empty() ? "" : "\n") + p.phase + ": " + p.events;
  w.set_attr(group, st::kAttrPhases, phases);
  w.set_attr(group, st::kAttrEvents, events);
  w.set_attr(group, st::kAttrNotes, join(m.notes, "\n"));
  w.set_attr(group, st::kAttrSampleCostUs, m.sample_cost_us);
  w.set_attr(group, st::kAttrSamplerCpus, m.sampler_cpus);
  w.append_rows(group, st::kPhaseStartUs, std::span<const double>(&p.start_us, 1), {});
  w.append_rows(group, st::kPhaseEndUs, std::span<const double>(&p.end_us, 1), {});
  const std::int64_t samples = p.samples;
  w.append_rows(group, st::kPhaseSamples, std::span<const std::int64_t>(&samples, 1), {});
  w.append_rows(group, st::kStats, to_float(p.stats), {channels, 3});
  const std::uint64_t series_rows = std::max<std::uint64_t>(1, kChunkBytes / (4 * channels));
  if (!p.decimated_time_us.empty()) {  // a phase whose sampler did not answer has no sample
    w.append_rows(group, st::kDecimatedTimeUs, p.decimated_time_us, {}, kChunkRows);
    w.append_rows(group, st::kDecimated, to_float(p.decimated), {channels}, series_rows);
  }
  if (!p.full_time_us.empty()) {
    w.append_rows(group, st::kFullTimeUs, p.full_time_us, {}, kChunkRows);
    w.append_rows(group, st::kFull, to_float(p.full), {channels}, series_rows);
  }
}

}  // namespace shakedown
