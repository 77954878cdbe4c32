#include "topology/node_facts.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "core/strings.hpp"

extern char** environ;  // NOLINT: POSIX

namespace shakedown {

namespace fs = std::filesystem;

namespace {

// The first line of a file, trimmed; nullopt-like "" with `why` set when it cannot be read.
struct Read {
  bool ok = false;
  std::string text;
  std::string why;
};

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return std::isspace(c) == 0; };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

Read read_file(const fs::path& path, bool first_line_only = true) {
  Read r;
  std::ifstream in(path);
  if (!in) {
    r.why = std::string(std::strerror(errno != 0 ? errno : ENOENT)) + " reading " + path.string();
    return r;
  }
  if (first_line_only) {
    std::getline(in, r.text);
    r.text = trim(r.text);
  } else {
    std::stringstream ss;
    ss << in.rdbuf();
    r.text = ss.str();
  }
  r.ok = true;
  return r;
}

bool present(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string unknown(const std::string& why) { return "unknown (" + why + ")"; }

// Bytes as GiB with one decimal ("79.6").
std::string gib_text(std::uint64_t bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", static_cast<double>(bytes) / (1ull << 30));
  return buffer;
}

class Facts {
 public:
  void add(std::string key, std::string value, std::string source) {
    facts_.push_back({std::move(key), std::move(value), std::move(source)});
  }
  // `key` from the first line of `file` (under the root); "unknown (why)" when unreadable.
  void from_file(const FactSource& src, std::string key, const std::string& file) {
    const Read r = read_file(src.path(file));
    add(std::move(key), r.ok ? (r.text.empty() ? std::string("(empty)") : r.text) : unknown(r.why),
        file);
  }
  std::vector<NodeFact> take() {
    std::stable_sort(facts_.begin(), facts_.end(),
                     [](const NodeFact& a, const NodeFact& b) { return a.key < b.key; });
    return std::move(facts_);
  }

 private:
  std::vector<NodeFact> facts_;
};

// "always [madvise] never" -> "madvise".
std::string bracketed(const std::string& text) {
  const auto open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return text;
  return text.substr(open + 1, close - open - 1);
}

void firmware_facts(const FactSource& src, Facts& out) {
  out.from_file(src, "system.product", "/sys/class/dmi/id/product_name");
  out.from_file(src, "bios.version", "/sys/class/dmi/id/bios_version");
}

void memory_facts(const FactSource& src, Facts& out) {
  const Read r = read_file(src.path("/proc/meminfo"), false);
  std::string total, size;
  std::istringstream lines(r.text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name, value;
    words >> name >> value;
    if (name == "HugePages_Total:") total = value;
    if (name == "Hugepagesize:") size = value;
  }
  const std::string why = r.ok ? "no such line in /proc/meminfo" : r.why;
  out.add("hugepages.total", total.empty() ? unknown(why) : total, "/proc/meminfo");
  out.add("hugepages.size_kB", size.empty() ? unknown(why) : size, "/proc/meminfo");
  for (const char* name : {"enabled", "defrag"}) {
    const std::string file = std::string("/sys/kernel/mm/transparent_hugepage/") + name;
    const Read t = read_file(src.path(file));
    out.add(std::string("thp.") + name, t.ok ? bracketed(t.text) : unknown(t.why), file);
  }
}

// Every CPU's scaling governor: one word when all agree, else each with its count.
void governor_fact(const FactSource& src, Facts& out) {
  const std::string dir = "/sys/devices/system/cpu";
  std::map<std::string, int> seen;
  int cpus = 0;
  for (const std::string& name : list_dir(src.path(dir))) {
    if (!name.starts_with("cpu") || name.size() < 4 ||
        name.find_first_not_of("0123456789", 3) != std::string::npos) {
      continue;
    }
    ++cpus;
    const Read r = read_file(src.path(dir + "/" + name + "/cpufreq/scaling_governor"));
    if (r.ok) ++seen[r.text];
  }
  const std::string source = dir + "/cpu*/cpufreq/scaling_governor";
  if (seen.empty()) {
    out.add("cpu.governor",
            unknown(cpus == 0 ? "no CPUs listed in " + dir
                              : "no cpufreq under " + dir +
                                    "/cpu0: the firmware or the hypervisor sets the frequency"),
            source);
    return;
  }
  if (seen.size() == 1) {
    out.add("cpu.governor", seen.begin()->first, source);
    return;
  }
  std::vector<std::string> parts;
  for (const auto& [g, n] : seen) parts.push_back(g + " x" + std::to_string(n));
  out.add("cpu.governor", join(parts, ", "), source);
}

void infiniband_facts(const FactSource& src, Facts& out) {
  const std::string base = "/sys/class/infiniband";
  for (const std::string& dev : list_dir(src.path(base))) {
    const std::string d = base + "/" + dev;
    // board_id names the card (MT_0000000838); hca_type is the chip's number where board_id is
    // missing.
    const Read board = read_file(src.path(d + "/board_id"));
    if (board.ok && !board.text.empty()) {
      out.add("nic." + dev + ".model", board.text, d + "/board_id");
    } else {
      out.from_file(src, "nic." + dev + ".model", d + "/hca_type");
    }
    out.from_file(src, "nic." + dev + ".fw", d + "/fw_ver");
    for (const std::string& port : list_dir(src.path(d + "/ports"))) {
      const std::string p = d + "/ports/" + port;
      const std::string key = "nic." + dev + ".port" + port;
      out.from_file(src, key + ".rate", p + "/rate");
      out.from_file(src, key + ".link_layer", p + "/link_layer");
      out.from_file(src, key + ".state", p + "/state");
    }
  }
}

void ethernet_facts(const FactSource& src, const NodeInventory& n, Facts& out) {
  for (const NicInfo& nic : n.nics) {
    const std::string dir = "/sys/class/net/" + nic.name;
    if (!present(src.path(dir))) continue;  // a verbs device (mlx5_0): its ports say the rate
    const Read r = read_file(src.path(dir + "/speed"));
    // Virtual NICs and links that are down answer -1 or EINVAL.
    std::string value;
    if (!r.ok) {
      value = unknown(r.why);
    } else if (r.text.empty() || r.text.starts_with('-')) {
      value = unknown("the driver reports no link speed (" + r.text + ")");
    } else {
      value = r.text + " Mb/s";
    }
    out.add("net." + nic.name + ".speed", value, dir + "/speed");
  }
}

void gpudirect_facts(const FactSource& src, Facts& out) {
  const std::string version = "/proc/driver/nvidia/version";
  const Read v = read_file(src.path(version));
  if (v.ok) {
    // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05 ..." vs
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15 ...".
    out.add("gpu.kernel_module",
            v.text.find("Open Kernel Module") != std::string::npos ? "open" : "proprietary",
            version);
  } else if (present(src.path("/sys/module/nvidia"))) {
    out.add("gpu.kernel_module", unknown(v.why), version);
  } else {
    out.add("gpu.kernel_module", "none", "/sys/module/nvidia");
  }
  out.add("gdr.nvidia_peermem",
          present(src.path("/sys/module/nvidia_peermem")) ? "loaded" : "not loaded",
          "/sys/module/nvidia_peermem");
}

// NCCL reads a setting from the environment first, then NCCL_CONF_FILE, else ~/.nccl.conf, then
// /etc/nccl.conf (each line VAR=value, '#' comments).
void nccl_facts(const FactSource& src, Facts& out) {
  std::map<std::string, std::pair<std::string, std::string>> settings;  // var -> value, source
  std::vector<std::string> files;
  if (const std::string f = src.getenv("NCCL_CONF_FILE"); !f.empty()) {
    files.push_back(f);
  } else if (const std::string home = src.getenv("HOME"); !home.empty()) {
    files.push_back(home + "/.nccl.conf");
  }
  files.push_back("/etc/nccl.conf");
  // Later files do not override earlier ones: walk them in reverse so the first wins.
  for (auto f = files.rbegin(); f != files.rend(); ++f) {
    const Read r = read_file(src.path(*f), false);
    if (!r.ok) continue;
    std::istringstream lines(r.text);
    for (std::string line; std::getline(lines, line);) {
      line = trim(line);
      if (line.empty() || line.starts_with('#')) continue;
      const auto eq = line.find('=');
      if (eq == std::string::npos) continue;
      const std::string var = trim(line.substr(0, eq));
      if (var.starts_with("NCCL_")) settings[var] = {trim(line.substr(eq + 1)), *f};
    }
  }
  for (const auto& [name, value] : src.env) {
    if (name.starts_with("NCCL_") && name != "NCCL_CONF_FILE") {
      settings[name] = {value, "environment"};
    }
  }
  for (const auto& [var, vs] : settings) out.add("nccl." + var, vs.first, vs.second);
}

// key="value" lines of Podman's /run/.containerenv.
std::string containerenv_value(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(key + "=")) continue;
    std::string v = trim(line.substr(key.size() + 1));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return v;
  }
  return {};
}

