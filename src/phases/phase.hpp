#pragma once
// A phase is a function registered in one table (phases/phase.cpp): name + run function.
// Phases measure, then hand plain per-rank records to the Recorder; they never format output.
#include <functional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "record/recorder.hpp"
#include "runtime/context.hpp"
#include "runtime/inject.hpp"
#include "runtime/progress.hpp"
#include "runtime/watchdog.hpp"
#include "topology/rank_info.hpp"

namespace shakedown {

// What every phase gets. The Context is the one way to reach communicators and placement.
struct PhaseEnv {
  Context& ctx;
  const RankInfo& self;  // where this rank runs (discovered before the phases)
  // The CPUs of this rank's host that no rank is bound to (host_free_cpus): where the telemetry
  // sampler and rank 0's writer thread run, out of the measuring ranks' way.
  const std::vector<int>& free_cpus;
  const Config& config;
  Recorder& recorder;
  Watchdog& watchdog;
  const FaultPlan& faults;
  bool progress;  // rank 0 shows progress lines on stderr
};

struct PhaseEntry {
  std::string name;  // one of pipeline_phases()
  std::function<void(PhaseEnv&)> run;
};

// The CPUs of this rank's host that it may use (the job's cpuset) and that no rank of the host
// is bound to; empty when every allowed CPU has a rank, when the ranks are not bound (each may
// then run anywhere) or when a rank's binding is unknown. Collective over the world.
std::vector<int> host_free_cpus(const Context& ctx, const RankInfo& self);

// What a test names in place of a system file or tree (SHAKEDOWN_TEST_NVML_LIBRARY,
// SHAKEDOWN_TEST_KERNEL_LOG, SHAKEDOWN_TEST_SYSFS_ROOT), or "": the phases read these variables
// here and nowhere else; users never set them.
std::string test_override(const char* variable);

// The phase's n-th measured step (1, 2, ...) begins: plants an injected stall meant for it (the
// --inject stall:...,step=N self-test), then tells the watchdog and the progress line.
// `plan` tells the watchdog how many timed iterations the step counts (with
// env.watchdog.progress()) and, when the phase can tell, how long the step should take.
void begin_measured_step(PhaseEnv& env, const std::string& phase, int n, const std::string& label,
                         Progress& progress, const Watchdog::StepPlan& plan);

// Refuses (UsageError, the same on every rank) an injected fault for a step the phase will
// never reach: it would pass silently. `steps` is how many measured steps the phase has, and
// `one_step` says what one is ("one per GEMM shape").
void refuse_unreachable_steps(PhaseEnv& env, const std::string& phase, long steps,
                              const std::string& one_step);
void refuse_unreachable_steps(const Context& ctx, const FaultPlan& faults, const std::string& phase,
                              long steps, const std::string& one_step);

// What the phases asked for would refuse at their start, refused before the run file exists
// (exit 2, no file, nothing measured): a GPU path forced (devices.path cuda, collectives.backend
// nccl, gemm.engine or train.engine cublaslt) where a rank has no GPU; a training layout that
// does not fit the run (tp, dp, shapes); an --inject step beyond the train or checkpoint
// phase's steps (checked here only: those phases' step counts are the config's). Collective
// over the world; each error is the same on every rank. The GPU paths and the layout are
// checked again when the phases run, with the same functions (they need the results).
void check_phases(const Context& ctx, const Config& config, const FaultPlan& faults);

// The CPU GEMM engine's threads when gemm.threads is 0: the CPUs this rank may run on; when it is
// not bound, its host's CPUs shared among the host's ranks.
int default_gemm_threads(const Context& ctx);

// The index of the rank's TP group of `tp` consecutive local ranks, numbered node by node (the
// rank itself when tp is 1): the train phase's DP replica index, the same on any rank numbering.
int tp_group_index(const Context& ctx, int tp);

// The phases this build implements, in pipeline order.
const std::vector<PhaseEntry>& phase_table();
const PhaseEntry* find_phase(const std::string& name);

// Phase entry points (one file each).
void run_inventory(PhaseEnv& env);
void run_devices(PhaseEnv& env);
void run_linkscan(PhaseEnv& env);
void run_collectives(PhaseEnv& env);
void run_gemm(PhaseEnv& env);
void run_train(PhaseEnv& env);
void run_checkpoint(PhaseEnv& env);

// Before any phase runs, on every rank: checkpoint.dir (when set) exists, is a folder and this
// rank can create in it. Throws UsageError naming the path and the rank.
void check_checkpoint_dir(const Context& ctx, const CheckpointConfig& cfg);
// Then, collectively: every rank sees a file rank 0 creates in the checkpoint folder
// (checkpoint.dir, or `run_dir`, the run file's folder, when it is ""), or the restore on
// another node could not read it. Throws UsageError on every rank naming the first rank and
// host that does not.
void check_checkpoint_shared(const Context& ctx, const CheckpointConfig& cfg,
                             const std::filesystem::path& run_dir);

}  // namespace shakedown
