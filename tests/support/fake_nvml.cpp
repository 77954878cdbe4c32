// A stand-in for libnvidia-ml.so.1 with scripted values, loaded by the telemetry sampler through
// its own dlopen path (SHAKEDOWN_TEST_NVML_LIBRARY), so sampling, recording and the telemetry
// checks run in CI without a GPU. It implements the functions telemetry/nvml.cpp resolves, with
// NVML's C signatures. The script is the environment, read at nvmlInit_v2:
//   FAKE_NVML_GPUS=N           GPUs (default 2)
//   FAKE_NVML_INIT=rc          nvmlInit_v2 fails with this nvmlReturn_t (9: driver not loaded)
//   FAKE_NVML_UNSUPPORTED=a,b  these answer NOT_SUPPORTED: temperature, ecc, remap, nvlink, pcie,
//                              power, clocks, reasons; "events": nvmlDeviceRegisterEvents
//                              answers NO_PERMISSION (Xids then come from the kernel log only)
//   FAKE_NVML_EVENTS_REFUSED=g only GPU g's registration for events answers NO_PERMISSION
//   FAKE_NVML_EVENTS_LOST=1    nvmlEventSetWait_v2 answers GPU_IS_LOST
//   FAKE_NVML_THROTTLE=g       GPU g reports hardware slowdown + software power cap
//   FAKE_NVML_ECC=g            GPU g has 1 uncorrected ECC error from the FAKE_NVML_AFTER-th
//                              sample on (default 0: from the first, i.e. before the run)
//   FAKE_NVML_PCIE=g           GPU g's link runs at Gen3 x8 of Gen5 x16
//   FAKE_NVML_NVLINK_DOWN=g    GPU g has 16 of 18 NVLink links up (the others 18)
//   FAKE_NVML_XID=g,code       at its FAKE_NVML_AFTER-th sample GPU g's driver reports Xid `code`
//                              as the real one does, twice: an event for the event sets GPU g is
//                              registered in, and a kernel log line appended to
//                              FAKE_NVML_KERNEL_LOG (the file the sampler reads as the kernel
//                              log in tests)
//   FAKE_NVML_AFTER=n          sample (utilization read) from which the faults above appear
// Every GPU is 90% busy (so PCIe is judged under load), draws 350 + 10 g W of 700 W, runs at
// 1980 MHz SM / 2619 MHz memory and 45 + g degrees.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Gpu {
  long samples = 0;  // utilization reads: one per sample
};
struct Script {
  int gpus = 2;
  int init_rc = 0;
  std::string unsupported;
  int throttle = -1, ecc = -1, pcie = -1, nvlink_down = -1, xid_gpu = -1, xid_code = 0;
  int events_refused = -1;
  bool events_lost = false;
  std::string kernel_log;
  long after = 0;
  std::vector<Gpu> state;
  std::vector<bool> registered;              // [gpu]: in the event set for Xids
  std::vector<std::pair<int, int>> pending;  // Xid events not yet waited for: (gpu, code)
};
Script& script() {
  static Script s;  // the stand-in's own state: one per process, as NVML's
  return s;
}
int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}
bool unsupported(const char* what) {
  const std::string& list = script().unsupported;
  const std::string key = std::string(",") + what + ",";
  return ("," + list + ",").find(key) != std::string::npos;
}
int index_of(void* dev) {
  return static_cast<int>(reinterpret_cast<std::intptr_t>(dev)) - 1;
}
bool faulty(int g, int which) {
  return g == which && script().state[static_cast<std::size_t>(g)].samples > script().after;
}
constexpr int kSuccess = 0, kInvalid = 2, kNotSupported = 3, kNoPermission = 4, kTimeout = 10,
              kGpuLost = 15;
constexpr unsigned long long kEventXid = 0x8;

struct Utilization {
  unsigned gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};
struct PciInfo {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct EventData {
  void* device;
  unsigned long long type, data;
  unsigned gpu_instance, compute_instance;
};

}  // namespace

