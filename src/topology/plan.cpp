#include "topology/plan.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "topology/cpu_list.hpp"
#include "topology/discovery.hpp"
#include "topology/hwloc_topology.hpp"
#include "topology/hwloc_util.hpp"

namespace shakedown {

namespace hu = hwloc_util;

namespace {

// The schedulable unit: cores, or PUs on platforms where hwloc reports no Core level.
struct Units {
  std::vector<hwloc_obj_t> objs;  // logical order
  std::vector<int> package;       // logical package index per unit (0 without packages)
  std::vector<int> in_package;    // index of the unit within its package (rankfile core number)
  bool are_cores = true;
  int threads_per_unit = 1;
};

Units collect_units(hwloc_topology_t topo) {
  Units u;
  hwloc_obj_type_t type = HWLOC_OBJ_CORE;
  if (hwloc_get_nbobjs_by_type(topo, type) <= 0) {
    type = HWLOC_OBJ_PU;
    u.are_cores = false;
  }
  std::map<int, int> next_in_package;
  for (hwloc_obj_t o = hwloc_get_next_obj_by_type(topo, type, nullptr); o != nullptr;
       o = hwloc_get_next_obj_by_type(topo, type, o)) {
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, o);
    const int p = pkg != nullptr ? static_cast<int>(pkg->logical_index) : 0;
    u.objs.push_back(o);
    u.package.push_back(p);
    u.in_package.push_back(next_in_package[p]++);
  }
  if (!u.objs.empty() && u.objs.front()->cpuset != nullptr) {
    u.threads_per_unit = std::max(1, hwloc_bitmap_weight(u.objs.front()->cpuset));
  }
  return u;
}

// Ranks that share one CPU locality (a GPU's NUMA node, or a NUMA domain without GPUs).
struct Group {
  std::vector<int> units;  // units inside the locality, logical order
  std::vector<int> ranks;  // local ranks placed there, ascending
  std::string label;       // for messages
  hwloc_const_cpuset_t set = nullptr;
};

std::vector<int> units_in(const Units& u, hwloc_const_cpuset_t set) {
  std::vector<int> ids;
  for (std::size_t i = 0; i < u.objs.size(); ++i) {
    if (set == nullptr || hwloc_bitmap_isincluded(u.objs[i]->cpuset, set))
      ids.push_back(static_cast<int>(i));
  }
  return ids;
}

std::string where_text(hwloc_topology_t topo, hwloc_const_cpuset_t set) {
  const std::string numa = hu::numa_list(topo, set);
  return (numa.empty() ? "" : "NUMA " + numa + ", ") + "CPUs " + hu::list_string(set);
}

// One group per distinct GPU locality; local rank g uses GPU g % gpus (what discover_rank does).
std::vector<Group> gpu_groups(hwloc_topology_t topo, const Units& u,
                              const std::vector<hwloc_obj_t>& gpus, int ranks_per_node) {
  std::vector<Group> groups;
  hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topo);
  for (int g = 0; g < ranks_per_node; ++g) {
    hwloc_obj_t gpu = gpus[static_cast<std::size_t>(g) % gpus.size()];
    hwloc_obj_t loc = hu::locality_of(topo, gpu);
    hwloc_const_cpuset_t set = loc != nullptr && loc->cpuset != nullptr ? loc->cpuset : all;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& grp) {
      return hwloc_bitmap_isequal(grp.set, set) != 0;
    });
    if (it == groups.end()) {
      Group grp;
      grp.set = set;
      grp.units = units_in(u, set);
      grp.label = "the GPU(s) local to " + where_text(topo, set);
      groups.push_back(std::move(grp));
      it = groups.end() - 1;
    }
    it->ranks.push_back(g);
  }
  return groups;
}

