// The devices phase (docs/devices.md): every device alone, then every pair inside a node, so a
// slow GPU, host memory, PCIe link or NVLink pair is named instead of hiding in a node-level
// collective number. Each rank owns one device (its GPU, or its cores and host memory on the CPU
// path). Memory tests run with the ranks of a node taking turns (alone) and then all at once
// (together); pair copies follow devices/schedule.hpp. Waiting ranks sleep between polls, so
// on shared cores they do not steal the measuring rank's CPU. Rank 0 records it all under
// /devices; analysis/devices_report.hpp judges it from the file.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "devices/device.hpp"
#include "devices/schedule.hpp"
#include "phases/gpu.hpp"
#include "phases/phase.hpp"
#include "record/gather.hpp"
#include "record/schema.hpp"
#include "runtime/agree.hpp"
#include "runtime/progress.hpp"

namespace shakedown {

namespace {

using devices::Device;
using devices::PairMode;
using devices::PairStep;

class DevicesRun {
 public:
  DevicesRun(PhaseEnv& env, Device& device)
      : env_(env),
        ctx_(env.ctx),
        cfg_(env.config.devices),
        device_(device),
        slow_(env.faults.find("slow", env.ctx.rank(), "devices")) {}

  // One timed trial of `fn`, slowed by an injected fault when this rank (or, for a pair copy,
  // its source) carries one: sleeping, so ranks sharing its cores lose nothing.
  template <class Fn>
  double trial(Fn fn, double factor) {
    double t = fn();
    if (factor > 1) {
      std::this_thread::sleep_for(std::chrono::duration<double>((factor - 1) * t));
      t *= factor;
    }
    return t;
  }

  // Wall seconds of `fn` (a trial's own figure may count one copy of several it makes).
  template <class Fn>
  static double wall_s(Fn fn) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // The ETA under --progress, on rank 0 only, before the phase's Progress starts: one run of
  // each memory test (the second of two: the first pays for first touches and loading kernels)
  // feeds devices::estimate_steps; the pair copy's first guess is the memory copy's rate (a
  // copy reads and writes each byte), replaced by a probe once the pair buffers are open
  // (replan_pairs). Empty when there is no progress line.
  std::vector<double> plan_progress() {
    if (!ctx_.is_root() || !env_.progress) return {};
    devices::StepModel model;
    for (std::size_t t = 0; t < device_.tests().size(); ++t) {
      device_.run(t);
      model.test_run_s.push_back(wall_s([&] { device_.run(t); }));
    }
    // The world's gathers make every node wait for the one with the most ranks.
    const auto& locals = ctx_.layout().local_rank_of_rank;
    model.devices = locals.empty() ? 1 : *std::max_element(locals.begin(), locals.end()) + 1;
    model.pairs = cfg_.pairs;
    model.warmup = cfg_.warmup;
    model.trials = cfg_.trials;
    model.shared = device_.kind() == "cpu";
    model.pair_copy_s = kNaN;
    if (!model.test_run_s.empty() && model.test_run_s[0] > 0) {
      const double rate = device_.tests()[0].bytes / model.test_run_s[0];
      model.pair_copy_s = device_.copies_per_trial() * 2 * device_.pair_bytes() / rate;
    }
    std::vector<double> plan = devices::estimate_steps(model);
    model_ = std::move(model);
    return plan;
  }

  // Once the memory tests are over: the wait at a node barrier, fitted to how long their
  // measuring took (the model is linear in it; on shared cores it is milliseconds, not the
  // default 0.1), and the pair copy as probed; the pair steps are planned with both.
  void replan_pairs(Progress& progress, double pair_copy_s) {
    const auto tests = static_cast<std::ptrdiff_t>(model_->test_run_s.size());
    const auto memory_s = [&](double per_trial_s) {
      devices::StepModel m = *model_;
      m.per_trial_s = per_trial_s;
      const std::vector<double> steps = devices::estimate_steps(m);
      return std::accumulate(steps.begin(), steps.begin() + tests, 0.0);
    };
    const double work = memory_s(0), barriers = memory_s(1) - work;
    if (barriers > 0 && memory_measured_s_ > work) {
      model_->per_trial_s = (memory_measured_s_ - work) / barriers;
    }
    if (std::isfinite(pair_copy_s)) model_->pair_copy_s = pair_copy_s;
    progress.plan(devices::estimate_steps(*model_));
  }

