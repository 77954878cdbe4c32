#include "analysis/telemetry_report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "analysis/checks.hpp"
#include "analysis/collectives_data.hpp"
#include "analysis/number_text.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"
#include "telemetry/xid.hpp"

namespace shakedown {
namespace {

namespace st = schema::telemetry;
namespace tg = telemetry::gpu;
constexpr int kMin = 0, kMedian = 1, kMax = 2;

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  for (std::string_view part : split(std::string_view(text), sep)) out.emplace_back(part);
  return out;
}

TelemetryNode read_node(const RunFile& file, const std::string& group) {
  TelemetryNode n;
  n.node = static_cast<int>(file.attr_int64(group, st::kAttrNode));
  n.host = attr_or(file, group, st::kAttrHost);
  const auto devices = split_list(attr_or(file, group, st::kAttrDevices), ',');
  const auto signals = split_list(attr_or(file, group, st::kAttrSignals), ',');
  const auto units = split_list(attr_or(file, group, st::kAttrUnits), ',');
  const auto kinds = split_list(attr_or(file, group, st::kAttrKinds), ',');
  if (signals.size() != devices.size() || units.size() != devices.size() ||
      kinds.size() != devices.size()) {
    throw UsageError(file.path().string() + ": " + group +
                     " lists different numbers of devices, signals, units and kinds");
  }
  for (std::size_t c = 0; c < devices.size(); ++c) {
    telemetry::Channel ch;
    ch.device = devices[c];
    ch.signal = signals[c];
    ch.unit = units[c];
    ch.kind = telemetry::parse_kind(kinds[c]);
    n.channels.push_back(std::move(ch));
  }
  n.gpu_bus_ids = split_list(attr_or(file, group, st::kAttrGpuBusIds), ',');
  n.phases = split_list(attr_or(file, group, st::kAttrPhases), ',');
  n.notes = attr_or(file, group, st::kAttrNotes);
  n.events = attr_or(file, group, st::kAttrEvents);
  if (file.has_attr(group, st::kAttrSampleCostUs)) {
    n.sample_cost_us = file.attr_double(group, st::kAttrSampleCostUs);
  }
  n.base = file.read(group, st::kBase);
  n.phase_start_us = file.read(group, st::kPhaseStartUs);
  n.phase_end_us = file.read(group, st::kPhaseEndUs);
  n.phase_samples = file.read(group, st::kPhaseSamples);
  std::vector<std::uint64_t> dims;
  n.stats = file.read(group, st::kStats, &dims);
  const std::size_t nc = n.channels.size();
  if (dims.size() != 3 || dims[1] != nc || dims[2] != 3 || dims[0] != n.phases.size() ||
      n.phase_start_us.size() != n.phases.size() || n.phase_end_us.size() != n.phases.size() ||
      n.phase_samples.size() != n.phases.size() || n.base.size() != nc) {
    throw UsageError(file.path().string() + ": " + group +
                     " has stats, phases or base of shapes that do not match its channels");
  }
  if (file.has(group, st::kDecimatedTimeUs)) {  // absent while no phase had a sample
    n.decimated_time_us = file.read(group, st::kDecimatedTimeUs);
    n.decimated = file.read(group, st::kDecimated, &dims);
  }
  if (n.decimated.size() != n.decimated_time_us.size() * nc) {
    throw UsageError(file.path().string() + ": " + group + "/decimated does not match its times");
  }
  return n;
}

// Whether NVML's bus id and the topology's name the same device ("0000:1b:00.0" against
// "00000000:1B:00.0" or "1b:00.0": the domain's width and the case differ between tools).
bool same_bus(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  const std::string x = lowercase(a), y = lowercase(b);
  const std::size_t n = std::min<std::size_t>(7, std::min(x.size(), y.size()));  // "bb:dd.f"
  return x.compare(x.size() - n, n, y, y.size() - n, n) == 0;
}

// Whether `rank` runs on the host `n` sampled: one sampler per host, so ranks of every pretend
// node on it (filed under the first of them) share its GPUs.
bool on_host(const TelemetryNode& n, const RankInfo& rank) {
  return n.host.empty() ? rank.node_index == n.node : rank.hostname == n.host;
}

// "gpu1 (0000:1c:00.0, rank 5)" when the topology ties the GPU's bus id to ranks, else
// "gpu1 (0000:1c:00.0)", or "gpu1" without a bus id.
std::string gpu_name(const TelemetryNode& n, const std::string& device, const RunFacts& facts) {
  const std::size_t index = std::strtoul(device.c_str() + 3, nullptr, 10);
  if (index >= n.gpu_bus_ids.size() || n.gpu_bus_ids[index].empty()) return device;
  std::vector<std::string> ranks;
  for (const RankInfo& r : facts.ranks) {
    if (on_host(n, r) && same_bus(n.gpu_bus_ids[index], r.gpu.pci_bus_id)) {
      ranks.push_back(std::to_string(r.rank));
    }
  }
  std::string out = device + " (" + n.gpu_bus_ids[index];
  if (!ranks.empty()) out += (ranks.size() == 1 ? ", rank " : ", ranks ") + join(ranks, ",");
  return out + ")";
}

Finding node_finding(const RunFacts& facts, const TelemetryNode& n, std::string check,
                     CheckStatus status, std::string message) {
  Finding f;
  f.check = std::move(check);
  f.status = status;
  f.subject_kind = "node";
  f.subject = "node " + std::to_string(n.node);
  f.node = n.node;
  // A fault in a node's hardware: its host is the one to drain.
  if (status == CheckStatus::kFail) f.host = n.host.empty() ? facts.host_of_node(n.node) : n.host;
  f.message = facts.node_name(n.node) + ": " + message;
  return f;
}

// The OR of a bit-mask channel over the decimated windows inside (start, end].
unsigned long long bits_in(const TelemetryNode& n, std::size_t c, double start, double end) {
  unsigned long long bits = 0;
  const std::size_t nc = n.channels.size();
  for (std::size_t t = 0; t < n.decimated_time_us.size(); ++t) {
    if (n.decimated_time_us[t] <= start || n.decimated_time_us[t] > end) continue;
    bits |= telemetry::bits_of(n.decimated[t * nc + c]);
  }
  return bits;
}

// The phases in which counter channel `c` grew, and by how much: each phase's largest value
// against the largest of the phases before it (a phase without a sample changes nothing).
std::vector<std::pair<std::size_t, double>> growth(const TelemetryNode& n, std::size_t c) {
  std::vector<std::pair<std::size_t, double>> out;
  double seen = 0;
  for (std::size_t p = 0; p < n.phases.size(); ++p) {
    const double high = n.stat(p, c, kMax);
    if (!std::isfinite(high)) continue;
    if (high > seen) out.emplace_back(p, high - seen);
    seen = std::max(seen, high);
  }
  return out;
}

// The GPU's `signal` was read at least once: a channel NVML answered NOT_SUPPORTED for (ECC
// off, a GPU without row remapping) holds only NaN, and a check must not pass on it.
bool read_any(const TelemetryNode& n, const std::string& gpu, const char* signal) {
  const int c = n.channel(gpu, signal);
  if (c < 0) return false;
  const auto uc = static_cast<std::size_t>(c);
  if (uc < n.base.size() && std::isfinite(n.base[uc])) return true;
  for (std::size_t p = 0; p < n.phases.size(); ++p) {
    if (std::isfinite(n.stat(p, uc, kMax))) return true;
  }
  return false;
}

// " (not read on 2 of 8 GPU(s))" when some GPUs could not be read, else "".
std::string unread_note(std::size_t read, std::size_t gpus) {
  return read == gpus ? ""
                      : " (not read on " + std::to_string(gpus - read) + " of " +
                            std::to_string(gpus) + " GPU(s))";
}

void gpu_error_checks(const TelemetryFindings& t, const RunFacts& facts,
                      std::vector<Finding>& out) {
  std::size_t gpus = 0, xid_watched = 0, ecc_read = 0, remap_read = 0;
  std::vector<Finding> found;
  for (const TelemetryNode& n : t.nodes) {
    for (const std::string& g : n.gpus()) {
      ++gpus;
      ecc_read += read_any(n, g, tg::kEccUncorrected) ? 1 : 0;
      remap_read += read_any(n, g, tg::kRemappedUncorrectable) ||
                            read_any(n, g, tg::kRemapPending) || read_any(n, g, tg::kRemapFailed)
                        ? 1
                        : 0;
      std::vector<std::string> what;
      const int unc = n.channel(g, tg::kEccUncorrected);
      if (unc >= 0) {
        const auto c = static_cast<std::size_t>(unc);
        if (std::isfinite(n.base[c]) && n.base[c] > 0) {
          what.push_back(whole_text(n.base[c]) + " uncorrected ECC error(s) before the run");
        }
        for (const auto& [p, more] : growth(n, c)) {
          what.push_back(whole_text(more) + " uncorrected ECC error(s) during " + n.phases[p]);
        }
      }
      const int rows = n.channel(g, tg::kRemappedUncorrectable);
      if (rows >= 0) {
        for (const auto& [p, more] : growth(n, static_cast<std::size_t>(rows))) {
          what.push_back(whole_text(more) + " row(s) remapped for uncorrectable errors during " +
                         n.phases[p]);
        }
      }
      for (const char* flag : {tg::kRemapPending, tg::kRemapFailed}) {
        const int c = n.channel(g, flag);
        if (c < 0) continue;
        for (std::size_t p = 0; p < n.phases.size(); ++p) {
          if (n.stat(p, static_cast<std::size_t>(c), kMax) > 0) {
            what.push_back(std::string(flag == tg::kRemapPending ? "a row remap awaits a GPU reset"
                                                                 : "a row remap failed") +
                           " (seen in " + n.phases[p] + ")");
            break;
          }
        }
      }
      // Xid errors the driver logged during the run: a fault of the GPU, or (13, 31, 43, 45)
      // usually of the application, which is a warning.
      const int xids = n.channel(g, tg::kXidCount), last = n.channel(g, tg::kXidLast);
      std::vector<std::string> app_xids;
      if (xids >= 0 && !n.phases.empty() &&
          std::isfinite(n.stat(n.phases.size() - 1, static_cast<std::size_t>(xids), kMax))) {
        ++xid_watched;
      }
      if (xids >= 0) {
        for (const auto& [p, more] : growth(n, static_cast<std::size_t>(xids))) {
          const double code =
              last >= 0 ? n.stat(p, static_cast<std::size_t>(last), kMax) : std::nan("");
          const std::string text =
              whole_text(more) + " Xid error(s) during " + n.phases[p] +
              (std::isfinite(code) ? " (last: Xid " + whole_text(code) + ")" : "");
          (std::isfinite(code) && telemetry::xid_from_application(static_cast<int>(code)) ? app_xids
                                                                                          : what)
              .push_back(text);
        }
      }
      if (!app_xids.empty()) {
        found.push_back(node_finding(facts, n, "telemetry.gpu_errors", CheckStatus::kWarn,
                                     gpu_name(n, g, facts) + ": " + join(app_xids, "; ") +
                                         ": an Xid the application usually causes; check the "
                                         "kernel log if it repeats"));
      }
      if (!what.empty()) {
        found.push_back(node_finding(facts, n, "telemetry.gpu_errors", CheckStatus::kFail,
                                     gpu_name(n, g, facts) + ": " + join(what, "; ") +
                                         ": reset or replace the GPU before a reservation"));
      }
    }
  }
  if (gpus == 0) {
    out.push_back(run_finding("telemetry.gpu_errors", CheckStatus::kSkip,
                              "no GPU was sampled (see telemetry.coverage)"));
  } else if (found.empty() && ecc_read == 0 && remap_read == 0 && xid_watched == 0) {
    // Nothing was read: no verdict on the GPUs' errors, not a PASS.
    out.push_back(run_finding("telemetry.gpu_errors", CheckStatus::kSkip,
                              std::to_string(gpus) +
                                  " GPU(s) sampled, but none answered for ECC errors, row "
                                  "remapping or Xid events (see telemetry.coverage)"));
  } else if (found.empty()) {
    std::vector<std::string> seen;
    if (ecc_read > 0) seen.push_back("no uncorrected ECC error" + unread_note(ecc_read, gpus));
    if (remap_read > 0) {
      seen.push_back("no row remapped, pending or failed" + unread_note(remap_read, gpus));
    }
    if (xid_watched > 0) {
      seen.push_back("no Xid error reported (NVML's events or the kernel log)" +
                     unread_note(xid_watched, gpus));
    }
    std::vector<std::string> unread;
    if (ecc_read == 0) unread.push_back("ECC errors");
    if (remap_read == 0) unread.push_back("row remapping");
    if (xid_watched == 0) unread.push_back("Xid events");
    out.push_back(run_finding("telemetry.gpu_errors", CheckStatus::kPass,
                              std::to_string(gpus) + " GPU(s): " + join(seen, "; ") +
                                  (unread.empty() ? std::string()
                                                  : "; not read on any GPU: " + join(unread, ", ") +
                                                        " (see telemetry.coverage)")));
  }
  out.insert(out.end(), found.begin(), found.end());
}

void link_checks(const TelemetryFindings& t, const RunFacts& facts, std::vector<Finding>& out) {
  std::size_t ports = 0, nvlink_gpus = 0;
  std::vector<Finding> found;
  for (const TelemetryNode& n : t.nodes) {
    std::set<std::string> counted;
    for (std::size_t c = 0; c < n.channels.size(); ++c) {
      const telemetry::Channel& ch = n.channels[c];
      if (!telemetry::is_link_error(ch.signal)) continue;
      if (counted.insert(ch.device).second) ++ports;
      for (const auto& [p, more] : growth(n, c)) {
        found.push_back(node_finding(facts, n, "telemetry.links", CheckStatus::kFail,
                                     "InfiniBand port " + ch.device + ": " + ch.signal +
                                         " grew by " + whole_text(more) + " during " + n.phases[p] +
                                         ": check the cable, transceiver and switch port"));
      }
    }
    // NVLink: a GPU with fewer links up than the node's best, or fewer than at its own start.
    double node_best = 0;
    for (const std::string& g : n.gpus()) {
      const int c = n.channel(g, tg::kNvlinkActive);
      for (std::size_t p = 0; c >= 0 && p < n.phases.size(); ++p) {
        const double v = n.stat(p, static_cast<std::size_t>(c), kMax);
        if (std::isfinite(v)) node_best = std::max(node_best, v);
      }
    }
    for (const std::string& g : n.gpus()) {
      const int c = n.channel(g, tg::kNvlinkActive);
      if (c < 0 || node_best <= 0) continue;
      double low = std::numeric_limits<double>::infinity(), high = 0;
      for (std::size_t p = 0; p < n.phases.size(); ++p) {
        const double lo = n.stat(p, static_cast<std::size_t>(c), kMin);
        const double hi = n.stat(p, static_cast<std::size_t>(c), kMax);
        if (std::isfinite(lo)) low = std::min(low, lo);
        if (std::isfinite(hi)) high = std::max(high, hi);
      }
      if (!std::isfinite(low)) continue;
      ++nvlink_gpus;
      if (low < node_best) {
        found.push_back(node_finding(facts, n, "telemetry.links", CheckStatus::kFail,
                                     gpu_name(n, g, facts) + ": " + whole_text(low) +
                                         " NVLink link(s) up, the node's others " +
                                         whole_text(node_best) +
                                         (high > low ? " (links went down during the run)" : "") +
                                         ": the GPU or its NVSwitch connection needs service"));
      }
    }
  }
  if (ports == 0 && nvlink_gpus == 0) {
    out.push_back(run_finding("telemetry.links", CheckStatus::kSkip,
                              "no InfiniBand port and no NVLink state was sampled"));
  } else if (found.empty()) {
    out.push_back(
        run_finding("telemetry.links", CheckStatus::kPass,
                    std::to_string(ports) + " InfiniBand port(s): no error counter grew; " +
                        std::to_string(nvlink_gpus) + " GPU(s) with NVLink: every link stayed up"));
  }
  out.insert(out.end(), found.begin(), found.end());
}

void pcie_checks(const TelemetryFindings& t, const RunFacts& facts, std::vector<Finding>& out) {
  std::size_t judged = 0;
  std::vector<Finding> found;
  for (const TelemetryNode& n : t.nodes) {
    for (const std::string& g : n.gpus()) {
      const int util = n.channel(g, tg::kUtilization);
      const int gen = n.channel(g, tg::kPcieGen), max_gen = n.channel(g, tg::kPcieMaxGen);
      const int width = n.channel(g, tg::kPcieWidth), max_width = n.channel(g, tg::kPcieMaxWidth);
      if (util < 0 || gen < 0 || max_gen < 0 || width < 0 || max_width < 0) continue;
      for (std::size_t p = 0; p < n.phases.size(); ++p) {
        const auto at = [&](int c, int which) {
          return n.stat(p, static_cast<std::size_t>(c), which);
        };
        if (!(at(util, kMedian) >= 50) || !std::isfinite(at(gen, kMax)) ||
            !std::isfinite(at(max_gen, kMax))) {
          continue;
        }
        ++judged;
        const bool slow_gen = at(gen, kMax) < at(max_gen, kMax);
        const bool narrow = at(width, kMax) < at(max_width, kMax);
        if (!slow_gen && !narrow) continue;
        found.push_back(node_finding(
            facts, n, "telemetry.pcie", CheckStatus::kFail,
            gpu_name(n, g, facts) + ": PCIe link at most Gen" + whole_text(at(gen, kMax)) + " x" +
                whole_text(at(width, kMax)) + " of Gen" + whole_text(at(max_gen, kMax)) + " x" +
                whole_text(at(max_width, kMax)) + " while " + whole_text(at(util, kMedian)) +
                "% busy in " + n.phases[p] + ": reseat the GPU or check its riser and slot"));
        break;  // one finding per GPU
      }
    }
  }
  if (judged == 0) {
    out.push_back(run_finding("telemetry.pcie", CheckStatus::kSkip,
                              "no GPU was busy (median utilization >= 50%) in a phase with its "
                              "PCIe link read, so no link was judged under load"));
  } else if (found.empty()) {
    out.push_back(run_finding("telemetry.pcie", CheckStatus::kPass,
                              std::to_string(judged) +
                                  " busy GPU-phase(s): every PCIe link at its maximum speed and "
                                  "width"));
  }
  out.insert(out.end(), found.begin(), found.end());
}

// "gemm (sw_power_cap, hw_slowdown; power up to 700 W of 700 W; up to 83 C)" when `gpu` was
// slowed for power or heat in phase `p`, else "".
std::string throttled_in(const TelemetryNode& n, const std::string& gpu, std::size_t p) {
  const int reasons = n.channel(gpu, tg::kClockReasons);
  if (reasons < 0) return "";
  // The phase's samples: those taken after the previous phase ended (the node summarised each
  // phase's samples apart, so no decimation window spans two phases).
  const double from = p == 0 ? -std::numeric_limits<double>::infinity() : n.phase_end_us[p - 1];
  const unsigned long long bits =
      bits_in(n, static_cast<std::size_t>(reasons), from, n.phase_end_us[p]) &
      telemetry::kThrottleBits;
  if (bits == 0) return "";
  const auto high = [&](const char* signal) {
    const int c = n.channel(gpu, signal);
    return c >= 0 ? n.stat(p, static_cast<std::size_t>(c), kMax)
                  : std::numeric_limits<double>::quiet_NaN();
  };
  std::string text = n.phases[p] + " (" + telemetry::throttle_reasons_text(bits);
  if (std::isfinite(high(tg::kPower))) {
    text += "; power up to " + whole_text(high(tg::kPower)) + " W";
    if (std::isfinite(high(tg::kPowerLimit)))
      text += " of " + whole_text(high(tg::kPowerLimit)) + " W";
  }
  if (std::isfinite(high(tg::kTemperature)))
    text += "; up to " + whole_text(high(tg::kTemperature)) + " C";
  return text + ")";
}

void throttling_checks(const TelemetryFindings& t, const RunFacts& facts,
                       std::vector<Finding>& out) {
  std::size_t gpus = 0, unread = 0;
  std::vector<Finding> found;
  for (const TelemetryNode& n : t.nodes) {
    for (const std::string& g : n.gpus()) {
      if (!read_any(n, g, tg::kClockReasons)) {
        ++unread;
        continue;
      }
      ++gpus;
      std::vector<std::string> phases;
      for (std::size_t p = 0; p < n.phases.size(); ++p) {
        if (std::string text = throttled_in(n, g, p); !text.empty()) {
          phases.push_back(std::move(text));
        }
      }
      if (!phases.empty()) {
        found.push_back(node_finding(facts, n, "telemetry.throttling", CheckStatus::kWarn,
                                     gpu_name(n, g, facts) + " ran below its clocks in " +
                                         join(phases, ", ") +
                                         ": its timings there are not the GPU's best"));
      }
    }
  }
  if (gpus == 0) {
    out.push_back(run_finding("telemetry.throttling", CheckStatus::kSkip,
                              unread == 0 ? std::string("no GPU's clock event reasons were sampled")
                                          : std::to_string(unread) +
                                                " GPU(s) sampled, but none answered for its "
                                                "clock event reasons (see telemetry.coverage)"));
  } else if (found.empty()) {
    out.push_back(run_finding(
        "telemetry.throttling", CheckStatus::kPass,
        std::to_string(gpus) + " GPU(s): no power or thermal slowdown in any phase" +
            (unread == 0 ? std::string()
                         : "; clock event reasons not read on " + std::to_string(unread) +
                               " other GPU(s) (see telemetry.coverage)")));
  }
  out.insert(out.end(), found.begin(), found.end());
}

}  // namespace

