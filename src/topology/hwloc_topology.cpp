#include "topology/hwloc_topology.hpp"

#include <hwloc.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.hpp"

namespace shakedown {
namespace {

// Owns a topology between init and a successful load, so every early throw destroys it.
struct PendingTopology {
  hwloc_topology_t topo = nullptr;
  ~PendingTopology() {
    if (topo != nullptr) hwloc_topology_destroy(topo);
  }
  hwloc_topology_t release() { return std::exchange(topo, nullptr); }
};

void init_with_io(PendingTopology& pending, const std::string& where) {
  if (hwloc_topology_init(&pending.topo) != 0) {
    pending.topo = nullptr;
    throw RuntimeFault("hwloc: hwloc_topology_init failed for " + where + ": " +
                       std::strerror(errno) + " (out of memory?)");
  }
  // GPUs and NICs are PCI/OS devices; hwloc drops them unless asked. KEEP_IMPORTANT keeps GPUs,
  // NICs and the bridges above them, but not every PCI bridge and USB controller.
  if (hwloc_topology_set_io_types_filter(pending.topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0) {
    throw RuntimeFault("hwloc: cannot enable I/O device discovery for " + where + ": " +
                       std::strerror(errno));
  }
  // GPUs are found as PCI devices and named through NVML/CUDA: hwloc's GL plugin (it opens the
  // X displays it can reach, and may wait on one) and OpenCL plugin (it initialises every
  // installed OpenCL platform) add nothing here but time. Both are also unloaded with their
  // libraries' thread-local storage once discovery ends, which LeakSanitizer then trips on
  // ("Tracer caught signal 11" reading a stale DTLS block) in the sanitizer build.
  // EINVAL: hwloc has no such component (libhwloc-plugins not installed, or HWLOC_PLUGINS_PATH
  // elsewhere): nothing to leave out.
  for (const char* component : {"gl", "opencl"}) {
    if (hwloc_topology_set_components(pending.topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                      component) != 0 &&
        errno != EINVAL) {
      throw RuntimeFault(std::string("hwloc: cannot leave out its ") + component +
                         " component for " + where + ": " + std::strerror(errno));
    }
  }
  // Under Slurm cgroups (or a container cpuset) hwloc would otherwise show only the CPUs this
  // process may use, and every rank would report a different, smaller "host". Plans and the
  // node inventory need the whole machine; what the job may use stays known through
  // hwloc_topology_get_allowed_cpuset (RankInfo::allowed_cpus), and the rank's own binding comes
  // from sched_getaffinity.
  if (hwloc_topology_set_flags(pending.topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0) {
    throw RuntimeFault("hwloc: cannot ask for the whole machine (INCLUDE_DISALLOWED) for " + where +
                       ": " + std::strerror(errno));
  }
}

}  // namespace

HwlocTopology::HwlocTopology(hwloc_topology* topo, std::string source, bool this_system) noexcept
    : topo_(topo), source_(std::move(source)), this_system_(this_system) {}

HwlocTopology::~HwlocTopology() {
  if (topo_ != nullptr) hwloc_topology_destroy(topo_);
}

HwlocTopology::HwlocTopology(HwlocTopology&& other) noexcept
    : topo_(std::exchange(other.topo_, nullptr)),
      source_(std::move(other.source_)),
      this_system_(other.this_system_) {}

HwlocTopology& HwlocTopology::operator=(HwlocTopology&& other) noexcept {
  if (this != &other) {
    if (topo_ != nullptr) hwloc_topology_destroy(topo_);
    topo_ = std::exchange(other.topo_, nullptr);
    source_ = std::move(other.source_);
    this_system_ = other.this_system_;
  }
  return *this;
}

HwlocTopology HwlocTopology::this_machine() {
  const std::string where = "this machine";
  PendingTopology pending;
  init_with_io(pending, where);
  if (hwloc_topology_load(pending.topo) != 0) {
    throw RuntimeFault(
        "hwloc: cannot read the topology of this machine: " + std::string(std::strerror(errno)) +
        " (is /sys mounted? run `lstopo` to see what hwloc reports)");
  }
  return HwlocTopology(pending.release(), where, true);
}

HwlocTopology HwlocTopology::from_xml_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw UsageError("topology XML '" + path +
                     "' does not exist or is not a file: save one on the target node with "
                     "`lstopo --of xml FILE` and pass that path");
  }
  PendingTopology pending;
  init_with_io(pending, "'" + path + "'");
  if (hwloc_topology_set_xml(pending.topo, path.c_str()) != 0) {
    throw UsageError("hwloc cannot use '" + path + "' as an XML topology: " + std::strerror(errno) +
                     " (check it with `lstopo --input " + path + "`)");
  }
  if (hwloc_topology_load(pending.topo) != 0) {
    throw UsageError("hwloc cannot load the XML topology '" + path + "': " + std::strerror(errno) +
                     " (check it with `lstopo --input " + path + "`; hwloc prints the reason)");
  }
  // hwloc treats XML as another machine unless HWLOC_THISSYSTEM=1 says it is this one.
  const bool this_system = hwloc_topology_is_thissystem(pending.topo) != 0;
  return HwlocTopology(pending.release(), path, this_system);
}

}  // namespace shakedown
