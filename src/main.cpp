// CLI entry: subcommands, and exceptions -> exit codes. Nothing else.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>

#include "app/app.hpp"
#include "core/error.hpp"

namespace {

std::string join_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

std::vector<std::string> split_commas(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::stringstream ss(item);
    std::string part;
    while (std::getline(ss, part, ',')) {
      if (!part.empty()) out.push_back(part);
    }
  }
  return out;
}

// Ranks other than 0 stay quiet about errors every rank hits identically (bad flags, bad config).
bool speaks() {
  return shakedown::launcher_rank() == 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shakedown;
  CLI::App app{
      "shakedown: acceptance test for multi-node GPU training clusters.\n"
      "Launch `run` and `topo` with mpirun or srun; `plan` and `summary` need no MPI.",
      "shakedown"};
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("--version", show_version, "Print version, git hash and compiled backends");

  RunOptions run;
  auto* run_cmd = app.add_subcommand("run", "Run the pipeline and write one HDF5 file");
  run_cmd
      ->add_option("--config", run.config_path,
                   "YAML config (default: built-in = configs/smoke.yaml)")
      ->check(CLI::ExistingFile);
  run_cmd->add_option("--out", run.out, "Output file (default: <output.dir>/<UTC timestamp>.h5)");
  run_cmd
      ->add_option("--virtual-nodes", run.virtual_nodes,
                   "Split each host's ranks into N pretend nodes")
      ->check(CLI::Range(0, 4096));
  std::vector<std::string> phases;
  run_cmd->add_option("--phases", phases,
                      "Comma-separated phases to run (inventory,linkscan,collectives,gemm,train,"
                      "checkpoint), in pipeline order");
  run_cmd->add_option("--set", run.sets, "Override a config key: key.path=value (repeatable)");
  run_cmd->add_option("--inject", run.injects,
                      "Plant a fault for self-test: stall:rank=R,phase=P[,seconds=S]");

  TopoOptions topo;
  auto* topo_cmd =
      app.add_subcommand("topo", "Print where every rank sits and the placement checks");
  topo_cmd->add_option("--config", topo.config_path, "YAML config")->check(CLI::ExistingFile);
  topo_cmd->add_option("--virtual-nodes", topo.virtual_nodes, "Pretend nodes per host")
      ->check(CLI::Range(0, 4096));
  topo_cmd->add_option("--set", topo.sets, "Override a config key: key.path=value");

  PlanOptions plan;
  auto* plan_cmd =
      app.add_subcommand("plan", "Print an Open MPI rankfile, mpirun line and srun options");
  plan_cmd->add_option("--nodes", plan.nodes, "Number of nodes")
      ->required()
      ->check(CLI::PositiveNumber);
  plan_cmd->add_option("--ranks-per-node", plan.ranks_per_node, "Ranks (GPUs) per node")
      ->required()
      ->check(CLI::PositiveNumber);
  plan_cmd->add_option("--hosts", plan.hosts_file, "Hostfile (one host per line, Open MPI syntax)")
      ->check(CLI::ExistingFile);
  plan_cmd
      ->add_option("--topology-xml", plan.topology_xml,
                   "Node topology saved with `lstopo --of xml` (default: this machine)")
      ->check(CLI::ExistingFile);

  std::string summary_path;
  auto* summary_cmd = app.add_subcommand("summary", "Print the summary of a saved run file");
  summary_cmd->add_option("file", summary_path, "RUN.h5")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (speaks()) {
      app.exit(e);
      std::cerr << "Run `shakedown --help` for usage.\n";
    }
    return static_cast<int>(ExitCode::kUsage);
  }

  try {
    if (show_version) {
      std::cout << version_text();
      return 0;
    }
    if (*run_cmd) {
      run.phases = split_commas(phases);
      run.command_line = join_args(argc, argv);
      return run_command(run, &argc, &argv);
    }
    if (*topo_cmd) return topo_command(topo, &argc, &argv);
    if (*plan_cmd) return plan_command(plan);
    if (*summary_cmd) return summary_command(summary_path);
    std::cerr << app.help() << "A subcommand is required.\n";
    return static_cast<int>(ExitCode::kUsage);
  } catch (const Error& e) {
    if (speaks()) std::cerr << "shakedown: error: " << e.what() << "\n";
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << "shakedown: internal error: " << e.what() << "\n";
    return static_cast<int>(ExitCode::kInternal);
  }
}
