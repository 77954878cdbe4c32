#include "topology/hwloc_util.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <tuple>

#include "core/error.hpp"

namespace shakedown::hwloc_util {
namespace {

std::optional<unsigned> hex(std::string_view s, unsigned max) {
  unsigned value = 0;
  const auto* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, value, 16);
  if (s.empty() || ec != std::errc() || ptr != end || value > max) return std::nullopt;
  return value;
}

}  // namespace

Bitmap::Bitmap() : bitmap_(hwloc_bitmap_alloc()) {
  if (bitmap_ == nullptr) throw RuntimeFault("hwloc: cannot allocate a CPU bitmap (out of memory)");
}

Bitmap::Bitmap(hwloc_const_bitmap_t copy_of) : bitmap_(hwloc_bitmap_dup(copy_of)) {
  if (bitmap_ == nullptr) throw RuntimeFault("hwloc: cannot copy a CPU bitmap (out of memory)");
}

Bitmap::~Bitmap() {
  hwloc_bitmap_free(bitmap_);
}

std::string list_string(hwloc_const_bitmap_t set) {
  if (set == nullptr || hwloc_bitmap_iszero(set)) return {};
  char* raw = nullptr;
  if (hwloc_bitmap_list_asprintf(&raw, set) < 0 || raw == nullptr) return {};
  const std::unique_ptr<char, decltype(&std::free)> owned(raw, &std::free);
  return std::string(owned.get());
}

std::optional<PciAddress> parse_pci_bus_id(std::string_view text) {
  // [domain:]bus:device.function
  const auto dot = text.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const auto last_colon = text.rfind(':', dot);
  if (last_colon == std::string_view::npos) return std::nullopt;
  const auto prev_colon =
      last_colon == 0 ? std::string_view::npos : text.rfind(':', last_colon - 1);
  PciAddress a;
  const auto function = hex(text.substr(dot + 1), 7);
  const auto device = hex(text.substr(last_colon + 1, dot - last_colon - 1), 0x1f);
  const std::size_t bus_start = prev_colon == std::string_view::npos ? 0 : prev_colon + 1;
  const auto bus = hex(text.substr(bus_start, last_colon - bus_start), 0xff);
  const auto domain = prev_colon == std::string_view::npos
                          ? std::optional<unsigned>(0)
                          : hex(text.substr(0, prev_colon), 0xffffffffu);
  if (!function || !device || !bus || !domain) return std::nullopt;
  a.domain = *domain;
  a.bus = *bus;
  a.device = *device;
  a.function = *function;
  return a;
}

std::string bus_id_of(hwloc_obj_t pcidev) {
  if (pcidev == nullptr || pcidev->type != HWLOC_OBJ_PCI_DEVICE) return {};
  const auto& p = pcidev->attr->pcidev;
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%04x:%02x:%02x.%01x", static_cast<unsigned>(p.domain),
                static_cast<unsigned>(p.bus), static_cast<unsigned>(p.dev),
                static_cast<unsigned>(p.func));
  return buffer;
}

bool is_nvidia_gpu(hwloc_obj_t obj) {
  if (obj == nullptr || obj->type != HWLOC_OBJ_PCI_DEVICE) return false;
  const auto& p = obj->attr->pcidev;
  return p.vendor_id == 0x10de && (p.class_id == 0x0302 || p.class_id == 0x0300);
}

std::vector<hwloc_obj_t> nvidia_gpus(hwloc_topology_t topology) {
  std::vector<hwloc_obj_t> gpus;
  for (hwloc_obj_t obj = hwloc_get_next_pcidev(topology, nullptr); obj != nullptr;
       obj = hwloc_get_next_pcidev(topology, obj)) {
    if (is_nvidia_gpu(obj)) gpus.push_back(obj);
  }
  const auto key = [](hwloc_obj_t o) {
    const auto& p = o->attr->pcidev;
    return std::make_tuple(static_cast<unsigned>(p.domain), static_cast<unsigned>(p.bus),
                           static_cast<unsigned>(p.dev), static_cast<unsigned>(p.func));
  };
  std::sort(gpus.begin(), gpus.end(),
            [&](hwloc_obj_t a, hwloc_obj_t b) { return key(a) < key(b); });
  return gpus;
}

hwloc_obj_t locality_of(hwloc_topology_t topology, hwloc_obj_t io_object) {
  if (io_object == nullptr) return nullptr;
  return hwloc_get_non_io_ancestor_obj(topology, io_object);
}

int single_numa_node(hwloc_obj_t obj) {
  if (obj == nullptr || obj->nodeset == nullptr || hwloc_bitmap_weight(obj->nodeset) != 1)
    return -1;
  return hwloc_bitmap_first(obj->nodeset);
}

std::string numa_list(hwloc_topology_t topology, hwloc_const_cpuset_t cpus) {
  std::string out;
  if (cpus == nullptr) return out;
  for (hwloc_obj_t numa = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, nullptr);
       numa != nullptr; numa = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, numa)) {
    if (numa->cpuset != nullptr && hwloc_bitmap_intersects(numa->cpuset, cpus)) {
      if (!out.empty()) out += ',';
      out += std::to_string(numa->os_index);
    }
  }
  return out;
}

}  // namespace shakedown::hwloc_util