void container_facts(const FactSource& src, Facts& out) {
  std::string runtime = "none", image, source = "markers";
  std::string no_image = "the runtime does not tell the container its image";
  if (std::string c = src.getenv("APPTAINER_CONTAINER"); !c.empty()) {
    runtime = "apptainer";
    image = c;
    source = "APPTAINER_CONTAINER";
  } else if (std::string s = src.getenv("SINGULARITY_CONTAINER"); !s.empty()) {
    runtime = "singularity";
    image = s;
    source = "SINGULARITY_CONTAINER";
  } else if (present(src.path("/.enroot")) || !src.getenv("ENROOT_ROOTFS").empty() ||
             !src.getenv("PYXIS_CONTAINER_IMAGE").empty()) {
    runtime = "enroot";
    image = src.getenv("PYXIS_CONTAINER_IMAGE");
    source = image.empty() ? "/.enroot" : "PYXIS_CONTAINER_IMAGE";
  } else if (present(src.path("/run/.containerenv"))) {
    const Read r = read_file(src.path("/run/.containerenv"), false);
    runtime = "podman";
    image = containerenv_value(r.text, "image");
    source = "/run/.containerenv";
    if (image.empty()) no_image = "/run/.containerenv names no image (rootless Podman)";
  } else if (present(src.path("/.dockerenv"))) {
    runtime = "docker";
    source = "/.dockerenv";
  } else if (!src.getenv("KUBERNETES_SERVICE_HOST").empty()) {
    runtime = "kubernetes";
    source = "KUBERNETES_SERVICE_HOST";
  } else if (const std::string marked = src.getenv("container"); !marked.empty()) {
    runtime = marked;  // systemd-nspawn, LXC, Podman set container=<name> in the environment
    source = "container (environment)";
  }
  out.add("container.runtime", runtime, source);
  if (runtime != "none") out.add("container.image", image.empty() ? unknown(no_image) : image, source);
}

