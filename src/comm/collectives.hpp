#pragma once
// The collective table: ONE row of data per collective (docs/architecture.md). Byte rules and
// bus-bandwidth factors follow nccl-tests, so numbers are comparable. No switch statements on the
// collective kind elsewhere: code asks the row.
#include <cstdint>
#include <string_view>
#include <vector>

namespace shakedown {

enum class CollectiveKind {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kAllToAll,
  kSendRecv
};

// Element counts for one operation, per rank.
struct CollectiveCounts {
  std::uint64_t send = 0;   // elements in each rank's input buffer
  std::uint64_t recv = 0;   // elements in each rank's output buffer
  std::uint64_t unit = 0;   // the count passed to the library call (per-peer / per-rank count)
  std::uint64_t bytes = 0;  // bytes used for algbw (nccl-tests' "size" after rounding)
};

struct CollectiveInfo {
  CollectiveKind kind;
  std::string_view name;  // config / HDF5 name: "all_reduce", ...
  bool reduces;           // takes a reduction op
  // Counts for a requested size in bytes, element size and rank count. The per-rank element
  // count is rounded down so every rank's share is a multiple of 16 bytes (as nccl-tests does);
  // a size too small for one element per rank gives unit == 0 (the size is skipped).
  CollectiveCounts (*counts)(std::uint64_t bytes, std::size_t elem_size, int nranks);
  // busbw = algbw x factor(n): the per-link traffic a ring would need.
  double (*busbw_factor)(int nranks);
};

const std::vector<CollectiveInfo>& collective_table();
const CollectiveInfo* find_collective(std::string_view name);
const CollectiveInfo& collective(CollectiveKind kind);

// algbw in GB/s (1e9 bytes) for `bytes` moved in `seconds`.
double algbw_gbps(std::uint64_t bytes, double seconds);

}  // namespace shakedown