int TelemetryNode::channel(const std::string& device, const std::string& signal) const {
  for (std::size_t c = 0; c < channels.size(); ++c) {
    if (channels[c].device == device && channels[c].signal == signal) return static_cast<int>(c);
  }
  return -1;
}

std::vector<std::string> TelemetryNode::gpus() const {
  std::vector<std::string> out;
  for (const auto& c : channels) {
    if (c.device.starts_with("gpu") && (out.empty() || out.back() != c.device)) {
      out.push_back(c.device);
    }
  }
  return out;
}

TelemetryFindings telemetry_findings(const RunFile& file, const RunFacts& facts) {
  TelemetryFindings t;
  if (!file.has(schema::kTelemetryGroup)) {
    // A file from before telemetry reads back with the default (enabled): only a run whose own
    // configuration has the section was asked to sample.
    const bool asked = facts.config_known && facts.config.telemetry.enabled &&
                       facts.meta.config_yaml.find("\ntelemetry:") != std::string::npos;
    if (asked && facts.meta.status == schema::kStatusComplete) {
      t.findings.push_back(run_finding("telemetry.coverage", CheckStatus::kFail,
                                       "telemetry was enabled but the run file has none"));
    }
    return t;
  }
  t.ran = true;
  t.interval_ms = file.has_attr(schema::kTelemetryGroup, st::kAttrIntervalMs)
                      ? file.attr_int64(schema::kTelemetryGroup, st::kAttrIntervalMs)
                      : 0;
  for (const std::string& child : file.children(schema::kTelemetryGroup)) {
    t.nodes.push_back(read_node(file, schema::join(schema::kTelemetryGroup, child)));
  }
  std::sort(t.nodes.begin(), t.nodes.end(),
            [](const TelemetryNode& a, const TelemetryNode& b) { return a.node < b.node; });
  if (t.nodes.empty()) {
    t.findings.push_back(run_finding(
        "telemetry.coverage",
        facts.meta.status == schema::kStatusComplete ? CheckStatus::kFail : CheckStatus::kSkip,
        "no node recorded telemetry (the run ended before its first phase did)"));
    return t;
  }
  std::size_t gpus = 0, ports = 0, empty_phases = 0;
  std::set<std::string> notes;
  for (const TelemetryNode& n : t.nodes) {
    gpus += n.gpus().size();
    std::set<std::string> devices;
    for (const auto& c : n.channels) {
      if (c.device != "host" && !c.device.starts_with("gpu")) devices.insert(c.device);
    }
    ports += devices.size();
    for (std::int64_t s : n.phase_samples) empty_phases += s == 0 ? 1 : 0;
    for (const std::string& line : split_list(n.notes, '\n')) notes.insert(line);
  }
  const std::vector<std::string> note_list(notes.begin(), notes.end());
  std::string message =
      std::to_string(t.nodes.size()) +
      (facts.meta.virtual_nodes > 0 ? " host(s) (one sampler per host for its pretend nodes)"
                                    : " node(s)") +
      (t.interval_ms > 0 ? " sampled every " + std::to_string(t.interval_ms) + " ms"
                         : std::string(" sampled (interval not recorded)")) +
      " through " + std::to_string(t.nodes.front().phases.size()) +
      " phase(s): " + std::to_string(gpus) + " GPU(s), host load/memory/clocks, " +
      std::to_string(ports) + " InfiniBand port(s)";
  if (empty_phases > 0) {
    message += "; " + std::to_string(empty_phases) +
               " node-phase(s) without a sample (the sampler did not answer at the phase's end, "
               "or, in files of earlier versions, a phase shorter than the sampling interval)";
  }
  if (!note_list.empty()) {  // the first three here, all in the evidence
    const std::size_t shown = std::min<std::size_t>(3, note_list.size());
    message += "; not sampled: " +
               join(std::vector<std::string>(
                        note_list.begin(), note_list.begin() + static_cast<std::ptrdiff_t>(shown)),
                    "; ");
    if (note_list.size() > shown) {
      message += " (and " + std::to_string(note_list.size() - shown) + " more in the evidence)";
    }
  }
  Finding coverage =
      run_finding("telemetry.coverage", empty_phases > 0 ? CheckStatus::kWarn : CheckStatus::kPass,
                  std::move(message));
  coverage.evidence = join(note_list, "; ");
  t.findings.push_back(std::move(coverage));
  gpu_error_checks(t, facts, t.findings);
  link_checks(t, facts, t.findings);
  pcie_checks(t, facts, t.findings);
  throttling_checks(t, facts, t.findings);
  return t;
}

