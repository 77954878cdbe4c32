// `shakedown topo`: where every rank sits and whether the placement is sound, under mpirun.
#include <iostream>

#include "analysis/reporters/text.hpp"
#include "app/app.hpp"
#include "app/common.hpp"
#include "core/error.hpp"
#include "record/serialize.hpp"
#include "runtime/context.hpp"
#include "runtime/mpi.hpp"
#include "runtime/watchdog.hpp"
#include "topology/discovery.hpp"
#include "topology/placement.hpp"

namespace shakedown {

int topo_command(const TopoOptions& options, int* argc, char*** argv) {
  std::vector<std::string> sets = options.sets;
  if (options.virtual_nodes) {
    sets.push_back("topology.virtual_nodes=" + std::to_string(*options.virtual_nodes));
  }
  const Config config = load_run_config(options.config_path, sets);

  InitGuard guard(config.timeouts.init_s);
  MpiEnvironment mpi(argc, argv);
  Context ctx = Context::create(MPI_COMM_WORLD, config.topology.virtual_nodes);
  guard.disarm();

  std::vector<std::string> names;
  for (int r = 0; r < ctx.world_size(); ++r) names.push_back(ctx.describe_rank(r));
  Watchdog watchdog(ctx.world(),
                    {.step_timeout_s = config.timeouts.phase_s,
                     .run_timeout_s = config.timeouts.run_s,
                     .poll_s = 0.05},
                    names, nullptr);
  watchdog.step("topology");
  RankInfo mine = discover_rank(ctx.rank(), ctx.node_index(), ctx.local_rank(), ctx.local_size(),
                                ctx.host_local_rank());
  std::vector<RankInfo> ranks = gather_records(ctx.world(), 0, mine);
  int code = 0;
  if (ctx.is_root()) {
    PlacementOptions opts;
    opts.allow_oversubscribe = config.topology.allow_oversubscribe;
    opts.expected_gpus_per_node = config.topology.expected_gpus_per_node;
    opts.virtual_nodes = ctx.virtual_nodes() > 1;
    std::vector<CheckResult> checks = check_placement(ranks, opts);
    std::cout << ctx.world_size() << " ranks on " << ctx.node_count() << " nodes"
              << (ctx.virtual_nodes() > 1
                      ? " (virtual: " + std::to_string(ctx.virtual_nodes()) + " per host)"
                      : "")
              << "\n"
              << format_topology_table(ranks) << "\nplacement checks\n"
              << format_checks(checks) << std::flush;
    for (const auto& c : checks) {
      if (c.status == CheckStatus::kFail) code = static_cast<int>(ExitCode::kCheckFailed);
    }
  }
  SD_MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, 0, ctx.world()));
  watchdog.stop();
  return code;
}

}  // namespace shakedown