  double my_factor() const { return slow_ ? slow_->factor : 1.0; }
  double factor_of(int rank) const {
    const auto f = env_.faults.find("slow", rank, "devices");
    return f ? f->factor : 1.0;
  }

  void memory(Progress& progress, int& step_number) {
    const auto& tests = device_.tests();
    const int trials = cfg_.trials;
    // Pretend nodes share one host's memory and cores: their turns are the host's (over the
    // world, as many as the fullest host has ranks), or "alone" would run every pretend node's
    // device at once (4 pretend nodes read 7 GB/s "alone", 2 read 18-28).
    const bool by_host = ctx_.virtual_nodes() > 0;
    int turns = by_host ? ctx_.host_local_size() : ctx_.local_size();
    if (by_host) {
      SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &turns, 1, MPI_INT, MPI_MAX, ctx_.world()));
    }
    const int mine = by_host ? ctx_.host_local_rank() : ctx_.local_rank();
    const MPI_Comm turn_comm = by_host ? ctx_.world() : ctx_.node();
    for (std::size_t t = 0; t < tests.size(); ++t) {
      const std::string label = "devices " + tests[t].name;
      Watchdog::StepPlan plan;
      plan.total = 2L * trials + cfg_.warmup;  // alone (timed trials), then together
      begin_measured_step(env_, "devices", ++step_number, label, progress, plan);
      std::atomic<std::int64_t>& done = env_.watchdog.progress();
      const auto started = std::chrono::steady_clock::now();
      std::vector<double> alone(static_cast<std::size_t>(trials), kNaN);
      std::vector<double> together(static_cast<std::size_t>(trials), kNaN);
      const double bytes = tests[t].bytes;
      // Alone: the node's ranks take turns (the host's, with pretend nodes).
      for (int turn = 0; turn < turns; ++turn) {
        idle_barrier(turn_comm);
        if (turn != mine) continue;
        for (int w = 0; w < cfg_.warmup; ++w) device_.run(t);
        for (int i = 0; i < trials; ++i) {
          alone[static_cast<std::size_t>(i)] =
              bytes / trial([&] { return device_.run(t); }, my_factor()) / 1e9;
          done.fetch_add(1, std::memory_order_relaxed);
        }
      }
      // The host's last turn ends before any pretend node starts its together trials (their
      // node barriers would not wait for it).
      if (by_host) idle_barrier(turn_comm);
      // Together: every trial starts at a node barrier.
      for (int i = -cfg_.warmup; i < trials; ++i) {
        idle_barrier(ctx_.node());
        const double s = trial([&] { return device_.run(t); }, my_factor());
        if (i >= 0) together[static_cast<std::size_t>(i)] = bytes / s / 1e9;
        done.fetch_add(1, std::memory_order_relaxed);
      }
      memory_measured_s_ +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      record_memory(tests[t], alone, together);
    }
  }

  void record_memory(const devices::MemoryTest& test, const std::vector<double>& alone,
                     const std::vector<double>& together) {
    env_.watchdog.step("devices " + test.name + ": gather");
    const std::vector<double> a = gather_rows<double>(ctx_.world(), 0, alone);
    const std::vector<double> g = gather_rows<double>(ctx_.world(), 0, together);
    if (!ctx_.is_root()) return;
    const std::string path = schema::devices_memory_group(test.name);
    const auto trials = static_cast<std::uint64_t>(cfg_.trials);
    const auto world = static_cast<std::uint64_t>(ctx_.world_size());
    env_.recorder.write([&](RunWriter& w) {
      w.batch([&] {
        w.set_attr(path, schema::devices::kAttrBytesCounted, test.bytes);
        w.set_attr(path, schema::devices::kAttrCounted, test.counted);
        w.write_array(path, schema::devices::kAloneGBps, a, {trials, world});
        w.write_array(path, schema::devices::kTogetherGBps, g, {trials, world});
      });
    });
  }

