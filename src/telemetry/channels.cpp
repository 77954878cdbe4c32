#include "telemetry/channels.hpp"

#include <utility>

#include "core/error.hpp"

namespace shakedown::telemetry {

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::kGauge:
      return "gauge";
    case Kind::kCounter:
      return "counter";
    case Kind::kBits:
      return "bits";
  }
  return "gauge";
}

Kind parse_kind(std::string_view name) {
  for (Kind kind : {Kind::kGauge, Kind::kCounter, Kind::kBits}) {
    if (kind_name(kind) == name) return kind;
  }
  throw UsageError("telemetry: unknown signal kind '" + std::string(name) +
                   "' (expected gauge, counter or bits)");
}

const std::vector<Channel>& gpu_signals() {
  static const std::vector<Channel> kSignals = {
      {"", gpu::kUtilization, "%", Kind::kGauge},
      {"", gpu::kMemoryUtilization, "%", Kind::kGauge},
      {"", gpu::kMemoryUsed, "GiB", Kind::kGauge},
      {"", gpu::kPower, "W", Kind::kGauge},
      {"", gpu::kPowerLimit, "W", Kind::kGauge},
      {"", gpu::kTemperature, "C", Kind::kGauge},
      {"", gpu::kSmClock, "MHz", Kind::kGauge},
      {"", gpu::kMemoryClock, "MHz", Kind::kGauge},
      {"", gpu::kClockReasons, "bits", Kind::kBits},
      {"", gpu::kEccCorrected, "errors", Kind::kCounter},
      {"", gpu::kEccUncorrected, "errors", Kind::kCounter},
      {"", gpu::kRemappedUncorrectable, "rows", Kind::kCounter},
      {"", gpu::kRemapPending, "flag", Kind::kBits},
      {"", gpu::kRemapFailed, "flag", Kind::kBits},
      {"", gpu::kPcieGen, "gen", Kind::kGauge},
      {"", gpu::kPcieWidth, "lanes", Kind::kGauge},
      {"", gpu::kPcieMaxGen, "gen", Kind::kGauge},
      {"", gpu::kPcieMaxWidth, "lanes", Kind::kGauge},
      {"", gpu::kNvlinkActive, "links", Kind::kGauge},
      {"", gpu::kMigMode, "flag", Kind::kBits},
      {"", gpu::kXidCount, "errors", Kind::kCounter},
      {"", gpu::kXidLast, "code", Kind::kGauge}};
  return kSignals;
}

std::string throttle_reasons_text(unsigned long long reasons) {
  static const std::pair<unsigned long long, const char*> kNames[] = {{0x4, "sw_power_cap"},
                                                                      {0x8, "hw_slowdown"},
                                                                      {0x20, "sw_thermal_slowdown"},
                                                                      {0x40, "hw_thermal_slowdown"},
                                                                      {0x80, "hw_power_brake"}};
  std::string text;
  for (const auto& [bit, name] : kNames) {
    if ((reasons & bit) != 0) text += (text.empty() ? "" : ", ") + std::string(name);
  }
  return text;
}

bool is_link_error(std::string_view signal) {
  return signal == ib::kSymbolError || signal == ib::kLinkDowned || signal == ib::kRcvErrors;
}

}  // namespace shakedown::telemetry
