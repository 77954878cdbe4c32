#pragma once
// One function per subcommand. Each returns the process exit code; errors are thrown as
// shakedown::Error and mapped to exit codes in main().
#include <optional>
#include <string>
#include <vector>

namespace shakedown {

struct RunOptions {
  std::string config_path;           // "" = built-in defaults (= configs/smoke.yaml)
  std::string out;                   // "" = output.file or <output.dir>/<UTC timestamp>.h5
  std::optional<int> virtual_nodes;  // --virtual-nodes
  std::vector<std::string> phases;   // --phases (split on commas)
  std::vector<std::string> sets;     // --set key.path=value
  std::vector<std::string> injects;  // --inject SPEC
  std::vector<std::string> reports;  // --report json,junit,prometheus,text,html (split on commas)
  std::string baseline;              // --baseline FILE: compare with it at the end ("" none)
  bool progress = false;             // --progress: show it even when stderr is no terminal
  std::string command_line;          // as typed, for the record
  // `shakedown audit`: the inventory phase alone, its file kept only with --out, the summary's
  // checks each on its line, and --json FILE.
  bool audit = false;
  std::string json_out;  // --json FILE ("" none)
};

int run_command(const RunOptions& options, int* argc, char*** argv);

struct TopoOptions {
  std::string config_path;
  std::optional<int> virtual_nodes;
  std::vector<std::string> sets;
};
int topo_command(const TopoOptions& options, int* argc, char*** argv);

struct PlanOptions {
  // Layout: a rankfile, mpirun line and srun options.
  int nodes = 0;
  int ranks_per_node = 0;
  std::string hosts_file;
  std::string topology_xml;
  // Memory budget of one GPU for the train section (the flags become --set train.KEY=VALUE).
  std::string config_path;
  std::vector<std::string> sets;
  std::optional<std::string> model;
  std::optional<int> layers, tp, dp, zero;
  std::optional<long long> micro_batch, seq_len;
  bool sequence_parallel = false;
  std::string recompute = "selective";
  std::string gpu;  // h100-sxm | h100-nvl | h200-sxm | GiB; "" = no device
  bool inference = false;
  long long context = 4096;
  long long concurrency = 1;
  double weight_bytes = 2;
  std::string format = "text";  // text | json
};
int plan_command(const PlanOptions& options);

struct SummaryOptions {
  std::string path;             // RUN.h5
  bool detail = false;          // --detail (text only)
  bool recompute = false;       // --recompute: ignore a stored /analysis
  std::string format = "text";  // --format text|json|junit|prometheus
  std::string out;              // -o FILE; "" standard output
};
// Prints (or writes) the summary of a run file in one of the report formats; returns the
// verdict's exit code.
int summary_command(const SummaryOptions& options);

struct CompareCommandOptions {
  std::string baseline, run;  // BASELINE.h5 RUN.h5
  double alpha = 0.05;
  double min_effect = 0.05;
  bool detail = false;
  std::string format = "text";  // --format text|json|junit|prometheus
  std::string out;              // -o FILE; "" standard output
};
// Prints what changed from the baseline to the run; 1 when anything regressed beyond noise.
int compare_command(const CompareCommandOptions& options);

struct ReportOptions {
  std::string path;      // RUN.h5
  std::string baseline;  // --baseline B.h5 ("" none)
  std::string out;       // -o FILE; "" = RUN.html next to the run file
  double alpha = 0.05, min_effect = 0.05;
};
// Writes the HTML report of a run file (with the comparison against a baseline); returns the
// verdict's exit code, or 1 when the run regressed against the baseline and passed otherwise.
int report_command(const ReportOptions& options);

// "shakedown: error: <message>" (and the details after it) on stderr.
void report_error(const std::exception& e);

// --version text: version, git hash, compiled backends and library versions.
std::string version_text();

}  // namespace shakedown
