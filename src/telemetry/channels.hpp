#pragma once
// What the telemetry sampler reads: a node's channels (one signal of one device: "gpu1" power,
// "host" load, "mlx5_0:1" symbol_error) and how each kind of signal is summarised. The sampler,
// the recording and the checks share these names; the run file stores them beside the values
// (/telemetry/<node>: devices, signals, units, kinds), so a reader needs nothing from here.
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/stats.hpp"  // kNaN: a signal without a value, in memory and in the file

namespace shakedown::telemetry {

// How a signal is summarised and judged.
//   kGauge:   a level (watts, MHz, percent): decimated by the window's mean.
//   kCounter: a count that only grows (ECC errors, link errors, bytes): stored as the increase
//             since the run's first sample (base values apart), decimated by the window's last.
//   kBits:    a bit mask or a state (clock event reasons, remap pending): decimated by the OR
//             of the window, so a short throttle is not averaged away.
enum class Kind { kGauge, kCounter, kBits };
std::string_view kind_name(Kind kind);   // "gauge", "counter", "bits"
Kind parse_kind(std::string_view name);  // UsageError for anything else

struct Channel {
  std::string device;  // "host", "gpu<i>" (NVML's index), "<ib device>:<port>"
  std::string signal;  // one of the names below
  std::string unit;
  Kind kind = Kind::kGauge;
};

// GPU signals, read through NVML (telemetry/nvml.hpp), in this order for every GPU.
namespace gpu {
inline constexpr const char* kUtilization = "utilization";               // % of time a kernel ran
inline constexpr const char* kMemoryUtilization = "memory_utilization";  // % of time memory busy
inline constexpr const char* kMemoryUsed = "memory_used";                // GiB
inline constexpr const char* kPower = "power";                           // W
inline constexpr const char* kPowerLimit = "power_limit";                // W, enforced
inline constexpr const char* kTemperature = "temperature";               // degrees C
inline constexpr const char* kSmClock = "sm_clock";                      // MHz
inline constexpr const char* kMemoryClock = "memory_clock";              // MHz
inline constexpr const char* kClockReasons = "clock_reasons";            // NVML's bit mask
inline constexpr const char* kEccCorrected = "ecc_corrected";            // volatile count
inline constexpr const char* kEccUncorrected = "ecc_uncorrected";        // volatile count
inline constexpr const char* kRemappedUncorrectable = "remapped_rows_uncorrectable";
inline constexpr const char* kRemapPending = "remap_pending";  // 1: a remap awaits a reset
inline constexpr const char* kRemapFailed = "remap_failed";    // 1: a remap failed
inline constexpr const char* kPcieGen = "pcie_gen";
inline constexpr const char* kPcieWidth = "pcie_width";
inline constexpr const char* kPcieMaxGen = "pcie_max_gen";
inline constexpr const char* kPcieMaxWidth = "pcie_max_width";
inline constexpr const char* kNvlinkActive = "nvlink_active";  // links up
inline constexpr const char* kMigMode = "mig_mode";            // 1: MIG enabled
// From the kernel log, not NVML (telemetry/xid.hpp): Xid errors of this GPU since the run began.
inline constexpr const char* kXidCount = "xid_count";
inline constexpr const char* kXidLast = "xid_last";  // the last one's code
}  // namespace gpu
// Every GPU signal, its unit and kind, in the order the sampler reads them (NVML's, then the
// kernel log's Xid count and last code).
const std::vector<Channel>& gpu_signals();  // device left empty

// NVML's clock event (throttle) reason bits that mean the GPU ran slower than it could for a
// reason other than being idle or set so: software power cap, hardware slowdown, software and
// hardware thermal slowdown, hardware power brake.
inline constexpr unsigned long long kThrottleBits = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
// A bit-mask channel's value as bits: 0 for NaN (not read) and for anything that is no mask
// (negative, too large: a damaged file), so the cast is always defined.
inline unsigned long long bits_of(double v) {
  return v >= 0 && v < 0x1p63 ? static_cast<unsigned long long>(v) : 0;
}
// "sw_power_cap, hw_slowdown" for the bits of `reasons` in kThrottleBits.
std::string throttle_reasons_text(unsigned long long reasons);

// Host signals (device "host") and InfiniBand port counters (device "<ib device>:<port>").
namespace host {
inline constexpr const char* kLoad = "load_1min";
inline constexpr const char* kMemoryAvailable = "memory_available";  // GiB
inline constexpr const char* kCpuMhzMin = "cpu_mhz_min";             // over the host's cores
inline constexpr const char* kCpuMhzMedian = "cpu_mhz_median";
inline constexpr const char* kCpuMhzMax = "cpu_mhz_max";
}  // namespace host
namespace ib {
inline constexpr const char* kXmitBytes = "xmit_GB";  // port_xmit_data x 4 (octets / 4)
inline constexpr const char* kRcvBytes = "rcv_GB";
inline constexpr const char* kSymbolError = "symbol_error";
inline constexpr const char* kLinkDowned = "link_downed";
inline constexpr const char* kRcvErrors = "port_rcv_errors";
}  // namespace ib
// The error counters whose increase during the run is a fault (the checks fail on them).
bool is_link_error(std::string_view signal);

}  // namespace shakedown::telemetry
