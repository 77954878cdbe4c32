#pragma once
// Where every rank sits: world, node and rail communicators, node index and local rank.
// Node identity comes from MPI_Comm_split_type(SHARED) (one shared-memory domain = one host),
// optionally split further into virtual nodes; never from the hostname.
#include <string>
#include <vector>

#include "runtime/mpi.hpp"

namespace shakedown {

// The layout every rank agrees on, computed from one allgather. Pure data so it can be tested
// without MPI (see compute_layout).
struct Layout {
  std::vector<int> host_of_rank;        // host index (shared-memory domain), ordered by lowest rank
  std::vector<int> node_of_rank;        // node index (host, or virtual node of a host)
  std::vector<int> local_rank_of_rank;  // rank within its node, ordered by world rank
  std::vector<int> host_local_rank_of_rank;  // rank within its host (differs with virtual nodes)
  int host_count = 0;
  int node_count = 0;
  int ranks_per_node = 0;  // 0 when nodes differ in size
};

// `host_leader_of_rank[r]` = lowest world rank sharing rank r's host. `virtual_nodes` <= 1 means
// off. Throws UsageError (the same on every rank) when a host's rank count is not divisible.
// `hostnames` (may be empty) only improve the error message.
Layout compute_layout(const std::vector<int>& host_leader_of_rank, int virtual_nodes,
                      const std::vector<std::string>& hostnames);

class Context {
 public:
  // Collective over `world`. Duplicates `world`, so the caller's communicator is never touched.
  static Context create(MPI_Comm world, int virtual_nodes);

  int rank() const { return rank_; }
  int world_size() const { return static_cast<int>(layout_.node_of_rank.size()); }
  int node_index() const { return layout_.node_of_rank[static_cast<std::size_t>(rank_)]; }
  int local_rank() const { return layout_.local_rank_of_rank[static_cast<std::size_t>(rank_)]; }
  int node_count() const { return layout_.node_count; }
  int host_count() const { return layout_.host_count; }
  int ranks_per_node() const { return layout_.ranks_per_node; }
  int local_size() const { return comm_size(node_.get()); }
  // Index among the ranks of this host: the GPU slot, also with virtual nodes.
  // Ranks sharing this rank's host (all its virtual nodes together).
  int host_local_size() const {
    const int host = layout_.host_of_rank[static_cast<std::size_t>(rank_)];
    int n = 0;
    for (int h : layout_.host_of_rank) n += h == host ? 1 : 0;
    return n;
  }
  int host_local_rank() const {
    return layout_.host_local_rank_of_rank[static_cast<std::size_t>(rank_)];
  }
  // Pretend nodes per host, 0 when nodes are real shared-memory domains.
  int virtual_nodes() const { return virtual_nodes_; }
  bool is_root() const { return rank_ == 0; }

  MPI_Comm world() const { return world_.get(); }
  MPI_Comm node() const { return node_.get(); }  // ranks of this node (intra-node / NVLink)
  MPI_Comm rail() const { return rail_.get(); }  // same local rank on every node (inter-node)

  const Layout& layout() const { return layout_; }
  const std::string& hostname() const { return hostnames_[static_cast<std::size_t>(rank_)]; }
  const std::vector<std::string>& hostnames() const { return hostnames_; }
  // "rank 1 (host vm, node 0)": how messages name a rank.
  std::string describe_rank(int rank) const;

  // Clock offset of this rank against rank 0, in microseconds (set by clock sync).
  double clock_offset_us() const { return clock_offset_us_; }
  void set_clock_offset_us(double v) { clock_offset_us_ = v; }

 private:
  Context() = default;
  int rank_ = 0;
  int virtual_nodes_ = 0;
  CommHandle world_, node_, rail_;
  Layout layout_;
  std::vector<std::string> hostnames_;
  double clock_offset_us_ = 0;
};

}  // namespace shakedown
