#include "topology/discovery.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "core/error.hpp"
#include "core/host.hpp"
#include "core/strings.hpp"
#include "topology/cpu_list.hpp"
#include "topology/hwloc_util.hpp"
#include "topology/network.hpp"
#include "topology/node_facts.hpp"
#include "topology/versions.hpp"

#if SHAKEDOWN_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/gpu_libraries.hpp"
#endif

namespace shakedown {

namespace hu = hwloc_util;

namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Blanks, then the quotes os-release puts around values (PRETTY_NAME="Debian GNU/Linux 12").
std::string_view unquote(std::string_view text) {
  text = trim(text);
  while (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
         text.back() == text.front()) {
    text = trim(text.substr(1, text.size() - 2));
  }
  return text;
}

// Value of the first "key<sep>value" line of a text file, "" when absent.
std::string file_value(const std::string& path, const std::string& key, char sep) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const std::string_view text = line;
    const auto pos = text.find(sep);
    if (pos == std::string_view::npos) continue;
    if (trim(text.substr(0, pos)) == key) return std::string(unquote(text.substr(pos + 1)));
  }
  return {};
}

std::string cpu_model_from_proc() {
  // x86 names the model; many ARM kernels do not ("Hardware"/"CPU part" only).
  std::string model = file_value("/proc/cpuinfo", "model name", ':');
  if (model.empty()) model = file_value("/proc/cpuinfo", "Model", ':');
  return model;
}

std::string cpu_model_from_hwloc(hwloc_topology_t topo) {
  for (hwloc_obj_t pkg = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, nullptr);
       pkg != nullptr; pkg = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pkg)) {
    if (const char* model = hwloc_obj_get_info_by_name(pkg, "CPUModel")) return model;
  }
  return {};
}

std::string os_pretty_name() {
  std::string name = file_value("/etc/os-release", "PRETTY_NAME", '=');
  if (name.empty()) name = file_value("/usr/lib/os-release", "PRETTY_NAME", '=');
  return name.empty() ? "unknown" : name;
}

std::string kernel_release() {
  struct utsname u {};
  if (uname(&u) != 0) return "unknown";
  return std::string(u.release) + " " + u.machine;
}

std::uint64_t memory_from_proc() {
  const std::string kb = file_value("/proc/meminfo", "MemTotal", ':');  // "24576000 kB"
  return std::strtoull(kb.c_str(), nullptr, 10) * 1024ull;
}

int count_of(hwloc_topology_t topo, hwloc_obj_type_t type) {
  const int n = hwloc_get_nbobjs_by_type(topo, type);
  return n > 0 ? n : 0;
}

struct AllowedCpus {
  std::string list;
  int cores = 0, pus = 0;
};

// What the process may use (cgroup / container cpuset). The topology itself shows the whole
// machine (HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED), so this is the only place the limit shows.
AllowedCpus allowed_cpus(hwloc_topology_t topo) {
  AllowedCpus out;
  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo);
  if (allowed == nullptr) return out;
  // Only PUs that exist: an allowed set may be "everything" (infinite).
  hu::Bitmap set(allowed);
  hwloc_bitmap_and(set.get(), set.get(), hwloc_topology_get_topology_cpuset(topo));
  if (hwloc_bitmap_iszero(set.get())) return out;
  out.list = hu::list_string(set.get());
  out.pus = std::max(0, hwloc_bitmap_weight(set.get()));
  // A core counts when any of its threads is allowed: a rank can run there.
  for (hwloc_obj_t core = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, nullptr);
       core != nullptr; core = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, core)) {
    if (hwloc_bitmap_intersects(core->cpuset, set.get())) ++out.cores;
  }
  if (count_of(topo, HWLOC_OBJ_CORE) == 0) out.cores = out.pus;  // no Core level
  return out;
}

// NUMA nodes (os indices, "0,1") whose CPUs intersect a CPU list string.
std::string numa_of_cpus(hwloc_topology_t topo, const std::string& cpus) {
  if (cpus.empty()) return {};
  hu::Bitmap set;
  if (hwloc_bitmap_list_sscanf(set.get(), cpus.c_str()) != 0) return {};
  return hu::numa_list(topo, set.get());
}

