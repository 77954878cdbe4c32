// `shakedown run`: the whole pipeline under MPI.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "analysis/compare.hpp"
#include "analysis/reporters/formats.hpp"
#include "analysis/reporters/summary_text.hpp"
#include "analysis/verdict.hpp"
#include "app/app.hpp"
#include "app/common.hpp"
#include "config/load.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "core/host.hpp"
#include "core/strings.hpp"
#include "phases/phase.hpp"
#include "phases/telemetry.hpp"
#include "record/reader.hpp"
#include "record/recorder.hpp"
#include "record/run_meta.hpp"
#include "record/schema.hpp"
#include "runtime/agree.hpp"
#include "runtime/clock.hpp"
#include "runtime/context.hpp"
#include "runtime/inject.hpp"
#include "runtime/mpi.hpp"
#include "runtime/progress.hpp"
#include "runtime/signals.hpp"
#include "runtime/watchdog.hpp"
#include "topology/network.hpp"
#include "topology/node_facts.hpp"

namespace shakedown {

namespace {

constexpr int kClockRounds = 30;

// "20261130T072652Z": sorts by time and is safe in file names.
std::string utc_stamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// --out, else output.file, else <output.dir>/<UTC timestamp>.h5 with a suffix if that exists;
// under Slurm the job's id is in the name too (<stamp>-job<id>[_<array task>].h5): the jobs of an
// array start in the same second and write to the same folder. An array task is named as Slurm
// names it (%A_%a: the array's job id, then the task), not by its own job id.
std::filesystem::path choose_output(const Config& config, const std::string& out) {
  if (!out.empty()) return out;
  if (!config.output.file.empty()) return config.output.file;
  const std::filesystem::path dir = config.output.dir;
  std::string stamp = utc_stamp();
  auto plain = [](const char* v) {
    return v != nullptr && *v != '\0' &&
           std::string_view(v).find_first_not_of("0123456789") == std::string_view::npos;
  };
  const char* task = std::getenv("SLURM_ARRAY_TASK_ID");
  const char* array_job = std::getenv("SLURM_ARRAY_JOB_ID");
  const char* job = plain(task) && plain(array_job) ? array_job : std::getenv("SLURM_JOB_ID");
  if (plain(job)) stamp += std::string("-job") + job + (plain(task) ? std::string("_") + task : "");
  std::filesystem::path p = dir / (stamp + ".h5");
  for (int i = 2; std::filesystem::exists(p) || std::filesystem::exists(p.string() + ".partial");
       ++i) {
    p = dir / (stamp + "-" + std::to_string(i) + ".h5");
  }
  return p;
}

// --inject drift's field must be one the audit compares: a fixed field or a fact family.
void check_drift_fields(const FaultPlan& faults) {
  for (const FaultSpec& f : faults.all()) {
    if (f.kind != "drift") continue;
    const auto& fixed = inventory_field_names();
    const auto& prefixes = fact_key_prefixes();
    const bool known = std::find(fixed.begin(), fixed.end(), f.field) != fixed.end() ||
                       std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) {
                         return p.ends_with('.')
                                    ? f.field.size() > p.size() && f.field.starts_with(p)
                                    : f.field == p;
                       });
    if (!known) {
      throw UsageError("--inject " + f.text + ": unknown inventory field '" + f.field +
                       "' (fixed fields: " + join(fixed) + "; facts start with " + join(prefixes) +
                       "; shakedown summary --detail lists a run's facts)");
    }
  }
}

std::vector<std::string> implemented_phases() {
  std::vector<std::string> names;
  for (const auto& p : phase_table()) names.push_back(p.name);
  return names;
}

