#include "telemetry/nvml.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "telemetry/channels.hpp"

namespace shakedown::telemetry {
namespace nvml_c {

// NVML's C types as its header declares them (NVML API 12/13): nvmlReturn_t is an int enum,
// nvmlDevice_t an opaque pointer, nvmlEnableState_t an int enum.
using Ret = int;
using Dev = void*;
constexpr Ret kSuccess = 0;
constexpr Ret kNotSupported = 3;
constexpr Ret kFunctionMissing = 13;  // NVML_ERROR_FUNCTION_NOT_FOUND: we say it for a null symbol
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct PciInfo {  // nvmlPciInfo_t, as nvmlDeviceGetPciInfo_v3 fills it
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];
};
constexpr int kClockSm = 1;
constexpr int kClockMem = 2;
constexpr int kEccCorrected = 0;
constexpr int kEccUncorrected = 1;
constexpr int kEccVolatile = 0;
constexpr unsigned kMaxNvlinks = 36;  // NVML_NVLINK_MAX_LINKS in the NVML 13 header
constexpr Ret kTimeout = 10;          // NVML_ERROR_TIMEOUT: no event within the wait
constexpr unsigned long long kEventXidCritical = 0x8;  // nvmlEventTypeXidCriticalError
using EventSet = void*;                                // nvmlEventSet_t
struct EventData {  // nvmlEventData_t, as nvmlEventSetWait_v2 fills it
  Dev device;
  unsigned long long event_type;
  unsigned long long event_data;  // the Xid, for an Xid event
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

}  // namespace nvml_c
using namespace nvml_c;

struct Nvml::Functions {
  Ret (*init)() = nullptr;
  Ret (*shutdown)() = nullptr;
  const char* (*error_string)(Ret) = nullptr;
  Ret (*count)(unsigned*) = nullptr;
  Ret (*handle_by_index)(unsigned, Dev*) = nullptr;
  Ret (*pci_info)(Dev, PciInfo*) = nullptr;
  Ret (*utilization)(Dev, Utilization*) = nullptr;
  Ret (*memory)(Dev, Memory*) = nullptr;
  Ret (*power)(Dev, unsigned*) = nullptr;
  Ret (*power_limit)(Dev, unsigned*) = nullptr;
  Ret (*temperature)(Dev, int, unsigned*) = nullptr;
  Ret (*clock)(Dev, int, unsigned*) = nullptr;
  Ret (*clock_reasons)(Dev, unsigned long long*) = nullptr;
  Ret (*ecc)(Dev, int, int, unsigned long long*) = nullptr;
  Ret (*remapped)(Dev, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  Ret (*pcie_gen)(Dev, unsigned*) = nullptr;
  Ret (*pcie_width)(Dev, unsigned*) = nullptr;
  Ret (*pcie_max_gen)(Dev, unsigned*) = nullptr;
  Ret (*pcie_max_width)(Dev, unsigned*) = nullptr;
  Ret (*nvlink_state)(Dev, unsigned, int*) = nullptr;
  Ret (*mig_mode)(Dev, unsigned*, unsigned*) = nullptr;
  Ret (*event_set_create)(EventSet*) = nullptr;
  Ret (*event_set_free)(EventSet) = nullptr;
  Ret (*supported_events)(Dev, unsigned long long*) = nullptr;
  Ret (*register_events)(Dev, unsigned long long, EventSet) = nullptr;
  Ret (*event_set_wait)(EventSet, EventData*, unsigned) = nullptr;
  // Per GPU: the link indexes NVML answered for at open (all of 0..kMaxNvlinks-1 are asked: a
  // link missing in the middle must not hide the ones after it).
  std::vector<std::vector<unsigned>> nvlinks_known;
};

Nvml Nvml::open(const std::string& library) {
  Nvml nvml;
  nvml.library_ = DynamicLibrary::open(library);
  if (!nvml.library_.loaded()) {
    nvml.why_ = library + " not loadable (" + nvml.library_.error() + ")";
    return nvml;
  }
  auto f = std::make_unique<Functions>();
  DynamicLibrary& lib = nvml.library_;
  // The header #defines the plain names to these versioned symbols; NVML keeps both.
  f->init = lib.function<decltype(f->init)>("nvmlInit_v2");
  f->shutdown = lib.function<decltype(f->shutdown)>("nvmlShutdown");
  f->error_string = lib.function<decltype(f->error_string)>("nvmlErrorString");
  f->count = lib.function<decltype(f->count)>("nvmlDeviceGetCount_v2");
  f->handle_by_index = lib.function<decltype(f->handle_by_index)>("nvmlDeviceGetHandleByIndex_v2");
  f->pci_info = lib.function<decltype(f->pci_info)>("nvmlDeviceGetPciInfo_v3");
  f->utilization = lib.function<decltype(f->utilization)>("nvmlDeviceGetUtilizationRates");
  f->memory = lib.function<decltype(f->memory)>("nvmlDeviceGetMemoryInfo");
  f->power = lib.function<decltype(f->power)>("nvmlDeviceGetPowerUsage");
  f->power_limit = lib.function<decltype(f->power_limit)>("nvmlDeviceGetEnforcedPowerLimit");
  f->temperature = lib.function<decltype(f->temperature)>("nvmlDeviceGetTemperature");
  f->clock = lib.function<decltype(f->clock)>("nvmlDeviceGetClockInfo");
  // The 12.2 headers renamed the throttle reasons "clocks event reasons"; older drivers have
  // only the old name.
  f->clock_reasons =
      lib.function<decltype(f->clock_reasons)>("nvmlDeviceGetCurrentClocksEventReasons");
  if (f->clock_reasons == nullptr) {
    f->clock_reasons =
        lib.function<decltype(f->clock_reasons)>("nvmlDeviceGetCurrentClocksThrottleReasons");
  }
  f->ecc = lib.function<decltype(f->ecc)>("nvmlDeviceGetTotalEccErrors");
  f->remapped = lib.function<decltype(f->remapped)>("nvmlDeviceGetRemappedRows");
  f->pcie_gen = lib.function<decltype(f->pcie_gen)>("nvmlDeviceGetCurrPcieLinkGeneration");
  f->pcie_width = lib.function<decltype(f->pcie_width)>("nvmlDeviceGetCurrPcieLinkWidth");
  f->pcie_max_gen = lib.function<decltype(f->pcie_max_gen)>("nvmlDeviceGetMaxPcieLinkGeneration");
  f->pcie_max_width = lib.function<decltype(f->pcie_max_width)>("nvmlDeviceGetMaxPcieLinkWidth");
  f->nvlink_state = lib.function<decltype(f->nvlink_state)>("nvmlDeviceGetNvLinkState");
  f->mig_mode = lib.function<decltype(f->mig_mode)>("nvmlDeviceGetMigMode");
  f->event_set_create = lib.function<decltype(f->event_set_create)>("nvmlEventSetCreate");
  f->event_set_free = lib.function<decltype(f->event_set_free)>("nvmlEventSetFree");
  f->supported_events =
      lib.function<decltype(f->supported_events)>("nvmlDeviceGetSupportedEventTypes");
  f->register_events = lib.function<decltype(f->register_events)>("nvmlDeviceRegisterEvents");
  // The _v2 wait fills the MIG instance ids too (the header maps nvmlEventSetWait to it).
  f->event_set_wait = lib.function<decltype(f->event_set_wait)>("nvmlEventSetWait_v2");
  nvml.fn_ = std::move(f);
  Functions& fn = *nvml.fn_;
  if (fn.init == nullptr || fn.shutdown == nullptr || fn.count == nullptr ||
      fn.handle_by_index == nullptr) {
    nvml.why_ = library + " lacks nvmlInit_v2, nvmlShutdown or the device enumeration";
    return nvml;
  }
  if (const Ret rc = fn.init(); rc != kSuccess) {
    nvml.why_ = "nvmlInit: " + nvml.error_text(rc);
    return nvml;
  }
  nvml.initialised_ = true;
  unsigned count = 0;
  if (const Ret rc = fn.count(&count); rc != kSuccess) {
    // No GPU to read: not loaded, so the reason is recorded like any other.
    nvml.why_ = "nvmlDeviceGetCount: " + nvml.error_text(rc);
    fn.shutdown();
    nvml.initialised_ = false;
    return nvml;
  }
  for (unsigned i = 0; i < count; ++i) {
    Dev dev = nullptr;
    if (fn.handle_by_index(i, &dev) != kSuccess) dev = nullptr;
    nvml.devices_.push_back(dev);
    std::string bus;
    PciInfo pci{};
    if (dev != nullptr && fn.pci_info != nullptr && fn.pci_info(dev, &pci) == kSuccess) {
      pci.bus_id[sizeof pci.bus_id - 1] = '\0';
      bus = pci.bus_id;
      std::transform(bus.begin(), bus.end(), bus.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      // NVML writes an 8-digit domain ("00000000:1B:00.0"); sysfs and hwloc use 4.
      if (bus.size() == 16 && bus.compare(0, 4, "0000") == 0) bus.erase(0, 4);
    }
    nvml.bus_ids_.push_back(bus);
    std::vector<unsigned> links;
    if (dev != nullptr && fn.nvlink_state != nullptr) {
      for (unsigned l = 0; l < kMaxNvlinks; ++l) {
        int active = 0;
        if (fn.nvlink_state(dev, l, &active) == kSuccess) links.push_back(l);
      }
    }
    fn.nvlinks_known.push_back(std::move(links));
  }
  nvml.noted_.assign(nvml.devices_.size(), std::vector<bool>(gpu_signals().size(), false));
  return nvml;
}

Nvml Nvml::absent(std::string why) {
  Nvml nvml;
  nvml.why_ = std::move(why);
  return nvml;
}

Nvml::Nvml(Nvml&& other) noexcept
    : library_(std::move(other.library_)),
      devices_(std::move(other.devices_)),
      bus_ids_(std::move(other.bus_ids_)),
      noted_(std::move(other.noted_)),
      unavailable_(std::move(other.unavailable_)),
      event_set_(std::exchange(other.event_set_, nullptr)),
      xid_watched_(std::move(other.xid_watched_)),
      xid_notes_(std::move(other.xid_notes_)),
      why_(std::move(other.why_)),
      initialised_(std::exchange(other.initialised_, false)),
      fn_(std::move(other.fn_)) {}

Nvml::~Nvml() {
  if (event_set_ != nullptr && fn_ && fn_->event_set_free != nullptr) {
    fn_->event_set_free(event_set_);
  }
  if (initialised_ && fn_ && fn_->shutdown != nullptr) fn_->shutdown();
}

void Nvml::watch_xids() {
  if (!initialised_ || event_set_ != nullptr || !xid_watched_.empty()) return;  // once
  xid_watched_.assign(devices_.size(), false);
  const Functions& fn = *fn_;
  if (fn.event_set_create == nullptr || fn.register_events == nullptr ||
      fn.event_set_wait == nullptr || fn.event_set_free == nullptr) {
    xid_notes_.push_back("Xid events: this NVML has no event set (nvmlEventSetWait_v2)");
    return;
  }
  if (const Ret rc = fn.event_set_create(&event_set_); rc != kSuccess) {
    event_set_ = nullptr;
    xid_notes_.push_back("Xid events: nvmlEventSetCreate: " + error_text(rc));
    return;
  }
  for (std::size_t g = 0; g < devices_.size(); ++g) {
    const std::string gpu = "gpu" + std::to_string(g);
    if (devices_[g] == nullptr) continue;
    // Asked first where the driver can say: registering a type the GPU lacks fails the call.
    unsigned long long supported = kEventXidCritical;
    if (fn.supported_events != nullptr &&
        fn.supported_events(devices_[g], &supported) == kSuccess &&
        (supported & kEventXidCritical) == 0) {
      xid_notes_.push_back(gpu + " Xid events: not among the GPU's event types");
      continue;
    }
    if (const Ret rc = fn.register_events(devices_[g], kEventXidCritical, event_set_);
        rc != kSuccess) {
      xid_notes_.push_back(gpu + " Xid events: nvmlDeviceRegisterEvents: " + error_text(rc));
      continue;
    }
    xid_watched_[g] = true;
  }
}

std::vector<Nvml::Xid> Nvml::poll_xids() {
  std::vector<Xid> out;
  if (event_set_ == nullptr) return out;
  // Bounded like the kernel log's reader: a storm of events cannot hold the sampler.
  for (int i = 0; i < 1024; ++i) {
    EventData data{};
    const Ret rc = fn_->event_set_wait(event_set_, &data, 0);
    if (rc == kTimeout) break;  // nothing (more) delivered
    if (rc != kSuccess) {
      // GPU_IS_LOST and the like: the GPU's own signals say so; the set is not asked again.
      // Its GPUs are no longer watched: the kernel log takes them where it is readable.
      xid_notes_.push_back("Xid events: nvmlEventSetWait: " + error_text(rc) +
                           " (NVML's events given up; the kernel log where readable)");
      fn_->event_set_free(event_set_);
      event_set_ = nullptr;
      xid_watched_.assign(xid_watched_.size(), false);
      break;
    }
    if ((data.event_type & kEventXidCritical) == 0) continue;
    const auto at = std::find(devices_.begin(), devices_.end(), data.device);
    const int gpu = at == devices_.end() ? -1 : static_cast<int>(at - devices_.begin());
    out.push_back({gpu, static_cast<int>(data.event_data)});
  }
  return out;
}

std::string Nvml::error_text(int rc) const {
  if (rc == kFunctionMissing) return "function not in this NVML";
  if (fn_ && fn_->error_string != nullptr) {
    if (const char* text = fn_->error_string(rc); text != nullptr) return text;
  }
  return "NVML error " + std::to_string(rc);
}

void Nvml::note_unavailable(int index, const char* signal, int rc) {
  const auto& names = gpu_signals();
  const auto at = std::find_if(names.begin(), names.end(),
                               [&](const Channel& c) { return c.signal == signal; });
  const auto s = static_cast<std::size_t>(at - names.begin());
  auto& noted = noted_.at(static_cast<std::size_t>(index));
  if (s >= noted.size() || noted[s]) return;
  noted[s] = true;
  unavailable_.push_back("gpu" + std::to_string(index) + " " + signal + ": " + error_text(rc));
}

void Nvml::read(int index, std::span<double> out) {
  std::fill(out.begin(), out.end(), kNaN);
  if (!initialised_ || index < 0 || index >= count()) return;
  Dev dev = devices_[static_cast<std::size_t>(index)];
  if (dev == nullptr) return;
  const Functions& fn = *fn_;
  const auto& names = gpu_signals();
  std::size_t slot = 0;
  // Calls `call` (a function returning nvmlReturn_t) and stores `value()` in the next slot, or
  // notes why there is none.
  const auto take = [&](bool present, auto call, auto value) {
    const char* signal = names[slot].signal.c_str();
    if (!present) {
      note_unavailable(index, signal, kFunctionMissing);
    } else if (const Ret rc = call(); rc == kSuccess) {
      out[slot] = value();
    } else {
      note_unavailable(index, signal, rc);
    }
    ++slot;
  };
  Utilization util{};
  Ret util_rc = fn.utilization != nullptr ? fn.utilization(dev, &util) : kFunctionMissing;
  take(
      fn.utilization != nullptr, [&] { return util_rc; }, [&] { return double(util.gpu); });
  take(
      fn.utilization != nullptr, [&] { return util_rc; }, [&] { return double(util.memory); });
  Memory mem{};
  take(
      fn.memory != nullptr, [&] { return fn.memory(dev, &mem); },
      [&] { return double(mem.used) / double(1ull << 30); });
  unsigned mw = 0;
  take(
      fn.power != nullptr, [&] { return fn.power(dev, &mw); }, [&] { return mw * 1e-3; });
  unsigned limit = 0;
  take(
      fn.power_limit != nullptr, [&] { return fn.power_limit(dev, &limit); },
      [&] { return limit * 1e-3; });
  unsigned celsius = 0;
  take(
      fn.temperature != nullptr, [&] { return fn.temperature(dev, 0, &celsius); },
      [&] { return double(celsius); });
  unsigned sm = 0, memclk = 0;
  take(
      fn.clock != nullptr, [&] { return fn.clock(dev, kClockSm, &sm); },
      [&] { return double(sm); });
  take(
      fn.clock != nullptr, [&] { return fn.clock(dev, kClockMem, &memclk); },
      [&] { return double(memclk); });
  unsigned long long reasons = 0;
  take(
      fn.clock_reasons != nullptr, [&] { return fn.clock_reasons(dev, &reasons); },
      [&] { return double(reasons); });
  unsigned long long corrected = 0, uncorrected = 0;
  take(
      fn.ecc != nullptr, [&] { return fn.ecc(dev, kEccCorrected, kEccVolatile, &corrected); },
      [&] { return double(corrected); });
  take(
      fn.ecc != nullptr, [&] { return fn.ecc(dev, kEccUncorrected, kEccVolatile, &uncorrected); },
      [&] { return double(uncorrected); });
  unsigned corr_rows = 0, unc_rows = 0, pending = 0, failed = 0;
  const Ret remap_rc = fn.remapped != nullptr
                           ? fn.remapped(dev, &corr_rows, &unc_rows, &pending, &failed)
                           : kFunctionMissing;
  take(
      fn.remapped != nullptr, [&] { return remap_rc; }, [&] { return double(unc_rows); });
  take(
      fn.remapped != nullptr, [&] { return remap_rc; }, [&] { return double(pending); });
  take(
      fn.remapped != nullptr, [&] { return remap_rc; }, [&] { return double(failed); });
  unsigned gen = 0, width = 0, max_gen = 0, max_width = 0;
  take(
      fn.pcie_gen != nullptr, [&] { return fn.pcie_gen(dev, &gen); }, [&] { return double(gen); });
  take(
      fn.pcie_width != nullptr, [&] { return fn.pcie_width(dev, &width); },
      [&] { return double(width); });
  take(
      fn.pcie_max_gen != nullptr, [&] { return fn.pcie_max_gen(dev, &max_gen); },
      [&] { return double(max_gen); });
  take(
      fn.pcie_max_width != nullptr, [&] { return fn.pcie_max_width(dev, &max_width); },
      [&] { return double(max_width); });
  const std::vector<unsigned>& links = fn.nvlinks_known[static_cast<std::size_t>(index)];
  unsigned up = 0;
  Ret link_rc = links.empty() ? kNotSupported : kSuccess;
  for (std::size_t i = 0; i < links.size() && link_rc == kSuccess; ++i) {
    int active = 0;
    link_rc = fn.nvlink_state(dev, links[i], &active);
    up += active != 0 ? 1 : 0;
  }
  take(
      fn.nvlink_state != nullptr, [&] { return link_rc; }, [&] { return double(up); });
  unsigned mig = 0, mig_pending = 0;
  take(
      fn.mig_mode != nullptr, [&] { return fn.mig_mode(dev, &mig, &mig_pending); },
      [&] { return double(mig); });
}

}  // namespace shakedown::telemetry