hwloc_obj_t find_pcidev(hwloc_topology_t topo, std::string_view bus_id) {
  const auto address = hu::parse_pci_bus_id(bus_id);
  if (!address) return nullptr;
  return hwloc_get_pcidev_by_busid(topo, address->domain, address->bus, address->device,
                                   address->function);
}

// One network device of the node with the hwloc objects needed to rank it by distance.
struct NicEntry {
  NicInfo info;
  hwloc_obj_t pci = nullptr;       // PCI function, null for devices not on PCI
  hwloc_obj_t locality = nullptr;  // non-I/O ancestor
  bool openfabrics = false;
  bool ib_netdev = false;   // an ib* network interface on the same function
  bool eth_netdev = false;  // another network interface on the same function
};

std::vector<NicEntry> collect_nics(hwloc_topology_t topo) {
  std::vector<NicEntry> nics;
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os != nullptr;
       os = hwloc_get_next_osdev(topo, os)) {
    const auto type = os->attr->osdev.type;
    if (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    const std::string name = os->name != nullptr ? os->name : "";
    if (name.empty() || name == "lo") continue;
    hwloc_obj_t pci = os->parent;
    if (pci != nullptr && pci->type != HWLOC_OBJ_PCI_DEVICE) pci = nullptr;
    // An InfiniBand HCA shows up twice (mlx5_0 and ib0) on one PCI function: one NIC.
    auto it = std::find_if(nics.begin(), nics.end(), [&](const NicEntry& e) {
      return pci != nullptr ? e.pci == pci : (e.pci == nullptr && e.info.name == name);
    });
    if (it == nics.end()) {
      NicEntry e;
      e.pci = pci;
      e.locality = hu::locality_of(topo, os);
      e.info.pci_bus_id = hu::bus_id_of(pci);
      e.info.numa_node = hu::single_numa_node(e.locality);
      nics.push_back(e);
      it = nics.end() - 1;
    }
    if (type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
      // NCCL_IB_HCA and UCX_NET_DEVICES take the verbs name, so it wins over the netdev name.
      it->openfabrics = true;
      it->info.name = name;
    } else {
      if (!it->openfabrics) it->info.name = name;
      (name.rfind("ib", 0) == 0 ? it->ib_netdev : it->eth_netdev) = true;
    }
  }
  for (auto& e : nics) {
    // A verbs device whose only netdev is an Ethernet one is RoCE; IPoIB netdevs are ib*.
    if (e.openfabrics) {
      e.info.kind = (e.eth_netdev && !e.ib_netdev) ? "ethernet" : "infiniband";
    } else {
      e.info.kind = e.ib_netdev ? "infiniband" : "ethernet";
    }
  }
  std::stable_sort(nics.begin(), nics.end(), [](const NicEntry& a, const NicEntry& b) {
    const bool a_pci = !a.info.pci_bus_id.empty(), b_pci = !b.info.pci_bus_id.empty();
    if (a_pci != b_pci) return a_pci;
    if (a.info.pci_bus_id != b.info.pci_bus_id) return a.info.pci_bus_id < b.info.pci_bus_id;
    return a.info.name < b.info.name;
  });
  return nics;
}

#if SHAKEDOWN_HAVE_CUDA
std::string cuda_error_note(cudaError_t rc) {
  std::string note = std::string("CUDA: ") + cudaGetErrorString(rc);
  // Without any driver the runtime says "driver version is insufficient", which sends people
  // looking for an upgrade; say plainly that there is none.
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0)
    note += " (no NVIDIA driver installed)";
  // Clear the error so it does not surface in the next CUDA call made by someone else.
  (void)cudaGetLastError();
  return note;
}
#endif

// When CUDA sees nothing but the PCI bus has NVIDIA GPUs, the fix is on the node (driver).
std::string with_pci_hint(std::string note, hwloc_topology_t topo) {
  const auto on_pci = hu::nvidia_gpus(topo).size();
  if (on_pci > 0) {
    note += "; hwloc sees " + std::to_string(on_pci) +
            " NVIDIA GPU(s) on the PCI bus: check the NVIDIA driver with nvidia-smi";
  }
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible != nullptr) note += std::string(" (CUDA_VISIBLE_DEVICES=\"") + visible + "\")";
  return note;
}