// Without GPUs: NUMA domains (else packages, else the machine), ranks spread evenly over them.
std::vector<Group> cpu_groups(hwloc_topology_t topo, const Units& u, int ranks_per_node,
                              std::vector<std::string>& notes) {
  std::vector<hwloc_const_cpuset_t> domains;
  std::string kind;
  for (hwloc_obj_type_t type : {HWLOC_OBJ_NUMANODE, HWLOC_OBJ_PACKAGE}) {
    domains.clear();
    for (hwloc_obj_t o = hwloc_get_next_obj_by_type(topo, type, nullptr); o != nullptr;
         o = hwloc_get_next_obj_by_type(topo, type, o)) {
      // Memory-only NUMA nodes (HBM, CXL) have no cores to bind to.
      if (o->cpuset != nullptr && !units_in(u, o->cpuset).empty() &&
          hwloc_bitmap_intersects(o->cpuset, hwloc_topology_get_topology_cpuset(topo))) {
        domains.push_back(o->cpuset);
      }
    }
    kind = type == HWLOC_OBJ_NUMANODE ? "NUMA node" : "package";
    if (!domains.empty()) break;
  }
  if (domains.empty()) {
    domains.push_back(hwloc_topology_get_topology_cpuset(topo));
    kind = "machine";
  }
  const int d = static_cast<int>(domains.size());
  const int g = ranks_per_node;
  std::vector<Group> groups;
  if (g >= d) {
    // Domain i takes g/d ranks, the first g%d domains one more.
    int next_rank = 0;
    for (int i = 0; i < d; ++i) {
      Group grp;
      grp.set = domains[static_cast<std::size_t>(i)];
      grp.units = units_in(u, grp.set);
      grp.label = kind + " " + where_text(topo, grp.set);
      const int n = g / d + (i < g % d ? 1 : 0);
      for (int k = 0; k < n; ++k) grp.ranks.push_back(next_rank++);
      groups.push_back(std::move(grp));
    }
    notes.push_back("no NVIDIA GPU in the topology: " + std::to_string(g) + " ranks spread over " +
                    std::to_string(d) + " " + kind + "(s)");
  } else {
    // Fewer ranks than domains: each rank gets d/g whole domains; leftovers stay idle so every
    // rank has the same resources.
    const int per = d / g;
    for (int r = 0; r < g; ++r) {
      Group grp;
      for (int k = 0; k < per; ++k) {
        const int domain = r * per + k;
        const auto ids = units_in(u, domains[static_cast<std::size_t>(domain)]);
        grp.units.insert(grp.units.end(), ids.begin(), ids.end());
      }
      grp.label = std::to_string(per) + " " + kind + "(s)";
      grp.ranks.push_back(r);
      groups.push_back(std::move(grp));
    }
    notes.push_back(
        "no NVIDIA GPU in the topology: each of " + std::to_string(g) + " ranks gets " +
        std::to_string(per) + " whole " + kind + "(s)" +
        (d % g != 0 ? "; " + std::to_string(d % g) + " " + kind + "(s) stay idle" : ""));
  }
  return groups;
}

// "0:0-5" or "0:20-23,1:0-3" (Open MPI 4.1 splits the slot at ',' into socket:cores items).
std::string slot_text(const Units& u, const std::vector<int>& ids) {
  std::map<int, std::vector<int>> by_package;
  for (int id : ids) {
    by_package[u.package[static_cast<std::size_t>(id)]].push_back(
        u.in_package[static_cast<std::size_t>(id)]);
  }
  std::string out;
  for (auto& [pkg, cores] : by_package) {
    std::sort(cores.begin(), cores.end());
    for (std::size_t i = 0; i < cores.size();) {
      std::size_t j = i;
      while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
      if (!out.empty()) out += ',';
      out += std::to_string(pkg) + ":" + std::to_string(cores[i]);
      if (j > i) out += "-" + std::to_string(cores[j]);
      i = j + 1;
    }
  }
  return out;
}

void validate(const PlanRequest& req) {
  if (req.nodes < 1) {
    throw UsageError("plan: the number of nodes must be at least 1 (got " +
                     std::to_string(req.nodes) + ")");
  }
  if (req.ranks_per_node < 1) {
    throw UsageError("plan: ranks per node must be at least 1 (got " +
                     std::to_string(req.ranks_per_node) + "); use one rank per GPU on GPU nodes");
  }
  if (!req.hosts.empty() && static_cast<int>(req.hosts.size()) != req.nodes) {
    throw UsageError("plan: " + std::to_string(req.hosts.size()) + " host(s) given for " +
                     std::to_string(req.nodes) +
                     " node(s): give exactly one host per node, or no "
                     "hosts to get placeholders node0..node" +
                     std::to_string(req.nodes - 1));
  }
  std::set<std::string> seen;
  for (const auto& h : req.hosts) {
    if (h.empty() || h.find_first_of(" \t\r\n=") != std::string::npos) {
      throw UsageError("plan: host name '" + h + "' is empty or contains blanks or '='");
    }
    if (!seen.insert(h).second) {
      throw UsageError("plan: host '" + h + "' is listed twice; each node must appear once");
    }
  }
}

}  // namespace

