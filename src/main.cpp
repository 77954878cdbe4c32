// CLI entry: subcommands, and exceptions -> exit codes. Nothing else.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string_view>

#include "app/app.hpp"
#include "core/error.hpp"
#include "core/host.hpp"
#include "core/strings.hpp"
#include "gemm/blas_kernels.hpp"
#include "runtime/inject.hpp"

namespace {

// The command line as a shell would read it back (quoted where needed), for the record.
std::string join_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + shakedown::shell_quote(argv[i]);
  return s;
}

// A bad command line for `run`, `audit` or `topo` is seen identically by every rank a launcher
// started: only the launcher's rank 0 prints it (MPI is not up yet, so the environment is all there
// is). Every other subcommand runs alone and always prints its own errors, whatever the environment
// says (SLURM_PROCID is set inside any job step).
bool reports_parse_error(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "run" || arg == "topo" || arg == "audit") return shakedown::launcher_rank() == 0;
  }
  return true;
}

// A number from `lo` to `hi`, said plainly: CLI11's Range prints its bounds as 0.000000 or in
// 309 digits, and calls a word "not in range".
CLI::Validator within(double lo, double hi, bool whole) {
  auto text_of = [whole](double x) {
    if (whole) return std::to_string(static_cast<long long>(x));
    std::ostringstream os;
    os << std::setprecision(6) << x;
    return os.str();
  };
  const std::string what = whole ? "a whole number" : "a number";
  const std::string bounds = text_of(lo) + " to " + text_of(hi);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        std::size_t used = 0;
        try {
          v = whole ? static_cast<double>(std::stoll(text, &used)) : std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (text.empty() || used != text.size() || !std::isfinite(v)) {
          return "'" + text + "' is not " + what + " (give " + what + " from " + bounds + ")";
        }
        if (v < lo || v > hi) return text + " is out of range: give " + what + " from " + bounds;
        return std::string();
      },
      std::string(whole ? "INT" : "NUMBER") + " from " + bounds);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shakedown;
  CLI::App app{
      "shakedown: acceptance test for multi-node GPU training clusters.\n"
      "Launch `run` and `topo` with mpirun or srun; `audit` runs under them or alone (a Slurm "
      "prolog); `plan`, `summary`, `compare` and `report` need no MPI.",
      "shakedown"};
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("--version", show_version, "Print version, git hash and compiled backends");

  RunOptions run;
  auto* run_cmd = app.add_subcommand("run", "Run the pipeline and write one HDF5 file");
  // No CLI11 existence check on config files: a file missing on one node must be reported by
  // every rank alike once MPI is up, not kill that rank before it starts.
  run_cmd->add_option("--config", run.config_path,
                      "YAML config (default: built-in = configs/smoke.yaml)");
  run_cmd->add_option("--out", run.out, "Output file (default: <output.dir>/<UTC timestamp>.h5)");
  run_cmd
      ->add_option("--virtual-nodes", run.virtual_nodes,
                   "Split each host's ranks into N pretend nodes")
      ->check(within(0, 4096, true));
  run_cmd
      ->add_option(
          "--phases", run.phases,
          "Comma-separated phases to run (inventory,devices,linkscan,collectives,gemm,train,"
          "checkpoint), in pipeline order")
      ->delimiter(',');
  run_cmd->add_option("--set", run.sets, "Override a config key: key.path=value (repeatable)");
  run_cmd->add_option("--inject", run.injects,
                      "Plant a fault for self-test (repeatable): " + fault_syntax());

  run_cmd
      ->add_option("--report", run.reports,
                   "Also write these reports next to the run file, with its stem: json (.json), "
                   "junit (.junit.xml), prometheus (.prom), text (.txt), html (.html, the page "
                   "with charts); with --baseline also the comparison (.compare.json ...)")
      ->delimiter(',');
  run_cmd->add_option("--baseline", run.baseline,
                      "Compare this run with a baseline run file at its end (as `shakedown "
                      "compare` does): printed after the summary; exit 1 when anything "
                      "regressed beyond noise");

  run_cmd->add_flag("--progress", run.progress,
                    "Show a progress line with ETA on stderr (rank 0). Default: only when stderr "
                    "is a terminal, which it is not under mpirun (it forwards through a pipe)");

  RunOptions audit;
  audit.audit = true;
  auto* audit_cmd = app.add_subcommand(
      "audit",
      "Check every node's set-up (driver, CUDA, NCCL compatibility; drift across nodes; NCCL "
      "settings, GPUDirect RDMA, ACS, governor; GPUs and NICs visible; container), in seconds "
      "and with no timed work. Under mpirun or srun (one rank per node is enough), or alone on "
      "one node as a Slurm prolog. Exit 0 passed, 1 a check failed, 2 bad input, 3 a fault");
  audit_cmd->add_option("--config", audit.config_path,
                        "YAML config: its audit, topology and checks sections (default: built-in)");
  audit_cmd->add_option("--set", audit.sets, "Override a config key: key.path=value (repeatable)");
  audit_cmd
      ->add_option("--virtual-nodes", audit.virtual_nodes,
                   "Split each host's ranks into N pretend nodes")
      ->check(within(0, 4096, true));
  audit_cmd->add_option(
      "--json", audit.json_out,
      "Also write the findings as a JSON report (docs/report-schema.json) to FILE");
  audit_cmd->add_option("--out", audit.out,
                        "Keep the run file (the inventory and findings) as FILE; by default none "
                        "is kept");
  audit_cmd->add_option("--inject", audit.injects,
                        "Self-test: drift:node=N,field=F[,value=V] makes node N record another "
                        "value for an inventory field or fact (repeatable)");

  TopoOptions topo;
  auto* topo_cmd =
      app.add_subcommand("topo", "Print where every rank sits and the placement checks");
  topo_cmd->add_option("--config", topo.config_path, "YAML config");
  topo_cmd->add_option("--virtual-nodes", topo.virtual_nodes, "Pretend nodes per host")
      ->check(within(0, 4096, true));
  topo_cmd->add_option("--set", topo.sets, "Override a config key: key.path=value");

  PlanOptions plan;
  auto* plan_cmd = app.add_subcommand(
      "plan",
      "Print an Open MPI rankfile, mpirun line and srun options for a layout (--nodes, "
      "--ranks-per-node), and/or one GPU's memory budget for a model (--model)");
  plan_cmd->add_option("--nodes", plan.nodes, "Number of nodes")->check(within(1, 1e6, true));
  plan_cmd->add_option("--ranks-per-node", plan.ranks_per_node, "Ranks (GPUs) per node")
      ->check(within(1, 4096, true));
  plan_cmd->add_option("--hosts", plan.hosts_file, "Hostfile (one host per line, Open MPI syntax)")
      ->check(CLI::ExistingFile);
  plan_cmd
      ->add_option("--topology-xml", plan.topology_xml,
                   "Node topology saved with `lstopo --of xml` (default: this machine)")
      ->check(CLI::ExistingFile);
  plan_cmd->add_option("--model", plan.model,
                       "Memory budget for this model: custom, llama2-7b, llama2-70b, gpt3-175b "
                       "(train.model; custom takes its shape from --config / --set train.*)");
  plan_cmd->add_option("--config", plan.config_path, "YAML config whose train section to use")
      ->check(CLI::ExistingFile);
  plan_cmd->add_option("--set", plan.sets, "Override a config key: train.KEY=VALUE");
  plan_cmd->add_option("--layers", plan.layers, "train.layers (cut a preset)");
  plan_cmd->add_option("--tp", plan.tp, "train.tp: tensor-parallel ranks");
  plan_cmd->add_option("--dp", plan.dp, "train.dp: data-parallel replicas");
  plan_cmd->add_option("--zero", plan.zero, "train.zero: 0 or 1 (distributed optimizer)");
  plan_cmd->add_option("--micro-batch", plan.micro_batch, "train.micro_batch");
  plan_cmd->add_option("--seq-len", plan.seq_len,
                       "train.seq_len (default with a preset --model: its own, 4096 or 2048)");
  plan_cmd->add_flag("--sequence-parallel", plan.sequence_parallel, "train.sequence_parallel");
  plan_cmd
      ->add_option("--recompute", plan.recompute,
                   "Activation recomputation: none, selective (default), full")
      ->check(CLI::IsMember({"none", "selective", "full"}));
  plan_cmd->add_option("--gpu", plan.gpu,
                       "Device memory to fit: h100-sxm, h100-nvl, h200-sxm, or a number of GiB");
  auto* inference =
      plan_cmd->add_flag("--inference", plan.inference,
                         "Budget for serving: weights + KV cache (--context, --concurrency)");
  // Inference's own options are refused without --inference, not silently left out.
  plan_cmd->add_option("--context", plan.context, "Inference: tokens of context per sequence")
      ->check(within(1, 1 << 30, true))
      ->needs(inference);
  plan_cmd->add_option("--concurrency", plan.concurrency, "Inference: sequences at once")
      ->check(within(1, 1 << 30, true))
      ->needs(inference);
  plan_cmd
      ->add_option("--weight-bytes", plan.weight_bytes,
                   "Inference: bytes per weight (2 bf16, 1 FP8)")
      ->check(within(0.5, 4.0, false))
      ->needs(inference);
  plan_cmd->add_option("--format", plan.format, "Memory budget as text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));

  SummaryOptions summary;
  auto* summary_cmd = app.add_subcommand(
      "summary",
      "Print the summary of a saved run file, or write it as JSON, JUnit XML or a "
      "Prometheus textfile");
  summary_cmd->add_option("file", summary.path, "RUN.h5")->required();
  summary_cmd->add_flag("--detail", summary.detail,
                        "Also print every size of every sweep, the full inventory and every "
                        "finding (text format)");
  summary_cmd->add_flag("--recompute", summary.recompute,
                        "Ignore the verdict the run stored in the file and recompute it from the "
                        "measurements (with this version's checks)");
  summary_cmd->add_option("--format", summary.format,
                          "text (default), json (docs/report-schema.json), junit (one testcase "
                          "per check) or prometheus (node_exporter textfile)");
  summary_cmd->add_option("-o,--output", summary.out,
                          "Write the report to FILE (whole or not at all) instead of standard "
                          "output");

  CompareCommandOptions compare;
  auto* compare_cmd = app.add_subcommand(
      "compare",
      "Compare two run files (before and after a maintenance): what got slower or faster beyond "
      "noise, per collective and size, per GEMM shape and rank, gathered per node; exit 1 when "
      "anything regressed, 2 when nothing could be judged or a file is not a run");
  compare_cmd->add_option("baseline", compare.baseline, "BASELINE.h5 (before)")->required();
  compare_cmd->add_option("run", compare.run, "RUN.h5 (after)")->required();
  compare_cmd
      ->add_option("--alpha", compare.alpha,
                   "Family-wise false-alarm rate over all items (Bonferroni; default "
                   "0.05)")
      ->check(within(1e-9, 0.5, false));
  compare_cmd
      ->add_option("--min-effect", compare.min_effect,
                   "Smallest change that counts, as a fraction (default 0.05: 5%)")
      ->check(within(0.0, 10.0, false));
  compare_cmd->add_flag("--detail", compare.detail, "Also list every item compared (text format)");
  compare_cmd->add_option("--format", compare.format,
                          "text (default), json (docs/compare-schema.json), junit (one testcase "
                          "per place compared) or prometheus (node_exporter textfile)");
  compare_cmd->add_option("-o,--output", compare.out,
                          "Write the comparison to FILE (whole or not at all) instead of "
                          "standard output");

  ReportOptions report;
  auto* report_cmd = app.add_subcommand(
      "report",
      "Write the HTML report of a run file: one self-contained page with the verdict, checks, "
      "charts of every phase and, with --baseline, the comparison. Exit code: the run's verdict's "
      "(0, 1, 3), or 1 when it passed and regressed against --baseline; 2 bad input, 3 when the "
      "page could not be written");
  report_cmd->add_option("file", report.path, "RUN.h5")->required();
  report_cmd->add_option("--baseline", report.baseline,
                         "BASELINE.h5: add the comparison with it (as `shakedown compare`)");
  report_cmd->add_option("-o,--output", report.out,
                         "The HTML file to write (default: the run file's name with .html)");
  report_cmd->add_option("--alpha", report.alpha, "With --baseline: as for compare (default 0.05)")
      ->check(within(1e-9, 0.5, false));
  report_cmd
      ->add_option("--min-effect", report.min_effect,
                   "With --baseline: as for compare (default 0.05)")
      ->check(within(0.0, 10.0, false));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (reports_parse_error(argc, argv)) {
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
      // The only subcommand that runs GEMMs; before MPI starts: OpenBLAS may have taken slow
      // fallback kernels for this CPU (gemm/blas_kernels.hpp).
      restart_for_blas_kernels(argv);
      run.command_line = join_args(argc, argv);
      return run_command(run, &argc, &argv);
    }
    if (*audit_cmd) {
      audit.command_line = join_args(argc, argv);
      return run_command(audit, &argc, &argv);
    }
    if (*topo_cmd) return topo_command(topo, &argc, &argv);
    if (*plan_cmd) return plan_command(plan);
    if (*summary_cmd) return summary_command(summary);
    if (*compare_cmd) return compare_command(compare);
    if (*report_cmd) return report_command(report);
    std::cerr << app.help() << "A subcommand is required.\n";
    return static_cast<int>(ExitCode::kUsage);
  } catch (const AgreedError& e) {
    // Every rank has it; the rank that agreed to report it does (rank 0 under MPI).
    if (e.reporter()) report_error(e);
    return static_cast<int>(e.code());
  } catch (const Error& e) {
    // This rank's own error: the others may not have it, so this rank says it.
    report_error(e);
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << "shakedown: internal error: " << e.what() << "\n";
    return static_cast<int>(ExitCode::kInternal);
  }
}
