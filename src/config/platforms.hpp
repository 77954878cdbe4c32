#pragma once
// Platforms: expected numbers per machine type (configs/platforms/<name>.yaml, built into the
// binary), for `checks.platform`. A number is what a healthy machine of that type reaches; a
// result passes at checks.min_busbw_fraction / checks.min_tflops_fraction of it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shakedown {

struct Platform {
  std::string name;  // the file's stem: h100-sxm
  std::string description;
  std::vector<std::string> gpu_names;  // substrings of the CUDA device name, for `auto`
  std::uint64_t min_bytes = 0;         // busbw figures hold from this message size up
  // scope (world, intra_node, inter_node, rail) -> collective -> GB/s at large sizes
  std::map<std::string, std::map<std::string, double>> busbw_GBps;
  // scope -> collective -> the most the median time at the smallest size may be (us)
  std::map<std::string, std::map<std::string, double>> latency_us;
  double fp8_tflops = 0;  // per rank, for shapes of at least min_flop (0: no GEMM figure)
  double min_flop = 0;
  double gpu_memory_GiB = 0;  // device memory as nvidia-smi reports it (0: no GPU)
  // audit: what every node of this kind has (0: not said)
  int gpus_per_node = 0;
  double nic_rate_gbps = 0;  // each InfiniBand port's rate (Gb/s, as /sys/class/infiniband says)
  std::string driver_min, nccl_min;  // least versions ("" none; audit.* keys of a config win)
  // devices: the least each GPU should reach (0: not said; devices.min_* keys of a config win)
  double devices_memory_GBps = 0;   // device memory copy, bytes read + written per second
  double devices_host_GBps = 0;     // pinned host->device and device->host, each
  double devices_pair_GBps = 0;     // one ordered GPU pair, unidirectional
  double devices_min_free_GiB = 0;  // free once the CUDA runtime has started
};

// Every built-in platform, in name order. InternalError when a built-in file is malformed (a
// unit test reads them all).
std::vector<Platform> builtin_platforms();
std::vector<std::string> platform_names();
std::optional<Platform> find_platform(std::string_view name);
// `auto`: the platform whose gpu_names match every GPU name given (one per node); nothing when
// none or several match.
std::optional<Platform> match_platform(const std::vector<std::string>& gpu_names);

}  // namespace shakedown