void fill_locality(hwloc_topology_t topo, GpuInfo& gpu) {
  hwloc_obj_t dev = find_pcidev(topo, gpu.pci_bus_id);
  hwloc_obj_t loc = hu::locality_of(topo, dev);
  if (loc == nullptr) return;
  gpu.numa_node = hu::single_numa_node(loc);
  gpu.cpus = hu::list_string(loc->cpuset);
}

// nvmlReturn_t is a C enum: int-sized, 0 is NVML_SUCCESS; nvmlDevice_t an opaque pointer.
using NvmlInitFn = int (*)();
using NvmlDriverVersionFn = int (*)(char*, unsigned int);
using NvmlShutdownFn = int (*)();
using NvmlHandleByBusFn = int (*)(const char*, void**);
using NvmlMigModeFn = int (*)(void*, unsigned int*, unsigned int*);
using NvmlVbiosFn = int (*)(void*, char*, unsigned int);
using NvmlErrorStringFn = const char* (*)(int);
constexpr int kNvmlNotSupported = 3;

struct DlClose {
  void operator()(void* handle) const { dlclose(handle); }
};

// What NVML tells about the node: the driver's version and, per GPU (by PCI bus id), its MIG mode
// and VBIOS. No nvml.h ships here; NVML is optional at run time, so it is loaded, never linked.
struct NvmlFacts {
  std::string driver;  // "" when NVML is absent or failed
  std::string why;     // why there is no driver version
  std::map<std::string, std::pair<std::string, std::string>> gpus;  // bus id -> mig, vbios
};

NvmlFacts nvml_facts(const std::vector<GpuInfo>& gpus) {
  NvmlFacts out;
  const std::unique_ptr<void, DlClose> lib(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL));
  if (!lib) {
    out.why = "libnvidia-ml.so.1 not loadable";
    return out;
  }
  const auto sym = [&](const char* name) { return dlsym(lib.get(), name); };
  auto init = reinterpret_cast<NvmlInitFn>(sym("nvmlInit_v2"));
  auto version = reinterpret_cast<NvmlDriverVersionFn>(sym("nvmlSystemGetDriverVersion"));
  auto shutdown = reinterpret_cast<NvmlShutdownFn>(sym("nvmlShutdown"));
  auto by_bus = reinterpret_cast<NvmlHandleByBusFn>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  auto mig = reinterpret_cast<NvmlMigModeFn>(sym("nvmlDeviceGetMigMode"));
  auto vbios = reinterpret_cast<NvmlVbiosFn>(sym("nvmlDeviceGetVbiosVersion"));
  auto error = reinterpret_cast<NvmlErrorStringFn>(sym("nvmlErrorString"));
  const auto text = [&](int rc) {
    return error != nullptr ? std::string(error(rc)) : "NVML error " + std::to_string(rc);
  };
  if (init == nullptr || version == nullptr || shutdown == nullptr) {
    out.why = "libnvidia-ml.so.1 lacks nvmlInit_v2";
    return out;
  }
  if (const int rc = init(); rc != 0) {
    out.why = "nvmlInit: " + text(rc);
    return out;
  }
  char buffer[96] = {};  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE is 80
  if (version(buffer, sizeof buffer) == 0) out.driver = buffer;
  for (const GpuInfo& g : gpus) {
    void* device = nullptr;
    std::string mig_text = "unknown (NVML has no nvmlDeviceGetMigMode)";
    std::string vbios_text = "unknown (NVML has no nvmlDeviceGetVbiosVersion)";
    if (by_bus == nullptr) {
      mig_text = vbios_text = "unknown (NVML has no nvmlDeviceGetHandleByPciBusId_v2)";
    } else if (const int rc = by_bus(g.pci_bus_id.c_str(), &device); rc != 0) {
      mig_text = vbios_text = "unknown (NVML: " + text(rc) + " for " + g.pci_bus_id + ")";
    } else {
      if (mig != nullptr) {
        unsigned current = 0, pending = 0;
        const int m = mig(device, &current, &pending);
        mig_text = m == 0                   ? (current != 0 ? "enabled" : "disabled")
                   : m == kNvmlNotSupported ? "not supported"
                                            : "unknown (NVML: " + text(m) + ")";
        if (m == 0 && pending != current) mig_text += " (a change is pending a GPU reset)";
      }
      if (vbios != nullptr) {
        char v[64] = {};  // NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE is 32
        const int b = vbios(device, v, sizeof v);
        vbios_text = b == 0 ? std::string(v) : "unknown (NVML: " + text(b) + ")";
      }
    }
    out.gpus[g.pci_bus_id] = {mig_text, vbios_text};
  }
  shutdown();
  return out;
}