// The config with --virtual-nodes and --phases folded in, checked against what this build runs.
Config effective_config(const RunOptions& o) {
  std::vector<std::string> sets = o.sets;
  if (o.virtual_nodes) sets.push_back("topology.virtual_nodes=" + std::to_string(*o.virtual_nodes));
  // An audit is the inventory alone, whatever phases the config file lists.
  if (o.audit) sets.push_back("phases=[inventory]");
  if (!o.phases.empty()) {
    std::vector<std::string_view> known(pipeline_phases().begin(), pipeline_phases().end());
    for (const auto& name : o.phases) {
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        throw UsageError("--phases: unknown phase \"" + name + "\"" + did_you_mean(name, known) +
                         "; phases: " + join(pipeline_phases()));
      }
    }
    sets.push_back("phases=[" + join(o.phases, ",") + "]");
  }
  Config config = load_run_config(o.config_path, sets);
  for (const auto& name : config.phases) {
    if (!find_phase(name)) {
      throw UsageError("phase '" + name +
                       "' is not implemented in this version of shakedown; remove it from "
                       "'phases' or --phases (implemented: " +
                       join(implemented_phases()) + ")");
    }
  }
  return config;
}

// Every rank parsed its own copy of the config; a node with a different file (or different
// --set) would make ranks disagree on what to run. Throws on the ranks that differ.
void check_same_config(const Context& ctx, const std::string& yaml) {
  const std::string root_yaml = bcast_string(ctx.world(), 0, yaml);
  if (yaml != root_yaml) {
    throw UsageError(
        "its effective configuration differs from rank 0's; every rank must read "
        "the same config file and options (is the file on a shared file system?)");
  }
}

RunMeta make_meta(const Context& ctx, const RunOptions& options, const std::string& yaml) {
  RunMeta meta;
  meta.schema_version = schema::kSchemaVersion;
  meta.shakedown_version = std::string(SHAKEDOWN_VERSION) + "+" + SHAKEDOWN_GIT_HASH;
  // The version names a sanitizer build: its timings are several times slower than a release
  // build's, and the analysis must not hold them to a platform's figures.
  if (std::string_view(SHAKEDOWN_SANITIZERS) != "") {
    meta.shakedown_version += std::string(schema::kSanitizedVersionTag) + SHAKEDOWN_SANITIZERS;
  }
  meta.command_line = options.command_line;
  meta.config_yaml = yaml;
  meta.started_utc = utc_now_iso8601();
  meta.status = schema::kStatusRunning;
  meta.world_size = ctx.world_size();
  meta.node_count = ctx.node_count();
  meta.virtual_nodes = ctx.virtual_nodes();
  meta.backend = "mpi";
  return meta;
}

// What actually ran, per phase: "devices cpu, collectives mpi, gemm cpu, linkscan ucx".
std::string backends_text(const RunAnalysis& a) {
  std::vector<std::string> parts;
  if (a.devices.ran) parts.push_back("devices " + a.devices.path);
  if (a.linkscan.ran) parts.push_back("linkscan " + a.linkscan.transport);
  if (a.collectives.ran) parts.push_back("collectives " + a.collectives.backend);
  if (a.gemm.ran) parts.push_back("gemm " + a.gemm.engine);
  if (a.train.ran) {
    // The host step runs over MPI, the device-resident one over NCCL.
    parts.push_back(std::string("train ") + (a.train.summary.engine == "cpu" ? "mpi+" : "nccl+") +
                    a.train.summary.engine);
  }
  if (a.checkpoint.ran) parts.push_back("checkpoint " + a.checkpoint.summary.api);
  return parts.empty() ? "none" : join(parts, ", ");
}

// The phase in progress ("" between phases), for the abort hook, which may run on the
// watchdog's thread.
class PhaseInProgress {
 public:
  void set(std::string name) {
    std::lock_guard lock(mutex_);
    name_ = std::move(name);
  }
  std::string get() const {
    std::lock_guard lock(mutex_);
    return name_;
  }

 private:
  mutable std::mutex mutex_;
  std::string name_;
};