  void device_facts() {
    env_.watchdog.step("devices: memory and links");
    std::vector<devices::LinkState> links = device_.links_under_load();
    devices::LinkState link = links.empty() ? devices::LinkState{} : links.front();
    // The rank's NIC (topology's nearest) on the same bus: NICs keep their trained speed without
    // traffic, so it is read here, once per rank (ranks sharing a NIC read the same link).
    const std::string nic_bus = devices::nic_pci_bus_id(sysfs_root(), env_.self.nic);
    const devices::LinkState nic =
        nic_bus.empty() ? devices::LinkState{}
                        : devices::read_pcie_link(sysfs_root(), nic_bus, "NIC " + env_.self.nic);
    constexpr std::size_t kFacts = 10;
    const double mine[kFacts] = {device_.free_bytes(), device_.total_bytes(), link.current_gts,
                                 link.max_gts,         link.current_width,    link.max_width,
                                 nic.current_gts,      nic.max_gts,           nic.current_width,
                                 nic.max_width};
    std::vector<double> all(ctx_.is_root() ? kFacts * static_cast<std::size_t>(ctx_.world_size())
                                           : 0);
    SD_MPI_CHECK(
        MPI_Gather(mine, kFacts, MPI_DOUBLE, all.data(), kFacts, MPI_DOUBLE, 0, ctx_.world()));
    if (!ctx_.is_root()) return;
    const auto world = static_cast<std::size_t>(ctx_.world_size());
    std::vector<std::vector<double>> columns(kFacts, std::vector<double>(world));
    for (std::size_t r = 0; r < world; ++r) {
      for (std::size_t k = 0; k < kFacts; ++k) columns[k][r] = all[r * kFacts + k];
    }
    const auto any_read = [](const std::vector<double>& v) {
      return std::any_of(v.begin(), v.end(), [](double x) { return !std::isnan(x); });
    };
    const std::uint64_t w64 = world;
    env_.recorder.write([&](RunWriter& w) {
      w.batch([&] {
        namespace d = schema::devices;
        w.write_array(schema::kDevicesGroup, d::kFreeBytes, columns[0], {w64});
        w.write_array(schema::kDevicesGroup, d::kTotalBytes, columns[1], {w64});
        if (any_read(columns[2])) {
          w.write_array(schema::kDevicesGroup, d::kPcieCurrentGTs, columns[2], {w64});
          w.write_array(schema::kDevicesGroup, d::kPcieMaxGTs, columns[3], {w64});
          w.write_array(schema::kDevicesGroup, d::kPcieCurrentWidth, columns[4], {w64});
          w.write_array(schema::kDevicesGroup, d::kPcieMaxWidth, columns[5], {w64});
        }
        if (any_read(columns[6])) {
          w.write_array(schema::kDevicesGroup, d::kNicPcieCurrentGTs, columns[6], {w64});
          w.write_array(schema::kDevicesGroup, d::kNicPcieMaxGTs, columns[7], {w64});
          w.write_array(schema::kDevicesGroup, d::kNicPcieCurrentWidth, columns[8], {w64});
          w.write_array(schema::kDevicesGroup, d::kNicPcieMaxWidth, columns[9], {w64});
        }
      });
    });
  }

  // Where sysfs is: "/" on a real host; tests plant a tree of their own.
  static std::string sysfs_root() { return test_override("SHAKEDOWN_TEST_SYSFS_ROOT"); }