std::string driver_from_proc() {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5 ..." (open and
  // proprietary modules word it differently: take the first dotted number).
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return {};
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    if (std::isdigit(static_cast<unsigned char>(word.front())) != 0 &&
        word.find('.') != std::string::npos &&
        word.find_first_not_of("0123456789.") == std::string::npos) {
      return word;
    }
  }
  return {};
}

// "9.0" from the CUDA device properties, "unknown (...)" when CUDA cannot say.
std::string gpu_compute_capability(int index) {
#if SHAKEDOWN_HAVE_CUDA
  int major = 0, minor = 0;
  const cudaError_t a = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index);
  const cudaError_t b = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index);
  if (a != cudaSuccess || b != cudaSuccess) {
    return "unknown (" + cuda_error_note(a != cudaSuccess ? a : b) + ")";
  }
  return std::to_string(major) + "." + std::to_string(minor);
#else
  (void)index;
  return "unknown (built without CUDA)";
#endif
}

// What this build was compiled against, and the cuBLASLt it loads (only on a node with GPUs:
// loading it costs about 200 MB).
std::vector<NodeFact> build_facts(bool has_gpus) {
  std::vector<NodeFact> out;
#if SHAKEDOWN_HAVE_CUDA
  out.push_back({"build.cuda_runtime",
                 std::to_string(CUDART_VERSION / 1000) + "." +
                     std::to_string(CUDART_VERSION % 1000 / 10),
                 "cuda_runtime_api.h (linked statically)"});
  out.push_back({"build.nccl",
                 std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
                     std::to_string(NCCL_PATCH),
                 "nccl.h"});
  out.push_back({"build.cuda_archs", SHAKEDOWN_CUDA_ARCHS, "CMAKE_CUDA_ARCHITECTURES"});
  if (has_gpus) {
    std::string version;
    try {
      const std::size_t v = cublaslt_api().GetVersion();
      version = std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
                std::to_string(v % 100);
    } catch (const Error& e) {
      version = "unknown (" + std::string(e.what()) + ")";
    }
    out.push_back({"cublaslt.version", version, "cublasLtGetVersion"});
  }
#else
  (void)has_gpus;
  out.push_back({"build.cuda_runtime", "not built", "SHAKEDOWN_HAVE_CUDA"});
#endif
  return out;
}

}  // namespace

std::string format_gpu_uuid(const std::array<unsigned char, 16>& b) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return buffer;
}

std::string format_pci_bus_id(unsigned domain, unsigned bus, unsigned device, unsigned function) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%04x:%02x:%02x.%01x", domain, bus, device, function);
  return buffer;
}

std::string bound_cpus() {
  // Start at the usual 1024 CPUs and grow: the kernel answers EINVAL while the mask is too small.
  for (int ncpus = 1024; ncpus <= (1 << 18); ncpus *= 4) {
    cpu_set_t* set = CPU_ALLOC(ncpus);
    if (set == nullptr) return {};
    const std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> owned(set,
                                                                 [](cpu_set_t* s) { CPU_FREE(s); });
    const std::size_t bytes = CPU_ALLOC_SIZE(ncpus);
    CPU_ZERO_S(bytes, set);
    if (sched_getaffinity(0, bytes, set) != 0) {
      if (errno == EINVAL) continue;
      return {};
    }
    std::vector<int> cpus;
    for (int c = 0; c < ncpus; ++c) {
      if (CPU_ISSET_S(static_cast<std::size_t>(c), bytes, set)) cpus.push_back(c);
    }
    return format_cpu_list(std::move(cpus));
  }
  return {};
}