// Everything after the output file exists. Errors here may be local to one rank; the caller
// hands them to the watchdog, which records them and ends the job. `telemetry` is the caller's,
// so that it outlives a failure thrown out of a phase: the job's end then still collects the
// telemetry of the phase it failed in.
void run_pipeline(Context& ctx, const Config& config, const NetworkMap& network,
                  const FaultPlan& faults, Recorder& recorder, Watchdog& watchdog, bool progress,
                  std::unique_ptr<TelemetryRun>& telemetry, PhaseInProgress& in_progress) {
  watchdog.step("clock sync");
  std::vector<ClockEstimate> clocks = sync_clocks(ctx.world(), kClockRounds);
  ctx.set_clock_offset_us(clocks[static_cast<std::size_t>(ctx.rank())].offset_us);
  watchdog.step("write clock");
  recorder.write([&](RunWriter& w) {
    std::vector<double> offset, rtt;
    for (const auto& c : clocks) {
      offset.push_back(c.offset_us);
      rtt.push_back(c.rtt_us);
    }
    w.write_clock(offset, rtt);
  });

  watchdog.step("topology");
  const RankInfo self = discover_this_rank(ctx);
  std::vector<RankInfo> ranks = recorder.gather(self);
  watchdog.step("write topology");
  recorder.write([&](RunWriter& w) {
    assign_network(ranks, network);
    w.write_topology(ranks, check_placement(ranks, placement_options(ctx, config, &network)));
  });

  const std::vector<int> free_cpus = host_free_cpus(ctx, self);
  recorder.use_free_cpus(free_cpus);  // rank 0 bound to one CPU: its writer thread goes there
  PhaseEnv env{
      ctx,      self,     free_cpus, config,
      recorder, watchdog, faults,    ctx.is_root() && (progress || Progress::terminal()),
  };
  watchdog.step("telemetry start");
  telemetry = std::make_unique<TelemetryRun>(env);
  for (const auto& name : pipeline_phases()) {
    if (std::find(config.phases.begin(), config.phases.end(), name) == config.phases.end()) {
      continue;
    }
    if (auto stall = faults.find("stall", ctx.rank(), name); stall && stall->step == 0) {
      std::fprintf(stderr, "shakedown: inject: %s stalls %.0f s before phase %s\n",
                   ctx.describe_rank(ctx.rank()).c_str(), stall->seconds, name.c_str());
      std::this_thread::sleep_for(std::chrono::duration<double>(stall->seconds));
    }
    watchdog.step("phase " + name);
    in_progress.set(name);
    if (faults.find("fail", ctx.rank(), name)) {
      throw RuntimeFault("inject: planted failure at the start of phase " + name);
    }
    const double started = now_us();
    telemetry->begin_phase(name, started);
    find_phase(name)->run(env);
    const double ended = now_us();
    in_progress.set("");
    release_free_memory();  // what the phase freed, before the next one (core/host.hpp)
    watchdog.barrier(ctx.world(), "after " + name);
    watchdog.step("telemetry of " + name);
    telemetry->record_phase(name, started, ended);
  }
  telemetry.reset();  // every phase recorded: the samplers stop
  // The verdict comes from the file alone, exactly as `shakedown summary` recomputes it, and is
  // stored in /analysis before the file gets its final name.
  watchdog.step("verdict");
  recorder.write([&](RunWriter& w) {
    w.set_status(schema::kStatusComplete);
    const RunAnalysis analysis = analyze(RunFile::open(w.partial_path()));
    w.write_analysis(to_record(analysis.verdict));
    w.set_attr(schema::kRoot, schema::kAttrBackend, backends_text(analysis));
  });
  watchdog.step("finish run file");
  recorder.finish(schema::kStatusComplete);
}

// --report: each format once, in the order given; html (the page, not a summary format) apart.
// A name that is no format is a usage error.
struct Reports {
  std::vector<ReportFormat> formats;
  bool html = false;
};
Reports parse_reports(const std::vector<std::string>& names) {
  Reports out;
  for (const std::string& raw : names) {
    const std::string name(trim(raw));
    if (name.empty()) continue;
    if (name == "html") {
      out.html = true;
      continue;
    }
    const ReportFormat f = format_option(name, "--report", "html");
    if (std::find(out.formats.begin(), out.formats.end(), f) == out.formats.end()) {
      out.formats.push_back(f);
    }
  }
  return out;
}

