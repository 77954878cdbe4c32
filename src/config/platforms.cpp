#include "config/platforms.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "config/load.hpp"
#include "config/platforms_data.hpp"
#include "core/error.hpp"

namespace shakedown {

namespace {

[[noreturn]] void bad(std::string_view name, const std::string& problem) {
  throw InternalError("built-in platform configs/platforms/" + std::string(name) +
                      ".yaml: " + problem);
}

std::map<std::string, std::map<std::string, double>> read_table(std::string_view name,
                                                                const YAML::Node& node,
                                                                const char* what) {
  static constexpr std::array<std::string_view, 4> kScopes = {"world", "intra_node", "inter_node",
                                                              "rail"};
  static constexpr std::array<std::string_view, 6> kOps = {
      "all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv"};
  std::map<std::string, std::map<std::string, double>> out;
  if (!node) return out;
  for (const auto& scope : node) {
    const auto s = scope.first.as<std::string>();
    if (std::find(kScopes.begin(), kScopes.end(), s) == kScopes.end()) {
      bad(name, std::string(what) + ": unknown scope " + s);
    }
    for (const auto& op : scope.second) {
      const auto o = op.first.as<std::string>();
      if (std::find(kOps.begin(), kOps.end(), o) == kOps.end()) {
        bad(name, std::string(what) + "." + s + ": unknown collective " + o);
      }
      const double v = op.second.as<double>();
      if (!(v > 0)) bad(name, std::string(what) + "." + s + "." + o + " must be > 0");
      out[s][o] = v;
    }
  }
  return out;
}

// Every key of the `section` map is one of `known`: else bad() names the unknown one.
void only_keys(std::string_view name, const YAML::Node& map, const std::string& section,
               std::initializer_list<std::string_view> known) {
  for (const auto& entry : map) {
    const auto key = entry.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      bad(name, "unknown key " + section + "." + key);
    }
  }
}

Platform parse(std::string_view name, std::string_view text) {
  Platform p;
  p.name = std::string(name);
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    for (const auto& entry : root) {
      const auto key = entry.first.as<std::string>();
      if (key != "description" && key != "gpu_names" && key != "collectives" && key != "gemm" &&
          key != "gpu_memory_GiB" && key != "audit" && key != "devices") {
        bad(name, "unknown key " + key);
      }
    }
    p.description = root["description"].as<std::string>("");
    if (root["gpu_names"]) p.gpu_names = root["gpu_names"].as<std::vector<std::string>>();
    if (const YAML::Node c = root["collectives"]) {
      if (c["min_bytes"]) p.min_bytes = parse_size(c["min_bytes"].as<std::string>(), "min_bytes");
      p.busbw_GBps = read_table(name, c["busbw_GBps"], "busbw_GBps");
      p.latency_us = read_table(name, c["latency_us"], "latency_us");
    }
    p.gpu_memory_GiB = root["gpu_memory_GiB"].as<double>(0);
    if (!(p.gpu_memory_GiB >= 0)) bad(name, "gpu_memory_GiB must be >= 0");
    if (const YAML::Node a = root["audit"]) {
      only_keys(name, a, "audit", {"gpus_per_node", "nic_rate_gbps", "driver_min", "nccl_min"});
      p.gpus_per_node = a["gpus_per_node"].as<int>(0);
      p.nic_rate_gbps = a["nic_rate_gbps"].as<double>(0);
      p.driver_min = a["driver_min"].as<std::string>("");
      p.nccl_min = a["nccl_min"].as<std::string>("");
      if (p.gpus_per_node < 0 || !(p.nic_rate_gbps >= 0)) {
        bad(name, "audit.gpus_per_node and audit.nic_rate_gbps must be >= 0");
      }
    }
    if (const YAML::Node dv = root["devices"]) {
      only_keys(name, dv, "devices", {"memory_GBps", "host_GBps", "pair_GBps", "min_free_GiB"});
      p.devices_memory_GBps = dv["memory_GBps"].as<double>(0);
      p.devices_host_GBps = dv["host_GBps"].as<double>(0);
      p.devices_pair_GBps = dv["pair_GBps"].as<double>(0);
      p.devices_min_free_GiB = dv["min_free_GiB"].as<double>(0);
      for (double v : {p.devices_memory_GBps, p.devices_host_GBps, p.devices_pair_GBps,
                       p.devices_min_free_GiB}) {
        if (!(v >= 0)) bad(name, "devices.* figures must be >= 0");
      }
    }
    if (const YAML::Node g = root["gemm"]) {
      p.fp8_tflops = g["fp8_tflops"].as<double>(0);
      p.min_flop = g["min_flop"].as<double>(0);
    }
  } catch (const YAML::Exception& e) {
    bad(name, e.what());
  } catch (const UsageError& e) {
    bad(name, e.what());
  }
  return p;
}

}  // namespace

std::vector<Platform> builtin_platforms() {
  std::vector<Platform> out;
  for (const auto& [name, text] : kPlatformYaml) out.push_back(parse(name, text));
  return out;
}

std::vector<std::string> platform_names() {
  std::vector<std::string> out;
  for (const auto& [name, text] : kPlatformYaml) out.emplace_back(name);
  return out;
}

std::optional<Platform> find_platform(std::string_view name) {
  for (const auto& [n, text] : kPlatformYaml) {
    if (n == name) return parse(n, text);
  }
  return std::nullopt;
}

std::optional<Platform> match_platform(const std::vector<std::string>& gpu_names) {
  if (gpu_names.empty()) return std::nullopt;
  std::optional<Platform> found;
  for (Platform& p : builtin_platforms()) {
    const bool all = std::all_of(gpu_names.begin(), gpu_names.end(), [&](const std::string& gpu) {
      return std::any_of(p.gpu_names.begin(), p.gpu_names.end(),
                         [&](const std::string& n) { return gpu.find(n) != std::string::npos; });
    });
    if (!all) continue;
    if (found) return std::nullopt;  // ambiguous
    found = std::move(p);
  }
  return found;
}

}  // namespace shakedown