// Under Slurm: does the cluster describe its switches (topology.conf beside slurm.conf)?
void slurm_facts(const FactSource& src, Facts& out) {
  if (src.getenv("SLURM_JOB_ID").empty()) return;
  std::string conf = src.getenv("SLURM_CONF");
  if (conf.empty()) conf = "/etc/slurm/slurm.conf";
  const std::string topo = fs::path(conf).parent_path().string() + "/topology.conf";
  out.add("slurm.topology_conf", present(src.path(topo)) ? "present" : "absent", topo);
}

void visibility_facts(const FactSource& src, Facts& out) {
  const std::string cvd = src.getenv("CUDA_VISIBLE_DEVICES");
  out.add("visible.cuda_devices", cvd.empty() ? "(not set)" : cvd, "CUDA_VISIBLE_DEVICES");
  for (const char* var : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "SLURM_GPUS_ON_NODE"}) {
    if (const std::string v = src.getenv(var); !v.empty()) {
      out.add("visible.slurm_gpus", std::string(var) == "SLURM_GPUS_ON_NODE" ? v + " GPU(s)" : v,
              var);
      break;
    }
  }
}

// ---- ACS on the PCIe bridges above the GPUs and NICs ----

bool is_bus_id(const std::string& s) {
  // 0000:18:00.0
  return s.size() == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.';
}

