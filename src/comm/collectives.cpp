#include "comm/collectives.hpp"

#include <cstddef>

namespace shakedown {
namespace {

// nccl-tests rounds each rank's share down to this many bytes (a multiple of every element size).
constexpr std::uint64_t kAlign = 16;

// One buffer, the same count on every rank: all_reduce, broadcast, send_recv.
CollectiveCounts whole_buffer(std::uint64_t bytes, std::size_t elem_size, int /*nranks*/) {
  CollectiveCounts c;
  if (elem_size == 0) return c;
  const std::uint64_t count = bytes / elem_size;
  if (count == 0) return c;
  c.send = c.recv = c.unit = count;
  c.bytes = count * elem_size;
  return c;
}

// Elements in each rank's (or each peer's) share of `bytes`: bytes / n, rounded down to kAlign.
std::uint64_t share(std::uint64_t bytes, std::size_t elem_size, int nranks) {
  if (elem_size == 0 || nranks < 1) return 0;
  const std::uint64_t n = static_cast<std::uint64_t>(nranks);
  return bytes / (kAlign * n) * kAlign / elem_size;
}

// bytes = total output (per-rank send x n).
CollectiveCounts all_gather_counts(std::uint64_t bytes, std::size_t elem_size, int nranks) {
  CollectiveCounts c;
  c.unit = share(bytes, elem_size, nranks);
  if (c.unit == 0) return c;
  c.send = c.unit;
  c.recv = c.unit * static_cast<std::uint64_t>(nranks);
  c.bytes = c.recv * elem_size;
  return c;
}

// bytes = total input (per-rank recv x n).
CollectiveCounts reduce_scatter_counts(std::uint64_t bytes, std::size_t elem_size, int nranks) {
  CollectiveCounts c;
  c.unit = share(bytes, elem_size, nranks);
  if (c.unit == 0) return c;
  c.recv = c.unit;
  c.send = c.unit * static_cast<std::uint64_t>(nranks);
  c.bytes = c.send * elem_size;
  return c;
}

// bytes = per-rank buffer (per-peer count x n); unit = per-peer count.
CollectiveCounts all_to_all_counts(std::uint64_t bytes, std::size_t elem_size, int nranks) {
  CollectiveCounts c;
  c.unit = share(bytes, elem_size, nranks);
  if (c.unit == 0) return c;
  c.send = c.recv = c.unit * static_cast<std::uint64_t>(nranks);
  c.bytes = c.send * elem_size;
  return c;
}

// Ring traffic per byte of the algbw size. One rank moves nothing over a link: 0 for the
// all-to-all style collectives, as nccl-tests reports; broadcast and send_recv stay 1.
double ring_all_reduce(int n) {
  return n < 1 ? 0.0 : 2.0 * (n - 1) / n;
}
double ring_share(int n) {
  return n < 1 ? 0.0 : static_cast<double>(n - 1) / n;
}
double one(int /*n*/) {
  return 1.0;
}

}  // namespace

const std::vector<CollectiveInfo>& collective_table() {
  // Ordered as CollectiveKind, so collective(kind) is an index.
  static const std::vector<CollectiveInfo> table{
      {CollectiveKind::kAllReduce, "all_reduce", true, &whole_buffer, &ring_all_reduce},
      {CollectiveKind::kAllGather, "all_gather", false, &all_gather_counts, &ring_share},
      {CollectiveKind::kReduceScatter, "reduce_scatter", true, &reduce_scatter_counts, &ring_share},
      {CollectiveKind::kBroadcast, "broadcast", false, &whole_buffer, &one},
      {CollectiveKind::kAllToAll, "all_to_all", false, &all_to_all_counts, &ring_share},
      {CollectiveKind::kSendRecv, "send_recv", false, &whole_buffer, &one},
  };
  return table;
}

const CollectiveInfo* find_collective(std::string_view name) {
  for (const CollectiveInfo& info : collective_table()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

const CollectiveInfo& collective(CollectiveKind kind) {
  return collective_table().at(static_cast<std::size_t>(kind));
}

double algbw_gbps(std::uint64_t bytes, double seconds) {
  if (!(seconds > 0)) return 0.0;
  return static_cast<double>(bytes) / seconds / 1e9;
}

}  // namespace shakedown