Plan make_plan(const PlanRequest& req) {
  validate(req);
  const HwlocTopology topology = req.topology_xml.empty()
                                     ? HwlocTopology::this_machine()
                                     : HwlocTopology::from_xml_file(req.topology_xml);
  hwloc_topology_t topo = topology.get();
  const std::string source =
      req.topology_xml.empty() ? "this machine" : "'" + req.topology_xml + "'";
  const Units units = collect_units(topo);
  const int n_units = static_cast<int>(units.objs.size());
  const char* unit_word = units.are_cores ? "cores" : "hardware threads";
  const int g = req.ranks_per_node;
  if (g > n_units) {
    throw UsageError(
        "plan: " + std::to_string(g) + " ranks per node but " + source + " has only " +
        std::to_string(n_units) + " " + unit_word +
        ": a plan binds every rank to cores of its own. Use at most " + std::to_string(n_units) +
        " ranks per node, or launch without a plan (mpirun --oversubscribe --bind-to none) "
        "and set topology.allow_oversubscribe");
  }

  Plan plan;
  const auto gpus = hu::nvidia_gpus(topo);
  const int n_gpus = static_cast<int>(gpus.size());
  std::vector<Group> groups =
      n_gpus > 0 ? gpu_groups(topo, units, gpus, g) : cpu_groups(topo, units, g, plan.notes);

  // Smallest localities first, so a locality nested in a larger one keeps its own cores.
  std::vector<std::size_t> order(groups.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return groups[a].units.size() < groups[b].units.size();
  });
  std::vector<bool> taken(units.objs.size(), false);
  int per_rank = n_units;
  for (std::size_t i : order) {
    Group& grp = groups[i];
    std::vector<int> free_units;
    for (int id : grp.units) {
      if (!taken[static_cast<std::size_t>(id)]) free_units.push_back(id);
    }
    for (int id : free_units) taken[static_cast<std::size_t>(id)] = true;
    grp.units = free_units;
    const int share = static_cast<int>(free_units.size()) / static_cast<int>(grp.ranks.size());
    if (share == 0) {
      throw UsageError("plan: " + std::to_string(grp.ranks.size()) + " local ranks would share " +
                       std::to_string(free_units.size()) + " " + unit_word + " near " + grp.label +
                       " in " + source +
                       ": use fewer ranks per node (at most one per GPU is usual)");
    }
    per_rank = std::min(per_rank, share);
  }
  plan.cores_per_rank = per_rank;

  // Every rank gets the same number of cores (a fair benchmark); the rest of a locality idles.
  plan.bindings.resize(static_cast<std::size_t>(g));
  std::vector<std::vector<int>> rank_units(static_cast<std::size_t>(g));
  for (const Group& grp : groups) {
    for (std::size_t k = 0; k < grp.ranks.size(); ++k) {
      const auto first = grp.units.begin() + static_cast<std::ptrdiff_t>(k) * per_rank;
      rank_units[static_cast<std::size_t>(grp.ranks[k])].assign(first, first + per_rank);
    }
  }
  for (int r = 0; r < g; ++r) {
    LocalBinding& b = plan.bindings[static_cast<std::size_t>(r)];
    const auto& ids = rank_units[static_cast<std::size_t>(r)];
    b.local_rank = r;
    if (n_gpus > 0) {
      b.gpu = r % n_gpus;
      b.gpu_pci_bus_id = hu::bus_id_of(gpus[static_cast<std::size_t>(b.gpu)]);
    }
    b.slot = slot_text(units, ids);
    hu::Bitmap cpus;
    for (int id : ids)
      hwloc_bitmap_or(cpus.get(), cpus.get(), units.objs[static_cast<std::size_t>(id)]->cpuset);
    b.cpus = hu::list_string(cpus.get());
    b.numa = hu::numa_list(topo, cpus.get());
    b.nic = nearest_nic(topology, b.gpu_pci_bus_id, b.cpus);
  }

  std::vector<std::string> hosts = req.hosts;
  for (int n = static_cast<int>(hosts.size()); n < req.nodes; ++n)
    hosts.push_back("node" + std::to_string(n));

  const int world = req.nodes * g;
  std::ostringstream rf;
  rf << "# shakedown plan: " << req.nodes << " node(s) x " << g << " rank(s) per node, " << per_rank
     << " " << unit_word << " per rank\n";
  rf << "# Open MPI 4.1 rankfile (mpirun -rf FILE); slot=S:C-D is package S, cores C..D counted\n";
  rf << "# within that package (logical indices, as `lstopo -l` shows them)\n";
  if (n_gpus > 0) {
    rf << "# local rank g uses GPU g % " << n_gpus
       << " (GPUs in PCI bus order) and cores local to it\n";
  } else {
    rf << "# no NVIDIA GPU in the topology: cores split evenly across NUMA domains\n";
  }
  for (int n = 0; n < req.nodes; ++n) {
    for (int r = 0; r < g; ++r) {
      rf << "rank " << n * g + r << "=" << hosts[static_cast<std::size_t>(n)]
         << " slot=" << plan.bindings[static_cast<std::size_t>(r)].slot << "\n";
    }
  }
  plan.rankfile = rf.str();

  std::vector<std::string> host_slots;
  for (const auto& h : hosts) host_slots.push_back(h + ":" + std::to_string(g));
  const std::string host_arg = "--host " + join(host_slots, ",");
  // Local rank g uses GPU g in PCI bus order; CUDA numbers GPUs fastest first unless told, which
  // differs on a node with unlike GPUs. shakedown sets this itself when unset; exporting it
  // keeps every CUDA process of the job in the same order.
  const std::string device_order = n_gpus > 0 ? " -x CUDA_DEVICE_ORDER=PCI_BUS_ID" : "";
  plan.mpirun_command = "mpirun -np " + std::to_string(world) + " " + host_arg + device_order +
                        " --map-by ppr:" + std::to_string(g) +
                        ":node:PE=" + std::to_string(per_rank) +
                        " --bind-to core --report-bindings " + req.command;
  plan.mpirun_rankfile_command = "mpirun -np " + std::to_string(world) + " " + host_arg +
                                 device_order + " -rf " + req.rankfile_path +
                                 " --report-bindings " + req.command;

  // Slurm counts hardware threads as CPUs when ThreadsPerCore > 1.
  const int cpus_per_task = per_rank * (units.are_cores ? units.threads_per_unit : 1);
  plan.srun_options = "--nodes=" + std::to_string(req.nodes) +
                      " --ntasks-per-node=" + std::to_string(g) +
                      " --cpus-per-task=" + std::to_string(cpus_per_task) + " --cpu-bind=cores";
  if (n_gpus > 0) {
    plan.srun_options += " --gpus-per-node=" + std::to_string(std::min(g, n_gpus)) +
                         " --export=ALL,CUDA_DEVICE_ORDER=PCI_BUS_ID";
  }
  plan.srun_options += " --mpi=pmix";
  if (!req.hosts.empty()) plan.srun_options += " --nodelist=" + join(req.hosts, ",");

  // ---- notes ----
  std::vector<std::string>& notes = plan.notes;
  const auto nics = list_nics(topology);
  notes.insert(notes.begin(),
               "topology " + source + ": " +
                   std::to_string(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE)) +
                   " package(s), " +
                   std::to_string(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE)) +
                   " NUMA node(s), " + std::to_string(n_units) + " " + unit_word + " (" +
                   std::to_string(units.threads_per_unit) + " thread(s) each), " +
                   std::to_string(n_gpus) + " NVIDIA GPU(s), " + std::to_string(nics.size()) +
                   " NIC(s); every node is assumed alike");
  for (const auto& b : plan.bindings) {
    std::string line = "local rank " + std::to_string(b.local_rank) + ": ";
    if (b.gpu >= 0) line += "GPU " + std::to_string(b.gpu) + " (" + b.gpu_pci_bus_id + "), ";
    line += "NUMA " + b.numa + ", CPUs " + b.cpus + ", slot " + b.slot;
    if (!b.nic.empty()) line += ", nearest NIC " + b.nic;
    notes.push_back(line);
  }
  if (n_gpus > 0) {
    notes.push_back(
        "GPU g is the g-th GPU in PCI bus order: the commands export "
        "CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA numbers GPUs the same way (its default, "
        "fastest first, differs on nodes with unlike GPUs)");
  }
  if (n_gpus > 0 && g < n_gpus) {
    notes.push_back(std::to_string(g) + " ranks per node use GPUs 0-" + std::to_string(g - 1) +
                    " of " + std::to_string(n_gpus) + "; the other " + std::to_string(n_gpus - g) +
                    " stay idle: run " + std::to_string(n_gpus) +
                    " ranks per node to test every GPU");
  } else if (n_gpus > 0 && g > n_gpus) {
    notes.push_back(std::to_string(g) + " ranks per node share " + std::to_string(n_gpus) +
                    " GPUs (GPU = local rank % " + std::to_string(n_gpus) +
                    "): placement.gpu_unique fails unless topology.allow_oversubscribe is set");
  }
  const int idle = n_units - g * per_rank;
  if (idle > 0) {
    notes.push_back(std::to_string(idle) + " of " + std::to_string(n_units) + " " + unit_word +
                    " stay idle so that every rank gets " + std::to_string(per_rank));
  }
  // mpirun's ppr mapping binds consecutive cores in logical order: say whether that matches.
  bool ppr_matches = true;
  for (int r = 0; r < g && ppr_matches; ++r) {
    const auto& ids = rank_units[static_cast<std::size_t>(r)];
    for (int k = 0; k < per_rank; ++k) {
      if (ids[static_cast<std::size_t>(k)] != r * per_rank + k) ppr_matches = false;
    }
  }
  notes.push_back(ppr_matches
                      ? "the --map-by ppr command binds the same cores as the rankfile"
                      : "the --map-by ppr command binds consecutive cores, which here are NOT the "
                        "cores nearest each GPU: prefer the rankfile command (-rf)");
  notes.push_back(
      "srun: --cpus-per-task counts hardware threads (" + std::to_string(cpus_per_task) + " = " +
      std::to_string(per_rank) + " cores x " + std::to_string(units.threads_per_unit) +
      " threads); Slurm does not pick cores by GPU locality, so inside an allocation the "
      "rankfile command gives the GPU-local binding");
  return plan;
}

