// `shakedown plan`: rankfile, mpirun line and srun options for a layout (no MPI needed).
#include <iostream>

#include "app/app.hpp"
#include "topology/plan.hpp"

namespace shakedown {

int plan_command(const PlanOptions& options) {
  PlanRequest request;
  request.nodes = options.nodes;
  request.ranks_per_node = options.ranks_per_node;
  if (!options.hosts_file.empty()) request.hosts = read_hostfile(options.hosts_file);
  request.topology_xml = options.topology_xml;
  Plan plan = make_plan(request);
  std::cout << "# Open MPI rankfile (save as " << request.rankfile_path << ")\n"
            << plan.rankfile << "\n# mpirun with that rankfile\n"
            << plan.mpirun_rankfile_command
            << "\n\n# mpirun, mapping and binding without a rankfile\n"
            << plan.mpirun_command << "\n\n# Slurm (sbatch/srun options)\n"
            << plan.srun_options << "\n";
  if (!plan.notes.empty()) {
    std::cout << "\n# notes\n";
    for (const auto& n : plan.notes) std::cout << "# " << n << "\n";
  }
  return 0;
}

}  // namespace shakedown