  void pairs(Progress& progress, int& step_number) {
    const int g = ctx_.local_size();
    const int local = ctx_.local_rank();
    const int trials = cfg_.trials;
    int g_max = g;
    SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &g_max, 1, MPI_INT, MPI_MAX, ctx_.world()));
    const std::vector<PairStep> schedule = devices::pair_schedule(g, cfg_.pairs);
    // Every rank takes the same world steps, whether its node has pairs or not (nodes may hold
    // different numbers of ranks): only the node collectives inside are skipped.
    env_.watchdog.step("devices: open the pair buffers");
    const std::vector<std::string> refused = agreed(ctx_.world(), [&] {
      return schedule.empty() ? std::vector<std::string>(static_cast<std::size_t>(g))
                              : device_.open_peers(ctx_.node());
    });
    // What this rank measured as the destination: [mode, trial, src], NaN where not measured.
    std::vector<double> mine(static_cast<std::size_t>(devices::kPairModes * trials * g_max), kNaN);
    const auto at = [&](PairMode m, int trial, int src) -> double& {
      return mine[static_cast<std::size_t>((static_cast<int>(m) * trials + trial) * g_max + src)];
    };
    const double bytes = device_.pair_bytes();
    const auto probe = static_cast<std::size_t>(local == 0 ? 1 : 0);
    if (model_) {
      double copy_s = kNaN;
      if (!schedule.empty() && probe < refused.size() && refused[probe].empty()) {
        device_.copy_from(static_cast<int>(probe));
        copy_s = wall_s([&] { device_.copy_from(static_cast<int>(probe)); });
      }
      replan_pairs(progress, copy_s);
    }
    for (int m = 0; m < devices::kPairModes; ++m) {
      const auto mode = static_cast<PairMode>(m);
      long steps_in_mode = 0;
      for (const PairStep& s : schedule) steps_in_mode += s.mode == mode ? 1 : 0;
      Watchdog::StepPlan plan;
      plan.total = steps_in_mode * (cfg_.warmup + trials);
      begin_measured_step(env_, "devices", ++step_number,
                          std::string("devices pairs ") + devices::pair_mode_name(mode), progress,
                          plan);
      std::atomic<std::int64_t>& done = env_.watchdog.progress();
      for (const PairStep& s : schedule) {
        if (s.mode != mode) continue;
        const devices::PairCopy* copy = devices::copy_of(s, local);
        const bool can = copy != nullptr && refused[static_cast<std::size_t>(copy->src)].empty();
        const double factor =
            copy == nullptr ? 1.0 : std::max(my_factor(), factor_of(rank_of_local(copy->src)));
        for (int i = -cfg_.warmup; i < trials; ++i) {
          idle_barrier(ctx_.node());
          if (can) {
            const double t = trial([&] { return device_.copy_from(copy->src); }, factor);
            if (i >= 0) at(mode, i, copy->src) = bytes / t / 1e9;
          }
          done.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
    env_.watchdog.step("devices: close the pair buffers");
    if (!schedule.empty()) device_.close_peers();
    record_pairs(mine, refused, g_max, static_cast<int>(schedule.size()));
  }

  int rank_of_local(int local) const {
    const auto& layout = ctx_.layout();
    for (std::size_t r = 0; r < layout.node_of_rank.size(); ++r) {
      if (layout.node_of_rank[r] == ctx_.node_index() && layout.local_rank_of_rank[r] == local) {
        return static_cast<int>(r);
      }
    }
    return -1;
  }

  void record_pairs(const std::vector<double>& mine, const std::vector<std::string>& refused,
                    int g_max, int steps) {
    env_.watchdog.step("devices pairs: gather");
    const std::vector<double> rows = gather_rows<double>(ctx_.world(), 0, mine);
    std::vector<std::string> why;
    for (std::size_t p = 0; p < refused.size(); ++p) {
      if (p == static_cast<std::size_t>(ctx_.local_rank())) {
        if (!refused[p].empty())
          why.push_back("local rank " + std::to_string(p) + ": " + refused[p]);
      } else if (!refused[p].empty()) {
        why.push_back("local rank " + std::to_string(p) + " -> local rank " +
                      std::to_string(ctx_.local_rank()) + ": " + refused[p]);
      }
    }
    const std::vector<std::string> refusals = gather_strings(ctx_.world(), 0, join(why, "; "));
    const std::vector<std::string> described = gather_strings(ctx_.world(), 0, device_.describe());
    int any_steps = steps;
    SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &any_steps, 1, MPI_INT, MPI_MAX, ctx_.world()));
    if (!ctx_.is_root()) return;
    const auto& layout = ctx_.layout();
    const auto world = static_cast<std::size_t>(ctx_.world_size());
    const auto trials = static_cast<std::size_t>(cfg_.trials);
    const auto gm = static_cast<std::size_t>(g_max);
    for (int node = 0; node < ctx_.node_count(); ++node) {
      std::vector<std::int64_t> ranks;  // by local rank
      for (std::size_t r = 0; r < world; ++r) {
        if (layout.node_of_rank[r] != node) continue;
        const auto l = static_cast<std::size_t>(layout.local_rank_of_rank[r]);
        if (ranks.size() <= l) ranks.resize(l + 1, -1);
        ranks[l] = static_cast<std::int64_t>(r);
      }
      const std::size_t g = ranks.size();
      std::vector<std::string> node_refused;
      std::vector<std::vector<double>> matrices(devices::kPairModes,
                                                std::vector<double>(trials * g * g, kNaN));
      for (std::size_t dst = 0; dst < g; ++dst) {
        const auto r = static_cast<std::size_t>(ranks[dst]);
        if (!refusals[r].empty()) node_refused.push_back(refusals[r]);
        for (std::size_t m = 0; m < matrices.size(); ++m) {
          for (std::size_t i = 0; i < trials; ++i) {
            for (std::size_t src = 0; src < g; ++src) {
              matrices[m][(i * g + src) * g + dst] =
                  rows[((m * trials + i) * gm + src) * world + r];
            }
          }
        }
      }
      const std::string path = schema::devices_node_group(node);
      env_.recorder.write([&](RunWriter& w) {
        w.batch([&] {
          namespace d = schema::devices;
          w.set_attr(path, d::kAttrNode, static_cast<std::int64_t>(node));
          for (std::size_t l = 0; l < g; ++l) {
            w.set_attr(path, d::kAttrDevicePrefix + std::to_string(l),
                       described[static_cast<std::size_t>(ranks[l])]);
          }
          w.set_attr(path, d::kAttrRefused, join(node_refused, "; "));
          const std::uint64_t t64 = trials, g64 = g;
          w.write_array(path, d::kNodeRanks, ranks, {g64});
          if (any_steps > 0) {
            w.write_array(path, d::kUnidirectionalGBps, matrices[0], {t64, g64, g64});
            w.write_array(path, d::kBidirectionalGBps, matrices[1], {t64, g64, g64});
            w.write_array(path, d::kConcurrentGBps, matrices[2], {t64, g64, g64});
          }
        });
      });
    }
  }

 private:
  PhaseEnv& env_;
  const Context& ctx_;
  const DevicesConfig& cfg_;
  Device& device_;
  std::optional<FaultSpec> slow_;
  std::optional<devices::StepModel> model_;  // rank 0 under --progress: the ETA's model
  double memory_measured_s_ = 0;             // the memory tests' steps, their gathers left out
};

}  // namespace

