#pragma once
// `shakedown plan`: from a node's topology (this machine or a saved hwloc XML) and the wanted
// layout, write the launch that puts every rank on the cores nearest its GPU: an Open MPI 4.1
// rankfile, the equivalent mpirun and srun command lines, and notes. Pure (no MPI, nothing
// launched); every node is assumed to look like the given topology.
#include <string>
#include <vector>

namespace shakedown {

struct PlanRequest {
  int nodes = 1;
  int ranks_per_node = 1;
  std::vector<std::string> hosts;          // empty -> node0..node<N-1>; else exactly `nodes` names
  std::string topology_xml;                // "" -> this machine's hwloc topology
  std::string rankfile_path = "rankfile";  // how the mpirun -rf command names the rankfile
  std::string command = "shakedown run";   // what the launch commands run
};

// Binding of one local rank (the same on every node).
struct LocalBinding {
  int local_rank = 0;
  int gpu = -1;                // GPU used (local_rank % GPUs, PCI bus order), -1 without GPUs
  std::string gpu_pci_bus_id;  // "" without GPUs
  std::string slot;            // rankfile slot, "0:0-5" (package:cores, logical, within package)
  std::string cpus;            // the same cores as OS CPU numbers (all their hardware threads)
  std::string numa;            // NUMA node(s) of those CPUs, "0" or "0,1"
  std::string nic;             // nearest NIC (to the GPU, else to the CPUs), "" none
};

struct Plan {
  std::string rankfile;                 // Open MPI 4.1 syntax: `rank N=host slot=S:C-D`
  std::string mpirun_command;           // --map-by ppr:G:node:PE=C --bind-to core
  std::string mpirun_rankfile_command;  // the same launch bound by the rankfile (-rf)
  std::string srun_options;             // --nodes --ntasks-per-node --cpus-per-task ... --mpi=pmix
  int cores_per_rank = 0;
  std::vector<LocalBinding> bindings;  // one per local rank
  std::vector<std::string> notes;      // what the plan assumed and what to watch
};

// Throws UsageError for impossible requests (nodes or ranks < 1, host count != nodes, duplicate
// hosts, more ranks than cores, or more ranks near a GPU than cores there), naming the fix.
Plan make_plan(const PlanRequest& request);

// Host names from an Open MPI hostfile: "host", "host slots=N [max_slots=M]", '#' comments,
// blank lines. Throws UsageError naming file:line for unreadable files, bad attributes,
// duplicate hosts, or a file without hosts.
std::vector<std::string> read_hostfile(const std::string& path);

}  // namespace shakedown