struct AcsState {
  bool readable = false;
  bool enabled = false;  // P2P request or completion redirect set
};

std::uint32_t read_u32(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
  }
  return v;
}

// The ACS control register from a bridge's configuration space: extended capabilities start at
// 0x100 (header: id in bits 0-15, next offset in bits 20-31); ACS is id 0x000D, its control
// register at +6 (bit 2: P2P request redirect, bit 3: completion redirect). Without root the
// kernel returns only the first 64 bytes: unreadable.
AcsState acs_of(const fs::path& config) {
  AcsState s;
  const Read r = read_file(config, false);
  if (!r.ok || r.text.size() < 0x104) return s;
  s.readable = true;
  std::size_t at = 0x100;
  for (int guard = 0; guard < 64 && at >= 0x100 && at + 8 <= r.text.size(); ++guard) {
    const std::uint32_t header = read_u32(r.text, at);
    if (header == 0 || header == 0xffffffffu) break;
    if ((header & 0xffffu) == 0x000d) {
      const unsigned control = static_cast<unsigned char>(r.text[at + 6]) |
                               (static_cast<unsigned char>(r.text[at + 7]) << 8u);
      s.enabled = (control & 0xcu) != 0;
      return s;
    }
    at = (header >> 20) & 0xffcu;
  }
  return s;
}

void acs_fact(const FactSource& src, const NodeInventory& n, Facts& out) {
  std::vector<std::pair<std::string, std::string>> devices;  // bus id, label
  for (const GpuInfo& g : n.gpus) {
    if (!g.pci_bus_id.empty()) devices.push_back({g.pci_bus_id, "GPU " + g.pci_bus_id});
  }
  for (const NicInfo& nic : n.nics) {
    if (!nic.pci_bus_id.empty() && nic.kind == "infiniband") {
      devices.push_back({nic.pci_bus_id, "NIC " + nic.name});
    }
  }
  // ACS matters where GPUs talk to each other or to NICs over PCIe.
  if (n.gpus.empty() || devices.size() < 2) return;
  const std::string source = "/sys/bus/pci/devices/*/config (bridges above GPUs and NICs)";
  std::map<std::string, std::vector<std::string>> enabled;  // bridge -> devices below it
  std::set<std::string> bridges;
  int unreadable = 0;
  for (const auto& [bus, label] : devices) {
    std::error_code ec;
    const fs::path real = fs::canonical(src.path("/sys/bus/pci/devices/" + bus), ec);
    if (ec) continue;
    // /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:18:00.0: every bus id before the
    // device's own is a bridge above it.
    std::vector<std::string> parts;
    for (const auto& part : real) parts.push_back(part.string());
    fs::path dir;
    for (const std::string& part : parts) {
      dir /= part;
      if (!is_bus_id(part) || part == bus) continue;
      if (!bridges.insert(part).second) {
        if (enabled.count(part) != 0) enabled[part].push_back(label);
        continue;
      }
      const AcsState s = acs_of(dir / "config");
      if (!s.readable) {
        ++unreadable;
      } else if (s.enabled) {
        enabled[part].push_back(label);
      }
    }
  }
  if (bridges.empty()) {
    out.add("pcie.acs", unknown("the GPUs' and NICs' PCI devices are not in /sys/bus/pci"),
            source);
  } else if (!enabled.empty()) {
    std::vector<std::string> parts;
    for (const auto& [bridge, below] : enabled) {
      parts.push_back(bridge + " (above " + join(below, ", ") + ")");
    }
    out.add("pcie.acs", "enabled on " + join(parts, "; "), source);
  } else if (unreadable > 0) {
    out.add("pcie.acs",
            unknown(std::to_string(unreadable) + " of " + std::to_string(bridges.size()) +
                    " bridges' configuration space unreadable: run the audit as root"),
            source);
  } else {
    out.add("pcie.acs", "disabled on " + std::to_string(bridges.size()) + " bridges", source);
  }
}

