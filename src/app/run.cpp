// `shakedown run`: the whole pipeline under MPI.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <thread>

#include "analysis/summary.hpp"
#include "app/app.hpp"
#include "app/common.hpp"
#include "config/load.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "phases/phase.hpp"
#include "record/reader.hpp"
#include "record/recorder.hpp"
#include "record/schema.hpp"
#include "runtime/clock.hpp"
#include "runtime/context.hpp"
#include "runtime/inject.hpp"
#include "runtime/mpi.hpp"
#include "runtime/watchdog.hpp"
#include "topology/discovery.hpp"
#include "topology/placement.hpp"

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

// --out, else output.file, else <output.dir>/<UTC timestamp>.h5 with a suffix if that exists.
std::filesystem::path choose_output(const Config& config, const std::string& out) {
  if (!out.empty()) return out;
  if (!config.output.file.empty()) return config.output.file;
  std::filesystem::path dir = config.output.dir;
  const std::string stamp = utc_stamp();
  std::filesystem::path p = dir / (stamp + ".h5");
  for (int i = 2; std::filesystem::exists(p) || std::filesystem::exists(p.string() + ".partial");
       ++i) {
    p = dir / (stamp + "-" + std::to_string(i) + ".h5");
  }
  return p;
}

// Every rank parsed its own copy of the config; a node with a different file (or different
// --set) would make ranks disagree on what to run, so compare against rank 0's.
void check_same_config(const Context& ctx, const std::string& yaml) {
  std::vector<std::string> all = allgather_strings(ctx.world(), yaml);
  for (int r = 1; r < ctx.world_size(); ++r) {
    if (all[static_cast<std::size_t>(r)] != all[0]) {
      throw UsageError("the effective configuration of " + ctx.describe_rank(r) +
                       " differs from rank 0's; every rank must read the same config file and "
                       "options (is the file on a shared file system?)");
    }
  }
}

Config effective_config(const RunOptions& o) {
  std::vector<std::string> sets = o.sets;
  if (o.virtual_nodes) sets.push_back("topology.virtual_nodes=" + std::to_string(*o.virtual_nodes));
  if (!o.phases.empty()) {
    std::string list;
    for (const auto& p : o.phases) list += (list.empty() ? "" : ",") + p;
    sets.push_back("phases=[" + list + "]");
  }
  Config config = load_run_config(o.config_path, sets);
  for (const auto& name : config.phases) {
    if (!find_phase(name)) {
      throw UsageError("phase '" + name +
                       "' is not implemented in this version of shakedown; remove it from "
                       "'phases' (implemented: inventory)");
    }
  }
  return config;
}

// Everything after the output file exists. Errors here may be local to one rank, so the caller
// aborts the whole job with the error's exit code rather than waiting for the others.
void run_pipeline(Context& ctx, const Config& config, const FaultPlan& faults, Recorder& recorder) {
  std::vector<std::string> names;
  for (int r = 0; r < ctx.world_size(); ++r) names.push_back(ctx.describe_rank(r));
  Watchdog watchdog(ctx.world(),
                    {.step_timeout_s = config.timeouts.phase_s,
                     .run_timeout_s = config.timeouts.run_s,
                     .poll_s = 0.02},
                    names, [&](const std::string& reason) { recorder.mark_aborted(reason); });

  watchdog.step("clock sync");
  std::vector<ClockEstimate> clocks = sync_clocks(ctx.world(), kClockRounds);
  ctx.set_clock_offset_us(clocks[static_cast<std::size_t>(ctx.rank())].offset_us);
  recorder.write([&](RunWriter& w) {
    std::vector<double> offset, rtt;
    for (const auto& c : clocks) {
      offset.push_back(c.offset_us);
      rtt.push_back(c.rtt_us);
    }
    w.write_clock(offset, rtt);
  });

  watchdog.step("topology");
  RankInfo mine = discover_rank(ctx.rank(), ctx.node_index(), ctx.local_rank(), ctx.local_size(),
                                ctx.host_local_rank());
  std::vector<RankInfo> ranks = recorder.gather(mine);
  recorder.write([&](RunWriter& w) {
    PlacementOptions opts;
    opts.allow_oversubscribe = config.topology.allow_oversubscribe;
    opts.expected_gpus_per_node = config.topology.expected_gpus_per_node;
    opts.virtual_nodes = ctx.virtual_nodes() > 1;
    w.write_topology(ranks, check_placement(ranks, opts));
  });

  PhaseEnv env{ctx, config, recorder, watchdog, faults};
  for (const auto& name : pipeline_phases()) {
    if (std::find(config.phases.begin(), config.phases.end(), name) == config.phases.end()) {
      continue;
    }
    if (auto stall = faults.find("stall", ctx.rank(), name)) {
      std::fprintf(stderr, "shakedown: inject: %s stalls %.0f s before phase %s\n",
                   ctx.describe_rank(ctx.rank()).c_str(), stall->seconds, name.c_str());
      std::this_thread::sleep_for(std::chrono::duration<double>(stall->seconds));
    }
    watchdog.step("phase " + name);
    find_phase(name)->run(env);
    watchdog.barrier(ctx.world(), "after " + name);
  }
  recorder.finish("complete");
  watchdog.stop();
}

}  // namespace