// --baseline: rank 0 reads it before anything is measured, so a typo, or a baseline that
// measured none of the phases this run compares, costs no run.
void check_baseline(const Context& ctx, const std::string& baseline,
                    const std::filesystem::path& out, const std::vector<std::string>& phases) {
  agreed(ctx.world(), [&] {
    if (!ctx.is_root() || baseline.empty()) return;
    std::error_code ec;
    if (std::filesystem::equivalent(out, baseline, ec)) {
      throw UsageError("--baseline " + baseline + " is the run file this run would write; " +
                       "name another --out");
    }
    const RunFile file = open_run_file(baseline, "--baseline");
    (void)file.meta();
    std::vector<std::string> here, there;
    for (const auto& [phase, group] : compared_phases()) {
      const bool asked = std::find(phases.begin(), phases.end(), phase) != phases.end();
      const bool measured = file.has(group);
      if (asked) here.emplace_back(phase);
      if (measured) there.emplace_back(phase);
      if (asked && measured) return;
    }
    throw UsageError(
        "--baseline " + baseline + " measured " +
        (there.empty() ? std::string("none of the phases compare compares") : join(there, ", ")) +
        ", and this run's phases compared would be " +
        (here.empty() ? std::string("none") : join(here, ", ")) +
        ": nothing in common; name a baseline of the same phases, or run without "
        "--baseline");
  });
}

// --json FILE: rank 0 checks, before anything runs, that the report can be written there (its
// folder exists and is writable, and FILE is no folder), so an audit does not run to fail at
// its last step.
void check_report_path(const Context& ctx, const std::string& path, const std::string& option) {
  agreed(ctx.world(), [&] {
    if (!ctx.is_root() || path.empty()) return;
    const std::filesystem::path p(path);
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      throw UsageError(option + " " + path + " is a folder; name a file (e.g. " +
                       (p / "audit.json").string() + ")");
    }
    const std::filesystem::path dir = p.parent_path().empty() ? "." : p.parent_path();
    if (!std::filesystem::is_directory(dir, ec)) {
      throw UsageError(option + " " + path + ": the folder " + dir.string() +
                       " does not exist; create it or name a file in an existing folder");
    }
    if (::access(dir.c_str(), W_OK) != 0) {
      throw UsageError(option + " " + path + ": the folder " + dir.string() + " is not writable (" +
                       std::strerror(errno) + ")");
    }
  });
}

// RUN.h5 -> RUN<suffix>: RUN.json, RUN.compare.json, RUN.html ...
std::filesystem::path report_path(const std::filesystem::path& out, std::string_view suffix) {
  std::filesystem::path p = out;
  p.replace_extension();
  p += std::string(suffix);
  return p;
}

// Where an audit's run file goes when no --out keeps it: a folder of its own under $TMPDIR (or
// /tmp), removed with the file once the summary is out. ("" on other ranks.)
std::filesystem::path audit_scratch_file() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/shakedown-audit.XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    throw RuntimeFault("audit: cannot make a scratch folder " + templ + ": " +
                       std::strerror(errno) +
                       "; set TMPDIR to a writable folder or keep the "
                       "file with --out FILE");
  }
  return std::filesystem::path(templ) / "audit.h5";
}