CudaDevices cuda_devices() {
  CudaDevices out;
#if SHAKEDOWN_HAVE_CUDA
  // CUDA numbers devices fastest first by default; `shakedown plan` and the rankfile map local
  // rank g to GPU g in PCI bus order (hwloc's order). The two agree only when every GPU of a node
  // is alike, so ask CUDA for bus order before its first call reads the variable. A value the
  // user set is kept (setenv's last argument 0): they chose it on purpose.
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    out.note = cuda_error_note(rc);
    return out;
  }
  if (count == 0) {
    out.note = "CUDA: no devices visible";
    return out;
  }
  for (int i = 0; i < count; ++i) {
    GpuInfo g;
    g.index = i;
    cudaDeviceProp prop{};
    const cudaError_t prc = cudaGetDeviceProperties(&prop, i);
    if (prc != cudaSuccess) {
      // Keep the slot: list position must stay the CUDA ordinal that ranks select by.
      g.name = "unknown (" + cuda_error_note(prc) + ")";
      out.gpus.push_back(std::move(g));
      continue;
    }
    g.name = prop.name;
    std::array<unsigned char, 16> bytes{};
    for (std::size_t k = 0; k < bytes.size(); ++k)
      bytes[k] = static_cast<unsigned char>(prop.uuid.bytes[k]);
    g.uuid = format_gpu_uuid(bytes);
    g.pci_bus_id = format_pci_bus_id(static_cast<unsigned>(prop.pciDomainID),
                                     static_cast<unsigned>(prop.pciBusID),
                                     static_cast<unsigned>(prop.pciDeviceID), 0);
    g.memory_bytes = prop.totalGlobalMem;
    out.gpus.push_back(std::move(g));
  }
#else
  out.note = "built without CUDA";
#endif
  return out;
}

std::vector<GpuInfo> pci_gpus(const HwlocTopology& topology) {
  std::vector<GpuInfo> gpus;
  for (hwloc_obj_t dev : hu::nvidia_gpus(topology.get())) {
    GpuInfo g;
    g.index = static_cast<int>(gpus.size());
    char name[40];
    std::snprintf(name, sizeof name, "NVIDIA [10de:%04x]",
                  static_cast<unsigned>(dev->attr->pcidev.device_id));
    g.name = name;
    g.pci_bus_id = hu::bus_id_of(dev);
    fill_locality(topology.get(), g);
    gpus.push_back(std::move(g));
  }
  return gpus;
}

PciLocality pci_locality(const HwlocTopology& topology, std::string_view pci_bus_id) {
  PciLocality out;
  hwloc_obj_t dev = find_pcidev(topology.get(), pci_bus_id);
  if (dev == nullptr) return out;
  out.found = true;
  hwloc_obj_t loc = hu::locality_of(topology.get(), dev);
  out.numa_node = hu::single_numa_node(loc);
  out.cpus = loc != nullptr ? hu::list_string(loc->cpuset) : std::string();
  return out;
}

std::vector<NicInfo> list_nics(const HwlocTopology& topology) {
  std::vector<NicInfo> out;
  for (auto& e : collect_nics(topology.get())) out.push_back(std::move(e.info));
  return out;
}

std::string nearest_nic(const HwlocTopology& topology, std::string_view gpu_pci_bus_id,
                        std::string_view cpus) {
  hwloc_topology_t topo = topology.get();
  const auto nics = collect_nics(topo);
  if (nics.empty()) return {};
  const auto prefer = [](const NicEntry& e) { return e.info.kind == "infiniband" ? 0 : 1; };

  hwloc_obj_t gpu = gpu_pci_bus_id.empty() ? nullptr : find_pcidev(topo, gpu_pci_bus_id);
  if (gpu != nullptr) {
    // Steps from the GPU up to the first ancestor it shares with the NIC: 1 = same PCIe switch.
    std::vector<hwloc_obj_t> chain;
    for (hwloc_obj_t o = gpu; o != nullptr; o = o->parent) chain.push_back(o);
    const auto steps = [&](const NicEntry& e) {
      for (hwloc_obj_t o = e.pci != nullptr ? e.pci : e.locality; o != nullptr; o = o->parent) {
        const auto it = std::find(chain.begin(), chain.end(), o);
        if (it != chain.end()) return static_cast<std::size_t>(it - chain.begin());
      }
      return chain.size();
    };
    const auto best =
        std::min_element(nics.begin(), nics.end(), [&](const NicEntry& a, const NicEntry& b) {
          const auto sa = steps(a), sb = steps(b);
          return sa != sb ? sa < sb : prefer(a) < prefer(b);
        });
    return best->info.name;
  }

  hu::Bitmap bound;
  const std::string text(cpus);
  const bool have_cpus = !text.empty() && hwloc_bitmap_list_sscanf(bound.get(), text.c_str()) == 0;
  const auto overlap = [&](const NicEntry& e) {
    if (!have_cpus || e.locality == nullptr || e.locality->cpuset == nullptr) return 0;
    hu::Bitmap both;
    hwloc_bitmap_and(both.get(), e.locality->cpuset, bound.get());
    return hwloc_bitmap_weight(both.get());
  };
  const auto best =
      std::min_element(nics.begin(), nics.end(), [&](const NicEntry& a, const NicEntry& b) {
        const int oa = overlap(a), ob = overlap(b);
        return oa != ob ? oa > ob : prefer(a) < prefer(b);
      });
  return best->info.name;
}

