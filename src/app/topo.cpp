// `shakedown topo`: where every rank sits and whether the placement is sound, under mpirun.
#include <iostream>

#include "analysis/reporters/text.hpp"
#include "app/app.hpp"
#include "app/common.hpp"
#include "core/error.hpp"
#include "record/serialize.hpp"
#include "runtime/agree.hpp"
#include "runtime/context.hpp"
#include "runtime/mpi.hpp"
#include "runtime/signals.hpp"
#include "runtime/watchdog.hpp"
#include "topology/network.hpp"

namespace shakedown {

int topo_command(const TopoOptions& options, int* argc, char*** argv) {
  std::vector<std::string> sets = options.sets;
  if (options.virtual_nodes) {
    sets.push_back("topology.virtual_nodes=" + std::to_string(*options.virtual_nodes));
  }
  InitGuard guard(peek_init_timeout(options.config_path, sets));
  MpiEnvironment mpi(argc, argv);
  return report_agreed_errors([&] {
    const SignalWatch signals;
    const Config config =
        agreed(MPI_COMM_WORLD, [&] { return load_run_config(options.config_path, sets); });
    Context ctx = agreed(MPI_COMM_WORLD, [&] {
      return Context::create(MPI_COMM_WORLD, config.topology.virtual_nodes);
    });
    const NetworkMap network =
        agreed(ctx.world(), [&] { return NetworkMap::read(config.topology.blocks); });
    guard.disarm();

    auto watchdog = make_watchdog(ctx, config, nullptr, signals);
    int code = 0;
    run_guarded(ctx, *watchdog, [&] {
      watchdog->step("topology");
      std::vector<RankInfo> ranks = gather_records(ctx.world(), 0, discover_this_rank(ctx));
      if (ctx.is_root()) {
        assign_network(ranks, network);
        std::vector<CheckResult> checks =
            check_placement(ranks, placement_options(ctx, config, &network));
        std::cout << ctx.world_size() << (ctx.world_size() == 1 ? " rank on " : " ranks on ")
                  << ctx.node_count() << (ctx.node_count() == 1 ? " node" : " nodes")
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
    });
    SD_MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, 0, ctx.world()));
    watchdog->stop();
    return code;
  });
}

}  // namespace shakedown