void run_devices(PhaseEnv& env) {
  const DevicesConfig& cfg = env.config.devices;
  const Context& ctx = env.ctx;
  env.watchdog.step("devices: prepare");
  const GpuChoice gpu = choose_gpu(ctx);
  // One rank per GPU (exclusive): two ranks on one GPU would make a "pair" of one device.
  const bool cuda =
      choose_gpu_path(ctx, gpu, "devices.path", cfg.path, "cuda", "cpu", /*exclusive=*/true);
  std::unique_ptr<Device> device = agreed(ctx.world(), [&] {
    if (cuda) {
      use_gpu(gpu.device);
      return devices::make_cuda_device(gpu.device, cfg.bytes, cfg.copy_bytes);
    }
    return devices::make_host_device(cfg.host_bytes, cfg.copy_bytes,
                                     cfg.threads > 0 ? cfg.threads : default_gemm_threads(ctx));
  });
  std::vector<std::string> test_names;
  for (const auto& t : device->tests()) test_names.push_back(t.name);
  const long steps = static_cast<long>(device->tests().size()) + devices::kPairModes;
  refuse_unreachable_steps(env, "devices", steps,
                           "one per memory test (" + join(test_names, ", ") +
                               "), then one per pair mode (unidirectional, bidirectional, "
                               "concurrent)");
  env.recorder.write([&](RunWriter& w) {
    namespace d = schema::devices;
    w.batch([&] {
      w.set_attr(schema::kDevicesGroup, d::kAttrPath, device->kind());
      w.set_attr(schema::kDevicesGroup, d::kAttrTrials, static_cast<std::int64_t>(cfg.trials));
      w.set_attr(schema::kDevicesGroup, d::kAttrWarmup, static_cast<std::int64_t>(cfg.warmup));
      w.set_attr(schema::kDevicesGroup, d::kAttrBytes,
                 static_cast<std::int64_t>(cuda ? cfg.bytes : cfg.host_bytes));
      w.set_attr(schema::kDevicesGroup, d::kAttrCopyBytes,
                 static_cast<std::int64_t>(cfg.copy_bytes));
      w.set_attr(schema::kDevicesGroup, d::kAttrPairs, cfg.pairs);
      w.set_attr(schema::kDevicesGroup, d::kAttrTests, join(test_names, ","));
    });
  });
  DevicesRun run(env, *device);
  const std::vector<double> plan = run.plan_progress();  // its probe before the clock starts
  Progress progress("devices", steps, env.progress);
  progress.plan(plan);
  int step_number = 0;
  run.memory(progress, step_number);
  run.device_facts();
  run.pairs(progress, step_number);
}

}  // namespace shakedown