RankInfo discover_rank(const HwlocTopology& topology, int rank, int node_index, int local_rank,
                       int local_size, int gpu_slot) {
  if (rank < 0 || node_index < 0 || local_rank < 0 || local_size < 1 || local_rank >= local_size) {
    throw InternalError("discover_rank: inconsistent placement rank=" + std::to_string(rank) +
                        " node_index=" + std::to_string(node_index) + " local_rank=" +
                        std::to_string(local_rank) + " local_size=" + std::to_string(local_size) +
                        " (bug in the caller: the Context computes these)");
  }
  hwloc_topology_t topo = topology.get();
  RankInfo r;
  r.rank = rank;
  r.node_index = node_index;
  r.local_rank = local_rank;
  r.local_size = local_size;
  r.hostname = local_hostname();
  r.cpus = bound_cpus();
  const auto parsed = parse_cpu_list(r.cpus);
  r.cpu_count = parsed ? static_cast<int>(parsed->size()) : 0;
  r.node_pus = count_of(topo, HWLOC_OBJ_PU);
  r.node_cores = count_of(topo, HWLOC_OBJ_CORE);
  if (r.node_cores == 0) r.node_cores = r.node_pus;  // some platforms expose no Core level
  AllowedCpus allowed = allowed_cpus(topo);
  r.allowed_cpus = std::move(allowed.list);
  r.allowed_cores = allowed.cores;
  r.allowed_pus = allowed.pus;
  r.numa = numa_of_cpus(topo, r.cpus);

  CudaDevices cuda = cuda_devices();
  r.gpu_count = static_cast<int>(cuda.gpus.size());
  if (r.gpu_count > 0) {
    r.gpu_index = (gpu_slot >= 0 ? gpu_slot : local_rank) % r.gpu_count;
    r.gpu = cuda.gpus[static_cast<std::size_t>(r.gpu_index)];
    fill_locality(topo, r.gpu);
  } else {
    r.gpu_note = with_pci_hint(cuda.note, topo);
  }

  r.nic = nearest_nic(topology, r.gpu.pci_bus_id, r.cpus);

  r.slurm_job_id = env_or_empty("SLURM_JOB_ID");
  r.slurm_node_id = env_or_empty("SLURM_NODEID");
  r.slurm_local_id = env_or_empty("SLURM_LOCALID");
  r.slurm_procid = env_or_empty("SLURM_PROCID");
  // Started by mpirun inside an allocation (ORTE marks what it launches with
  // OMPI_MCA_orte_hnp_uri), or by another launcher whose Slurm task is not this rank: the task
  // variables belong to the batch step or to the launcher's daemon step, not to this rank. Keep
  // what names the job and the node's place (job id, topology address); drop task ids and the
  // step-relative node id rather than record wrong ones.
  if (!env_or_empty("OMPI_MCA_orte_hnp_uri").empty() ||
      (!r.slurm_procid.empty() && r.slurm_procid != std::to_string(rank))) {
    r.slurm_node_id.clear();
    r.slurm_local_id.clear();
    r.slurm_procid.clear();
  }
  r.slurm_topology_addr = env_or_empty("SLURM_TOPOLOGY_ADDR");
  r.slurm_topology_pattern = env_or_empty("SLURM_TOPOLOGY_ADDR_PATTERN");
  r.leaf_switch =
      parse_slurm_topology_addr(r.slurm_topology_addr, r.slurm_topology_pattern).leaf_switch;
  return r;
}