// ---- the fixed fields of NodeInventory, by the audit's names ----

struct FixedField {
  const char* key;
  std::string (*get)(const NodeInventory&);
  void (*set)(NodeInventory&, const std::string&);
};

#define SD_TEXT_FIELD(name, member)                                             \
  FixedField {                                                                  \
    name, [](const NodeInventory& n) { return n.member; },                      \
        [](NodeInventory& n, const std::string& v) { n.member = v; }            \
  }
#define SD_INT_FIELD(name, member)                                              \
  FixedField {                                                                  \
    name, [](const NodeInventory& n) { return std::to_string(n.member); },      \
        [](NodeInventory& n, const std::string& v) { n.member = std::stoi(v); } \
  }

const std::vector<FixedField>& fixed_fields() {
  static const std::vector<FixedField> kFields = {
      SD_TEXT_FIELD("cpu.model", cpu_model),
      SD_INT_FIELD("cpu.sockets", sockets),
      SD_INT_FIELD("cpu.cores", cores),
      SD_INT_FIELD("cpu.threads", pus),
      SD_INT_FIELD("numa.nodes", numa_nodes),
      FixedField{"memory.GiB",
                 [](const NodeInventory& n) {
                   return gib_text(n.memory_bytes);
                 },
                 [](NodeInventory& n, const std::string& v) {
                   n.memory_bytes = static_cast<std::uint64_t>(std::stod(v) * (1ull << 30));
                 }},
      SD_TEXT_FIELD("os", os),
      SD_TEXT_FIELD("kernel", kernel),
      SD_TEXT_FIELD("gpu.driver", gpu_driver),
      SD_TEXT_FIELD("cuda.driver", cuda_driver_version),
      SD_TEXT_FIELD("cuda.runtime", cuda_runtime_version),
      SD_TEXT_FIELD("nccl", nccl_version),
      SD_TEXT_FIELD("mpi", mpi_version),
      SD_TEXT_FIELD("ucx", ucx_version),
      SD_TEXT_FIELD("hdf5", hdf5_version),
      SD_TEXT_FIELD("hwloc", hwloc_version),
      SD_TEXT_FIELD("openblas", openblas_version),
      FixedField{"gpu.count", [](const NodeInventory& n) { return std::to_string(n.gpus.size()); },
                 [](NodeInventory& n, const std::string& v) {
                   n.gpus.resize(static_cast<std::size_t>(std::stoul(v)));
                 }},
      FixedField{"gpu.model",
                 [](const NodeInventory& n) {
                   std::set<std::string> names;
                   for (const GpuInfo& g : n.gpus) names.insert(g.name);
                   return names.empty() ? std::string("none") : join(std::vector<std::string>(names.begin(), names.end()), " + ");
                 },
                 [](NodeInventory& n, const std::string& v) {
                   for (GpuInfo& g : n.gpus) g.name = v;
                 }},
      FixedField{"gpu.memory_GiB",
                 [](const NodeInventory& n) {
                   std::set<std::string> sizes;
                   for (const GpuInfo& g : n.gpus) {
                     sizes.insert(gib_text(g.memory_bytes));
                   }
                   return sizes.empty() ? std::string("none") : join(std::vector<std::string>(sizes.begin(), sizes.end()), " + ");
                 },
                 [](NodeInventory& n, const std::string& v) {
                   for (GpuInfo& g : n.gpus) {
                     g.memory_bytes = static_cast<std::uint64_t>(std::stod(v) * (1ull << 30));
                   }
                 }},
      FixedField{"nic.count",
                 [](const NodeInventory& n) {
                   std::size_t ib = 0;
                   for (const NicInfo& nic : n.nics) ib += nic.kind == "infiniband" ? 1 : 0;
                   return std::to_string(n.nics.size()) + " (" + std::to_string(ib) + " InfiniBand)";
                 },
                 [](NodeInventory& n, const std::string& v) {
                   n.nics.resize(static_cast<std::size_t>(std::stoul(v)));
                 }},
  };
  return kFields;
}

