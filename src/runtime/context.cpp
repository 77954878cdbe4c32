#include "runtime/context.hpp"

#include <algorithm>
#include <climits>
#include <map>

#include "core/error.hpp"
#include "core/host.hpp"

namespace shakedown {

Layout compute_layout(const std::vector<int>& host_leader_of_rank, int virtual_nodes,
                      const std::vector<std::string>& hostnames) {
  Layout out;
  const std::size_t n = host_leader_of_rank.size();
  // Hosts are numbered by their lowest rank, so numbering is stable and identical on every rank.
  std::map<int, int> host_index_of_leader;
  for (int leader : host_leader_of_rank) host_index_of_leader.emplace(leader, 0);
  int next = 0;
  for (auto& [leader, index] : host_index_of_leader) index = next++;
  out.host_count = next;

  std::vector<int> host_size(static_cast<std::size_t>(out.host_count), 0);
  std::vector<int> host_local(n, 0);
  out.host_of_rank.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    int h = host_index_of_leader.at(host_leader_of_rank[r]);
    out.host_of_rank[r] = h;
    host_local[r] = host_size[static_cast<std::size_t>(h)]++;
  }

  const int v = std::max(virtual_nodes, 1);
  for (int h = 0; h < out.host_count; ++h) {
    int size = host_size[static_cast<std::size_t>(h)];
    if (size % v != 0) {
      int leader = 0;
      for (auto& [l, index] : host_index_of_leader) {
        if (index == h) leader = l;
      }
      std::string host = static_cast<std::size_t>(leader) < hostnames.size()
                             ? hostnames[static_cast<std::size_t>(leader)]
                             : "host " + std::to_string(h);
      throw UsageError("topology.virtual_nodes: " + std::to_string(v) +
                       " pretend nodes do not divide the " + std::to_string(size) + " ranks on " +
                       host + " (ranks from " + std::to_string(leader) +
                       "); launch a multiple of " + std::to_string(v) +
                       " ranks per host or change --virtual-nodes");
    }
  }

  out.node_of_rank.resize(n);
  out.local_rank_of_rank.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    int h = out.host_of_rank[r];
    int per_node = host_size[static_cast<std::size_t>(h)] / v;
    out.node_of_rank[r] = h * v + host_local[r] / per_node;
    out.local_rank_of_rank[r] = host_local[r] % per_node;
  }
  out.node_count = out.host_count * v;
  out.host_local_rank_of_rank = host_local;

  std::vector<int> node_size(static_cast<std::size_t>(out.node_count), 0);
  for (int node : out.node_of_rank) ++node_size[static_cast<std::size_t>(node)];
  bool uniform = std::all_of(node_size.begin(), node_size.end(),
                             [&](int s) { return s == node_size.front(); });
  out.ranks_per_node = uniform && !node_size.empty() ? node_size.front() : 0;
  return out;
}

Context Context::create(MPI_Comm world, int virtual_nodes) {
  Context ctx;
  ctx.world_ = comm_dup(world);
  MPI_Comm w = ctx.world_.get();
  ctx.rank_ = comm_rank(w);
  ctx.virtual_nodes_ = virtual_nodes > 1 ? virtual_nodes : 0;

  // One shared-memory domain per host; its lowest world rank names it.
  MPI_Comm shared = MPI_COMM_NULL;
  SD_MPI_CHECK(MPI_Comm_split_type(w, MPI_COMM_TYPE_SHARED, ctx.rank_, MPI_INFO_NULL, &shared));
  CommHandle shared_handle(shared);
  int leader = ctx.rank_;
  SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shared));
  std::vector<int> leaders(static_cast<std::size_t>(comm_size(w)));
  SD_MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, w));
  ctx.hostnames_ = allgather_strings(w, local_hostname());

  ctx.layout_ = compute_layout(leaders, virtual_nodes, ctx.hostnames_);
  ctx.node_ = comm_split(w, ctx.node_index(), ctx.rank_);
  ctx.rail_ = comm_split(w, ctx.local_rank(), ctx.node_index());
  return ctx;
}

std::string Context::describe_rank(int rank) const {
  if (rank < 0 || rank >= world_size()) return "rank " + std::to_string(rank);
  auto r = static_cast<std::size_t>(rank);
  return "rank " + std::to_string(rank) + " (host " + hostnames_[r] + ", node " +
         std::to_string(layout_.node_of_rank[r]) + (virtual_nodes_ ? " [virtual]" : "") + ")";
}

}  // namespace shakedown