extern "C" {

int nvmlInit_v2() {
  Script& s = script();
  s.gpus = env_int("FAKE_NVML_GPUS", 2);
  s.init_rc = env_int("FAKE_NVML_INIT", 0);
  const char* u = std::getenv("FAKE_NVML_UNSUPPORTED");
  s.unsupported = u != nullptr ? u : "";
  s.throttle = env_int("FAKE_NVML_THROTTLE", -1);
  s.ecc = env_int("FAKE_NVML_ECC", -1);
  s.pcie = env_int("FAKE_NVML_PCIE", -1);
  s.nvlink_down = env_int("FAKE_NVML_NVLINK_DOWN", -1);
  s.events_refused = env_int("FAKE_NVML_EVENTS_REFUSED", -1);
  s.events_lost = env_int("FAKE_NVML_EVENTS_LOST", 0) != 0;
  s.after = env_int("FAKE_NVML_AFTER", 0) - 1;  // "from the n-th sample": samples counted from 1
  if (const char* x = std::getenv("FAKE_NVML_XID");
      x != nullptr && std::strchr(x, ',') != nullptr) {
    s.xid_gpu = std::atoi(x);
    s.xid_code = std::atoi(std::strchr(x, ',') + 1);
  }
  const char* log = std::getenv("FAKE_NVML_KERNEL_LOG");
  s.kernel_log = log != nullptr ? log : "";
  s.state.assign(static_cast<std::size_t>(s.gpus), Gpu{});
  s.registered.assign(static_cast<std::size_t>(s.gpus), false);
  s.pending.clear();
  return s.init_rc;
}
int nvmlShutdown() {
  return kSuccess;
}
const char* nvmlErrorString(int rc) {
  switch (rc) {
    case 3:
      return "Not Supported";
    case 4:
      return "Insufficient Permissions";
    case 9:
      return "Driver Not Loaded";
    case 15:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}
int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = static_cast<unsigned>(script().gpus);
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** dev) {
  if (index >= static_cast<unsigned>(script().gpus)) return kInvalid;
  *dev = reinterpret_cast<void*>(static_cast<std::intptr_t>(index) + 1);
  return kSuccess;
}
int nvmlDeviceGetPciInfo_v3(void* dev, PciInfo* pci) {
  std::memset(pci, 0, sizeof *pci);
  std::snprintf(pci->bus_id, sizeof pci->bus_id, "00000000:%02X:00.0", 0x1b + index_of(dev));
  return kSuccess;
}
int nvmlDeviceGetUtilizationRates(void* dev, Utilization* u) {
  Script& s = script();
  const int g = index_of(dev);
  const long sample = ++s.state[static_cast<std::size_t>(g)].samples;
  if (g == s.xid_gpu && sample == std::max(1L, s.after + 1)) {
    if (s.registered[static_cast<std::size_t>(g)]) s.pending.emplace_back(g, s.xid_code);
  }
  if (g == s.xid_gpu && sample == std::max(1L, s.after + 1) && !s.kernel_log.empty()) {
    if (FILE* f = std::fopen(s.kernel_log.c_str(), "a")) {
      std::fprintf(f,
                   "4,1234,%ld,-;NVRM: Xid (PCI:0000:%02x:00): %d, pid='<unknown>', "
                   "name=<unknown>, GPU has fallen off the bus.\n",
                   sample, 0x1b + g, s.xid_code);
      std::fclose(f);
    }
  }
  u->gpu = 90;
  u->memory = 40;
  return kSuccess;
}
int nvmlDeviceGetMemoryInfo(void*, Memory* m) {
  m->total = 80ull << 30;
  m->used = 20ull << 30;
  m->free = m->total - m->used;
  return kSuccess;
}
int nvmlDeviceGetPowerUsage(void* dev, unsigned* mw) {
  if (unsupported("power")) return kNotSupported;
  *mw = static_cast<unsigned>(350000 + 10000 * index_of(dev));
  return kSuccess;
}
int nvmlDeviceGetEnforcedPowerLimit(void*, unsigned* mw) {
  if (unsupported("power")) return kNotSupported;
  *mw = 700000;
  return kSuccess;
}
int nvmlDeviceGetTemperature(void* dev, int, unsigned* c) {
  if (unsupported("temperature")) return kNotSupported;
  *c = static_cast<unsigned>(45 + index_of(dev));
  return kSuccess;
}
int nvmlDeviceGetClockInfo(void*, int type, unsigned* mhz) {
  if (unsupported("clocks")) return kNotSupported;
  *mhz = type == 1 ? 1980 : 2619;
  return kSuccess;
}
int nvmlDeviceGetCurrentClocksEventReasons(void* dev, unsigned long long* reasons) {
  if (unsupported("reasons")) return kNotSupported;
  *reasons = faulty(index_of(dev), script().throttle) ? 0x8 | 0x4 : 0;
  return kSuccess;
}
int nvmlDeviceGetTotalEccErrors(void* dev, int type, int, unsigned long long* count) {
  if (unsupported("ecc")) return kNotSupported;
  *count = type == 1 && faulty(index_of(dev), script().ecc) ? 1 : 0;
  return kSuccess;
}
int nvmlDeviceGetRemappedRows(void*, unsigned* corr, unsigned* unc, unsigned* pending,
                              unsigned* failed) {
  if (unsupported("remap")) return kNotSupported;
  *corr = *unc = *pending = *failed = 0;
  return kSuccess;
}
int nvmlDeviceGetCurrPcieLinkGeneration(void* dev, unsigned* gen) {
  if (unsupported("pcie")) return kNotSupported;
  *gen = faulty(index_of(dev), script().pcie) ? 3 : 5;
  return kSuccess;
}
int nvmlDeviceGetCurrPcieLinkWidth(void* dev, unsigned* width) {
  if (unsupported("pcie")) return kNotSupported;
  *width = faulty(index_of(dev), script().pcie) ? 8 : 16;
  return kSuccess;
}
int nvmlDeviceGetMaxPcieLinkGeneration(void*, unsigned* gen) {
  if (unsupported("pcie")) return kNotSupported;
  *gen = 5;
  return kSuccess;
}
int nvmlDeviceGetMaxPcieLinkWidth(void*, unsigned* width) {
  if (unsupported("pcie")) return kNotSupported;
  *width = 16;
  return kSuccess;
}
int nvmlDeviceGetNvLinkState(void* dev, unsigned link, int* active) {
  if (unsupported("nvlink")) return kNotSupported;
  if (link >= 18) return kInvalid;
  // Links are counted at open (before any sample); the fault shows from the first sample on.
  const int g = index_of(dev);
  *active = g == script().nvlink_down && script().state[static_cast<std::size_t>(g)].samples > 0 &&
                    link >= 16
                ? 0
                : 1;
  return kSuccess;
}
int nvmlDeviceGetMigMode(void*, unsigned* current, unsigned* pending) {
  *current = *pending = 0;
  return kSuccess;
}

int nvmlEventSetCreate(void** set) {
  *set = &script();  // one set per process is all the sampler makes
  return kSuccess;
}
int nvmlEventSetFree(void*) {
  return kSuccess;
}
int nvmlDeviceGetSupportedEventTypes(void*, unsigned long long* types) {
  *types = kEventXid | 0x1 | 0x2;  // Xid, single- and double-bit ECC
  return kSuccess;
}
int nvmlDeviceRegisterEvents(void* dev, unsigned long long types, void*) {
  if (unsupported("events") || index_of(dev) == script().events_refused) return kNoPermission;
  if ((types & ~(kEventXid | 0x1ull | 0x2ull)) != 0) return kNotSupported;
  if ((types & kEventXid) != 0) script().registered[static_cast<std::size_t>(index_of(dev))] = true;
  return kSuccess;
}
int nvmlEventSetWait_v2(void*, EventData* data, unsigned) {
  Script& s = script();
  if (s.events_lost) return kGpuLost;
  if (s.pending.empty()) return kTimeout;  // the stand-in never sleeps: nothing has come
  const auto [g, code] = s.pending.front();
  s.pending.erase(s.pending.begin());
  *data = EventData{reinterpret_cast<void*>(static_cast<std::intptr_t>(g) + 1), kEventXid,
                    static_cast<unsigned long long>(code), ~0u, ~0u};
  return kSuccess;
}

}  // extern "C"