std::string format_telemetry(const TelemetryFindings& t) {
  if (!t.ran || t.nodes.empty()) return "";
  std::size_t gpus = 0;
  double cost = 0;
  for (const TelemetryNode& n : t.nodes) {
    gpus += n.gpus().size();
    cost = std::max(cost, n.sample_cost_us);
  }
  return "telemetry: " + std::to_string(t.nodes.size()) + " node(s) every " +
         std::to_string(t.interval_ms) + " ms, " + std::to_string(gpus) +
         " GPU(s); a sample cost up to " + whole_text(cost) + " us\n";
}

void attach_throttling(std::vector<Finding>& findings, const TelemetryFindings& t,
                       const RunFacts& facts) {
  if (t.nodes.empty()) return;
  for (Finding& f : findings) {
    if (f.rank < 0 || (f.status != CheckStatus::kWarn && f.status != CheckStatus::kFail)) continue;
    if (!f.check.ends_with(".stragglers") && f.check != "devices.memory") continue;
    const std::string phase = f.check.substr(0, f.check.find('.'));
    const auto rank = std::find_if(facts.ranks.begin(), facts.ranks.end(),
                                   [&](const RankInfo& r) { return r.rank == f.rank; });
    if (rank == facts.ranks.end() || rank->gpu.pci_bus_id.empty()) continue;
    const auto node = std::find_if(t.nodes.begin(), t.nodes.end(),
                                   [&](const TelemetryNode& n) { return on_host(n, *rank); });
    if (node == t.nodes.end()) continue;
    const auto p = std::find(node->phases.begin(), node->phases.end(), phase);
    if (p == node->phases.end()) continue;
    for (std::size_t g = 0; g < node->gpu_bus_ids.size(); ++g) {
      if (!same_bus(node->gpu_bus_ids[g], rank->gpu.pci_bus_id)) continue;
      const std::string gpu = "gpu" + std::to_string(g);
      const std::string text =
          throttled_in(*node, gpu, static_cast<std::size_t>(p - node->phases.begin()));
      if (!text.empty()) {
        f.message +=
            "; its GPU (" + gpu + ", " + node->gpu_bus_ids[g] + ") ran below its clocks in " + text;
      }
    }
  }
}

}  // namespace shakedown
