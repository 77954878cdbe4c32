#include "phases/phase.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>

#include "core/error.hpp"
#include "runtime/agree.hpp"
#include "runtime/mpi.hpp"
#include "topology/cpu_list.hpp"
#include "topology/discovery.hpp"

namespace shakedown {

void refuse_unreachable_steps(PhaseEnv& env, const std::string& phase, long steps,
                              const std::string& one_step) {
  refuse_unreachable_steps(env.ctx, env.faults, phase, steps, one_step);
}

void refuse_unreachable_steps(const Context& ctx, const FaultPlan& faults, const std::string& phase,
                              long steps, const std::string& one_step) {
  agreed(ctx.world(), [&] {
    for (const FaultSpec& f : faults.all()) {
      if (f.phase == phase && f.step > steps) {
        throw UsageError("--inject " + f.text + ": the " + phase + " phase has " +
                         std::to_string(steps) + " step(s) (" + one_step + "); use step=1.." +
                         std::to_string(steps) + " or leave step out");
      }
    }
  });
}

std::vector<int> host_free_cpus(const Context& ctx, const RankInfo& self) {
  MPI_Comm host = MPI_COMM_NULL;
  SD_MPI_CHECK(
      MPI_Comm_split_type(ctx.world(), MPI_COMM_TYPE_SHARED, ctx.rank(), MPI_INFO_NULL, &host));
  const CommHandle host_handle(host);
  const std::vector<std::string> bound = allgather_strings(host, self.cpus);
  std::vector<int> out;
  const auto allowed = parse_cpu_list(self.allowed_cpus);
  if (!allowed) return out;
  std::set<int> used;
  for (const std::string& text : bound) {
    const auto cpus = parse_cpu_list(text);
    if (!cpus) return out;  // a rank's binding unknown: nothing is known to be free
    used.insert(cpus->begin(), cpus->end());
  }
  for (int cpu : *allowed) {
    if (used.count(cpu) == 0) out.push_back(cpu);
  }
  return out;
}

std::string test_override(const char* variable) {
  const char* value = std::getenv(variable);
  return value != nullptr ? value : "";
}

void begin_measured_step(PhaseEnv& env, const std::string& phase, int n, const std::string& label,
                         Progress& progress, const Watchdog::StepPlan& plan) {
  if (auto stall = env.faults.find("stall", env.ctx.rank(), phase); stall && stall->step == n) {
    std::fprintf(stderr, "shakedown: inject: %s stalls %.0f s before '%s'\n",
                 env.ctx.describe_rank(env.ctx.rank()).c_str(), stall->seconds, label.c_str());
    std::this_thread::sleep_for(std::chrono::duration<double>(stall->seconds));
  }
  env.watchdog.step(label, env.config.timeouts.phase_s, plan);
  // The progress line shows the label without the phase name in front.
  progress.update(n - 1, label.substr(label.find(' ') + 1));
}

// gemm.threads 0: the CPUs this rank may run on; when it is not bound (it may use the whole
// host), that host's CPUs shared among its ranks, so N ranks do not start N x cores threads.
int default_gemm_threads(const Context& ctx) {
  const auto cpus = parse_cpu_list(bound_cpus());  // topology's reading of the affinity mask
  int allowed = cpus ? static_cast<int>(cpus->size()) : 0;
  const int host = static_cast<int>(std::thread::hardware_concurrency());
  if (allowed <= 0) allowed = std::max(1, host);
  if (allowed >= host) allowed /= std::max(1, ctx.host_local_size());
  return std::max(1, allowed);
}

int tp_group_index(const Context& ctx, int tp) {
  if (tp <= 1) return ctx.rank();
  return ctx.node_index() * (ctx.ranks_per_node() / tp) + ctx.local_rank() / tp;
}

const std::vector<PhaseEntry>& phase_table() {
  static const std::vector<PhaseEntry> kTable = {
      {"inventory", run_inventory},     {"devices", run_devices}, {"linkscan", run_linkscan},
      {"collectives", run_collectives}, {"gemm", run_gemm},       {"train", run_train},
      {"checkpoint", run_checkpoint},
  };
  return kTable;
}

const PhaseEntry* find_phase(const std::string& name) {
  for (const auto& p : phase_table()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace shakedown