std::vector<std::string> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw UsageError("cannot open hostfile '" + path + "': " + std::strerror(errno) +
                     " (expected an Open MPI hostfile: one 'host slots=N' per line)");
  }
  // Open MPI hostfile keys; counts must be positive integers, user names are kept as text.
  static constexpr const char* kCountKeys[] = {
      "slots",           "slot",     "count",    "cpu",    "max_slots",
      "max-slots",       "maxslots", "max_slot", "boards", "sockets_per_board",
      "cores_per_socket"};
  static constexpr const char* kTextKeys[] = {"username", "user", "user_name", "user-name"};
  std::vector<std::string> hosts;
  std::map<std::string, int> first_line;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string where = path + ":" + std::to_string(line_no);
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string host;
    if (!(words >> host)) continue;
    if (host.find('=') != std::string::npos) {
      throw UsageError(where + ": expected a host name first, got '" + host +
                       "' (write 'host slots=N')");
    }
    std::string attr;
    while (words >> attr) {
      const auto eq = attr.find('=');
      const std::string key = attr.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : attr.substr(eq + 1);
      const bool count_key = std::any_of(std::begin(kCountKeys), std::end(kCountKeys),
                                         [&](const char* k) { return key == k; });
      const bool text_key = std::any_of(std::begin(kTextKeys), std::end(kTextKeys),
                                        [&](const char* k) { return key == k; });
      if (eq == std::string::npos || (!count_key && !text_key)) {
        throw UsageError(where + ": unknown attribute '" + attr + "' after host '" + host +
                         "' (Open MPI hostfiles accept slots=N and max_slots=N)");
      }
      if (count_key) {
        int n = 0;
        const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() || n < 1) {
          throw UsageError(where + ": '" + attr + "': " + key + " must be a positive integer");
        }
      } else if (value.empty()) {
        throw UsageError(where + ": '" + attr + "' has no value");
      }
    }
    const auto [it, inserted] = first_line.emplace(host, line_no);
    if (!inserted) {
      throw UsageError(where + ": host '" + host + "' is already listed at line " +
                       std::to_string(it->second) +
                       " (one line per node; put the rank count in slots=N)");
    }
    hosts.push_back(host);
  }
  if (in.bad()) {
    throw UsageError("cannot read hostfile '" + path + "': " + std::strerror(errno));
  }
  if (hosts.empty()) {
    throw UsageError("hostfile '" + path +
                     "' lists no hosts (expected lines like 'node01 slots=8')");
  }
  return hosts;
}

}  // namespace shakedown