#undef SD_TEXT_FIELD
#undef SD_INT_FIELD

}  // namespace

FactSource FactSource::this_process() {
  FactSource s;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string::npos) s.env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return s;
}

std::string FactSource::getenv(const std::string& name) const {
  const auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

fs::path FactSource::path(const std::string& absolute) const {
  if (root.empty() || root == "/") return absolute;
  return root / fs::path(absolute).relative_path();
}

const std::vector<std::string>& costly_nccl_settings() {
  static const std::vector<std::string> kSettings = {
      "NCCL_ALGO",        "NCCL_PROTO",       "NCCL_MIN_NCHANNELS",     "NCCL_MAX_NCHANNELS",
      "NCCL_IB_DISABLE",  "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE",       "NCCL_NET_GDR_LEVEL",
      "NCCL_MIN_CTAS",    "NCCL_MAX_CTAS",    "NCCL_NVLS_ENABLE",       "NCCL_P2P_LEVEL",
      "NCCL_NET_GDR_READ", "NCCL_CROSS_NIC",  "NCCL_COLLNET_ENABLE"};
  return kSettings;
}

std::vector<NodeFact> read_node_facts(const FactSource& source, const NodeInventory& n) {
  Facts out;
  firmware_facts(source, out);
  memory_facts(source, out);
  governor_fact(source, out);
  infiniband_facts(source, out);
  ethernet_facts(source, n, out);
  gpudirect_facts(source, out);
  acs_fact(source, n, out);
  nccl_facts(source, out);
  container_facts(source, out);
  slurm_facts(source, out);
  visibility_facts(source, out);
  return out.take();
}

bool is_unknown(const std::string& value) { return value.starts_with("unknown"); }

std::vector<InventoryField> inventory_fields(const NodeInventory& n) {
  std::vector<InventoryField> out;
  for (const FixedField& f : fixed_fields()) out.push_back({f.key, f.get(n)});
  return out;
}

const std::vector<std::string>& inventory_field_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const FixedField& f : fixed_fields()) names.emplace_back(f.key);
    return names;
  }();
  return kNames;
}

const std::vector<std::string>& fact_key_prefixes() {
  static const std::vector<std::string> kPrefixes = {
      "system.", "bios.",  "hugepages.", "thp.",   "cpu.governor", "nic.",    "net.",
      "gpu.",    "gdr.",   "pcie.",      "nccl.",  "container.",   "slurm.",  "visible.",
      "build.",  "cublaslt."};
  return kPrefixes;
}

void override_inventory_field(NodeInventory& n, const std::string& key, const std::string& value) {
  for (const FixedField& f : fixed_fields()) {
    if (key != f.key) continue;
    try {
      f.set(n, value);
    } catch (const std::exception&) {
      // A number field given text: keep the field, the drift shows in its text form anyway.
      n.gpu_note += " [--inject drift: " + key + "=" + value + " is not a number]";
    }
    return;
  }
  for (NodeFact& fact : n.facts) {
    if (fact.key == key) {
      fact.value = value;
      fact.source = "--inject drift";
      return;
    }
  }
  n.facts.push_back({key, value, "--inject drift"});
  std::stable_sort(n.facts.begin(), n.facts.end(),
                   [](const NodeFact& a, const NodeFact& b) { return a.key < b.key; });
}

}  // namespace shakedown