RankInfo discover_rank(int rank, int node_index, int local_rank, int local_size, int gpu_slot) {
  const HwlocTopology topology = HwlocTopology::this_machine();
  return discover_rank(topology, rank, node_index, local_rank, local_size, gpu_slot);
}

NodeInventory discover_node(const HwlocTopology& topology, int node_index) {
  hwloc_topology_t topo = topology.get();
  NodeInventory n;
  n.node_index = node_index;
  n.hostname = local_hostname();
  // /proc describes the running machine; a saved XML topology carries its own CPU model.
  if (topology.is_this_system()) n.cpu_model = cpu_model_from_proc();
  if (n.cpu_model.empty()) n.cpu_model = cpu_model_from_hwloc(topo);
  if (n.cpu_model.empty()) n.cpu_model = "unknown";
  n.sockets = count_of(topo, HWLOC_OBJ_PACKAGE);
  n.cores = count_of(topo, HWLOC_OBJ_CORE);
  n.pus = count_of(topo, HWLOC_OBJ_PU);
  n.numa_nodes = count_of(topo, HWLOC_OBJ_NUMANODE);
  // The machine's memory is what the kernel reports in total (/proc/meminfo). The NUMA nodes'
  // sum (hwloc's root total) can be far less: memory added after boot (hot-plugged or
  // ballooned, as on some VMs) may belong to no NUMA node's count. A saved XML topology has only
  // hwloc's figure.
  n.memory_bytes = topology.is_this_system() ? memory_from_proc() : 0;
  if (n.memory_bytes == 0) n.memory_bytes = hwloc_get_root_obj(topo)->total_memory;
  n.os = os_pretty_name();
  n.kernel = kernel_release();

  CudaDevices cuda = cuda_devices();
  for (auto& g : cuda.gpus) fill_locality(topo, g);
  n.gpus = std::move(cuda.gpus);
  if (n.gpus.empty()) n.gpu_note = with_pci_hint(cuda.note, topo);
  n.nics = list_nics(topology);
  const NvmlFacts nvml = nvml_facts(n.gpus);
  n.gpu_driver = nvml.driver;
  if (n.gpu_driver.empty()) n.gpu_driver = driver_from_proc();

  const LibraryVersions v = library_versions();
  n.mpi_version = v.mpi;
  n.nccl_version = v.nccl;
  n.cuda_runtime_version = v.cuda_runtime;
  n.cuda_driver_version = v.cuda_driver;
  n.hdf5_version = v.hdf5;
  n.ucx_version = v.ucx;
  n.hwloc_version = v.hwloc;
  n.openblas_version = v.openblas;

  // The set-up the audit checks: files under / and this process's environment, then what only
  // the GPU libraries can tell.
  n.facts = read_node_facts(FactSource::this_process(), n);
  const auto add = [&](std::string key, std::string value, std::string source) {
    n.facts.push_back({std::move(key), std::move(value), std::move(source)});
  };
  add("gpu.pci_count", std::to_string(hu::nvidia_gpus(topo).size()),
      "hwloc: NVIDIA devices on the PCI bus");
  for (const GpuInfo& g : n.gpus) {
    const std::string key = "gpu." + std::to_string(g.index);
    add(key + ".compute_capability", gpu_compute_capability(g.index), "CUDA device properties");
    const auto it = nvml.gpus.find(g.pci_bus_id);
    const std::string missing = "unknown (" + nvml.why + ")";
    add(key + ".mig", it != nvml.gpus.end() ? it->second.first : missing, "NVML");
    add(key + ".vbios", it != nvml.gpus.end() ? it->second.second : missing, "NVML");
  }
  for (NodeFact& f : build_facts(!n.gpus.empty())) n.facts.push_back(std::move(f));
  std::stable_sort(n.facts.begin(), n.facts.end(),
                   [](const NodeFact& a, const NodeFact& b) { return a.key < b.key; });
  return n;
}

NodeInventory discover_node(int node_index) {
  const HwlocTopology topology = HwlocTopology::this_machine();
  return discover_node(topology, node_index);
}

}  // namespace shakedown