int report_from_file(const Context& ctx, const std::filesystem::path& out, const Reports& reports,
                     const std::string& baseline, const RunOptions& options, bool scratch) {
  if (!ctx.is_root()) return 0;
  const RunFile file = RunFile::open(out);
  const RunAnalysis analysis = analyze_stored(file);
  std::string summary = format_summary(file, analysis, /*detail=*/false);
  if (scratch) {
    // The file goes with the audit: do not name it as if it stayed.
    summary = "shakedown audit (no file kept: --out FILE keeps one)" +
              summary.substr(std::min(summary.find('\n'), summary.size()));
  }
  std::cout << summary << std::flush;
  int code = static_cast<int>(analysis.verdict.code);
  // The run file is complete and named: a report or comparison that cannot be made is said and
  // makes the exit code 3, but takes nothing from the run.
  auto write = [&](const std::string& what, std::string_view suffix, auto&& text) {
    const std::string path = report_path(out, suffix).string();
    try {
      write_report_file(path, text());
      std::fprintf(stderr, "shakedown: wrote the %s %s\n", what.c_str(), path.c_str());
    } catch (const Error& e) {
      report_error(e);
      code = std::max(code, static_cast<int>(ExitCode::kRuntime));
    }
  };
  for (ReportFormat f : reports.formats) {
    write(std::string(format_name(f)) + " report", format_suffix(f),
          [&] { return format_report(f, file, analysis, /*detail=*/false); });
  }
  std::optional<Comparison> comparison;
  if (!baseline.empty()) {
    try {
      comparison = compare_runs(RunFile::open(baseline), file, CompareOptions{});
      std::cout << "\nagainst the baseline " << baseline << ":\n"
                << format_comparison(*comparison, /*detail=*/false) << std::flush;
      // A comparison that judged nothing says so above; the run's own code stands.
      code = std::max(code, comparison->regression_code());
    } catch (const Error& e) {
      // Another schema, no size or shape in common (the phases were checked before the run):
      // no comparison. Said, and the run's own exit code stands: the run itself is whole.
      report_error(e);
      std::fprintf(stderr,
                   "shakedown: no comparison with the baseline; the run is complete in %s "
                   "(its exit code is its verdict's); compare it later with "
                   "`shakedown compare BASELINE.h5 %s`\n",
                   out.c_str(), out.c_str());
    }
  }
  if (comparison) {
    for (ReportFormat f : reports.formats) {
      if (f == ReportFormat::kText) continue;
      write(std::string(format_name(f)) + " comparison", ".compare" + std::string(format_suffix(f)),
            [&] { return format_compare(f, *comparison, /*detail=*/false); });
    }
  }
  if (reports.html) {
    write("HTML report", ".html",
          [&] { return format_html(file, analysis, comparison ? &*comparison : nullptr); });
  }
  if (!options.json_out.empty()) {
    try {
      write_report_file(options.json_out,
                        format_report(ReportFormat::kJson, file, analysis, /*detail=*/false));
      std::fprintf(stderr, "shakedown: wrote the json report %s\n", options.json_out.c_str());
    } catch (const Error& e) {
      report_error(e);
      code = std::max(code, static_cast<int>(ExitCode::kRuntime));
    }
  }
  return code;
}

}  // namespace