int run_command(const RunOptions& options, int* argc, char*** argv) {
  const Config config = effective_config(options);
  std::vector<FaultSpec> fault_list;
  for (const auto& spec : options.injects) fault_list.push_back(parse_fault(spec));
  const std::string yaml = to_yaml(config);

  InitGuard guard(config.timeouts.init_s);
  MpiEnvironment mpi(argc, argv);
  Context ctx = Context::create(MPI_COMM_WORLD, config.topology.virtual_nodes);
  check_same_config(ctx, yaml);
  validate_faults(fault_list, ctx.world_size(), config.phases);

  const std::string started = utc_now_iso8601();
  const std::filesystem::path out = bcast_string(
      ctx.world(), 0, ctx.is_root() ? choose_output(config, options.out).string() : "");
  RunMeta meta;
  meta.schema_version = schema::kSchemaVersion;
  meta.shakedown_version = std::string(SHAKEDOWN_VERSION) + "+" + SHAKEDOWN_GIT_HASH;
  meta.command_line = options.command_line;
  meta.config_yaml = yaml;
  meta.started_utc = started;
  meta.status = "running";
  meta.world_size = ctx.world_size();
  meta.node_count = ctx.node_count();
  meta.virtual_nodes = ctx.virtual_nodes();
  meta.backend = "mpi";
  Recorder recorder(ctx, out, meta, config.output.compression);
  guard.disarm();
  if (ctx.is_root()) std::fprintf(stderr, "shakedown: writing %s\n", out.string().c_str());

  try {
    run_pipeline(ctx, config, FaultPlan(fault_list), recorder);
  } catch (const Error& e) {
    // Possibly one rank alone: name it, keep what the file has, and end every rank.
    std::fprintf(stderr, "shakedown: %s: %s\n", ctx.describe_rank(ctx.rank()).c_str(), e.what());
    std::fflush(stderr);
    recorder.mark_aborted(ctx.describe_rank(ctx.rank()) + ": " + e.what());
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(e.code()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shakedown: internal error on %s: %s\n",
                 ctx.describe_rank(ctx.rank()).c_str(), e.what());
    std::fflush(stderr);
    recorder.mark_aborted(ctx.describe_rank(ctx.rank()) + ": internal error: " + e.what());
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(ExitCode::kInternal));
  }

  // The verdict comes from the file alone, exactly as `shakedown summary` computes it.
  int code = 0;
  if (ctx.is_root()) {
    RunFile file = RunFile::open(out);
    Verdict verdict = compute_verdict(file);
    std::cout << format_summary(file, verdict) << std::flush;
    code = static_cast<int>(verdict.code);
  }
  SD_MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, 0, ctx.world()));
  return code;
}

}  // namespace shakedown