int run_command(const RunOptions& options, int* argc, char*** argv) {
  InitGuard guard(peek_init_timeout(options.config_path, options.sets));
  MpiEnvironment mpi(argc, argv);
  return report_agreed_errors([&] {
    // From here a signal is only recorded; the watchdog ends the run with exit 3, file marked.
    const SignalWatch signals;

    // Set-up: each step runs on every rank's own data and fails the same way everywhere.
    const Config config = agreed(MPI_COMM_WORLD, [&] { return effective_config(options); });
    const Reports reports = agreed(MPI_COMM_WORLD, [&] { return parse_reports(options.reports); });
    const FaultPlan faults = agreed(MPI_COMM_WORLD, [&] {
      std::vector<FaultSpec> list;
      for (const auto& spec : options.injects) list.push_back(parse_fault(spec));
      return FaultPlan(std::move(list));
    });
    Context ctx = agreed(MPI_COMM_WORLD, [&] {
      return Context::create(MPI_COMM_WORLD, config.topology.virtual_nodes);
    });
    const std::string yaml = to_yaml(config);
    agreed(ctx.world(), [&] {
      check_same_config(ctx, yaml);
      validate_faults(faults.all(), ctx.world_size(), ctx.node_count(), config.phases);
      check_drift_fields(faults);
    });
    const NetworkMap network =
        agreed(ctx.world(), [&] { return NetworkMap::read(config.topology.blocks); });
    const bool checkpoint =
        std::find(config.phases.begin(), config.phases.end(), "checkpoint") != config.phases.end();
    check_phases(ctx, config, faults);  // what a phase would refuse, refused before the file
    if (checkpoint) agreed(ctx.world(), [&] { check_checkpoint_dir(ctx, config.checkpoint); });
    // An audit keeps its file only when asked to (--out): a Slurm prolog leaves nothing behind.
    const bool scratch = options.audit && options.out.empty();
    std::string chosen;
    agreed(ctx.world(), [&] {
      if (ctx.is_root()) {
        chosen =
            scratch ? audit_scratch_file().string() : choose_output(config, options.out).string();
      }
    });
    const std::filesystem::path out = bcast_string(ctx.world(), 0, chosen);
    if (checkpoint) check_checkpoint_shared(ctx, config.checkpoint, out.parent_path());
    check_baseline(ctx, options.baseline, out, config.phases);
    check_report_path(ctx, options.json_out, "--json");
    Recorder recorder(ctx, out, make_meta(ctx, options, yaml), config.output.compression);
    guard.disarm();
    if (ctx.is_root() && !scratch) {
      std::fprintf(stderr, "shakedown: writing %s\n", out.string().c_str());
    }

    // From here a failure may be one rank's alone: the watchdog records it and ends the job.
    // Its own start fails on every rank alike (its connections between the ranks); the run file
    // then says so rather than "running".
    // An audit that fails keeps its scratch file, the record of why, and says where it is.
    PhaseInProgress in_progress;
    const bool reports_asked =
        !reports.formats.empty() || reports.html || !options.json_out.empty();
    auto abort_run = [&](const std::string& reason) {
      const std::string phase = in_progress.get();
      const bool marked = recorder.mark_aborted(
          phase.empty() ? reason : reason + " (in the " + phase + " phase)", phase);
      if (marked && !scratch && ctx.is_root()) {
        // The job ends now, without its summary: say where the verdict and the drain list are.
        std::fprintf(stderr,
                     "shakedown: the run file %s keeps what completed, marked aborted: "
                     "`shakedown summary %s` gives its verdict and the nodes to drain\n",
                     recorder.final_path().c_str(), recorder.final_path().c_str());
      }
      if (reports_asked && ctx.is_root()) {
        std::fprintf(stderr,
                     "shakedown: no reports written (the run did not finish); make them from its "
                     "file: shakedown summary --format json|junit|prometheus %s\n",
                     recorder.final_path().c_str());
      }
      if (scratch && ctx.is_root()) {
        std::fprintf(stderr,
                     "shakedown: the audit did not finish; its run file is kept at %s "
                     "(`shakedown summary %s`; remove the folder when done)\n",
                     out.c_str(), out.c_str());
      }
    };
    std::unique_ptr<Watchdog> watchdog;
    try {
      watchdog = make_watchdog(ctx, config, abort_run, signals);
    } catch (const Error& e) {
      abort_run(std::string("the watchdog could not start: ") + e.what());
      throw;
    }
    int code = 0;
    std::unique_ptr<TelemetryRun> telemetry;  // ends before the watchdog and the recorder
    run_guarded(ctx, *watchdog, [&] {
      run_pipeline(ctx, config, network, faults, recorder, *watchdog, options.progress, telemetry,
                   in_progress);
      watchdog->step("summary");
      code = report_from_file(ctx, out, reports, options.baseline, options, scratch);
      if (scratch && ctx.is_root()) {
        std::error_code ec;  // the file and the folder the audit made, nothing else
        std::filesystem::remove(out, ec);
        std::filesystem::remove(out.parent_path(), ec);
      }
    });
    SD_MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, 0, ctx.world()));
    watchdog->stop();
    return code;
  });
}

}  // namespace shakedown
