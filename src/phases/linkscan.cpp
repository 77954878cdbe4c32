// The link scan (docs/linkscan.md): node pairs tested directly, one rail (the NIC of one local
// rank) at a time, so a slow node, NIC or link is named instead of hiding in a collective's
// number. Per rail: the scan's rounds (fabric/schedule.hpp), then the suspects' retests against
// good partners (fabric/localise.hpp), which every rank plans alike from the first pass's numbers.
// Rank 0 records it all under /linkscan; analysis/linkscan_report.hpp convicts from the file.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>

#include <sched.h>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "fabric/link.hpp"
#include "fabric/localise.hpp"
#include "fabric/rails.hpp"
#include "fabric/schedule.hpp"
#include "phases/gpu.hpp"
#include "phases/phase.hpp"
#include "record/schema.hpp"
#include "runtime/agree.hpp"
#include "runtime/mpi.hpp"
#include "runtime/progress.hpp"

namespace shakedown {

namespace {

// On shared cores the two ends of the pair being measured may land on one CPU: both poll, so
// each waits for the other's time slice (a pair read 0.3 GB/s instead of 20 until the scheduler
// moved one of them, milliseconds later; half of the runs on 6 ranks and 2 cores had such a
// pair). While a pair is measured there, the initiator's thread runs on the first CPU of its
// mask and the partner's on the second; the mask is restored after. (Ranks given different
// masks could still meet on one CPU; with one CPU each, nothing is changed.)
class PairCpu {
 public:
  PairCpu(bool shared_cores, bool initiator) {
    if (!shared_cores || sched_getaffinity(0, sizeof mask_, &mask_) != 0 || CPU_COUNT(&mask_) < 2) {
      return;
    }
    int index = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &mask_) || index++ != (initiator ? 0 : 1)) continue;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      pinned_ = sched_setaffinity(0, sizeof one, &one) == 0;
      break;
    }
  }
  ~PairCpu() {
    if (pinned_) (void)sched_setaffinity(0, sizeof mask_, &mask_);
  }
  PairCpu(const PairCpu&) = delete;
  PairCpu& operator=(const PairCpu&) = delete;

 private:
  cpu_set_t mask_{};
  bool pinned_ = false;
};

// An injected slowdown keeps the rank on its core, polling, as a slow link would (a sleep would
// hand the core to others and change the timing of the pairs after it).
void spin_for(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
  }
}

using fabric::NodePair;
using fabric::Round;

// One tested pair as the scan measured it: filled on its initiator, agreed by a reduction.
struct Measured {
  NodePair pair;
  int pass = 1;
  int round = 0;
  std::vector<double> bw_GBps;  // per timed window
  double lat_us = kNaN, lat_p99_us = kNaN;
  std::string transport;  // on its initiator, then on rank 0
};

// The ranks standing for the nodes on one rail: scan position i is node nodes[i], rank ranks[i].
struct Rail {
  int index = 0;
  std::vector<int> nodes, ranks;
  std::vector<std::string> devices;  // UCX_NET_DEVICES per position ("" = UCX's choice)
  std::string net_devices;           // what they were, for the record (fabric::describe_devices)
  int position_of(int rank) const {
    const auto it = std::find(ranks.begin(), ranks.end(), rank);
    return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
  }
};

fabric::PairResult result_of(const Measured& m) {
  return {m.pair, median(m.bw_GBps), m.lat_us};
}

std::vector<fabric::PairResult> results_of(const std::vector<Measured>& measured) {
  std::vector<fabric::PairResult> out;
  out.reserve(measured.size());
  for (const Measured& m : measured) out.push_back(result_of(m));
  return out;
}

class LinkscanRun {
 public:
  LinkscanRun(PhaseEnv& env, fabric::Link& link, bool shared_cores)
      : env_(env),
        ctx_(env.ctx),
        cfg_(env.config.linkscan),
        link_(link),
        shared_cores_(shared_cores) {}

  // How many times slower a transfer between nodes x and y is made by --inject.
  double factor(int node_x, int node_y) const {
    double f = 1;
    for (const FaultSpec& s : env_.faults.all()) {
      if (s.kind != "slow" || s.phase != "linkscan") continue;
      const bool hit = s.peer_node < 0 ? (s.node == node_x || s.node == node_y)
                                       : fabric::node_pair(node_x, node_y) ==
                                             fabric::node_pair(s.node, s.peer_node);
      if (hit) f = std::max(f, s.factor);
    }
    return f;
  }

  // Runs `rounds` on `rail`; every rank of the world takes each round's barrier.
  std::vector<Measured> run(const Rail& rail, const std::vector<Round>& rounds, int pass,
                            Progress& progress, int step_number, const std::string& label) {
    Watchdog::StepPlan plan;
    plan.total = static_cast<std::int64_t>(rounds.size());
    begin_measured_step(env_, "linkscan", step_number, label, progress, plan);
    std::atomic<std::int64_t>& done = env_.watchdog.progress();
    std::vector<Measured> out;
    const int me = rail.position_of(ctx_.rank());
    for (std::size_t r = 0; r < rounds.size(); ++r) {
      const std::size_t first = out.size();
      for (const NodePair& p : rounds[r]) {
        Measured m;
        m.pair = p;
        m.pass = pass;
        m.round = static_cast<int>(r);
        m.bw_GBps.assign(static_cast<std::size_t>(cfg_.reps), kNaN);
        out.push_back(std::move(m));
      }
      // The round's pairs at once; on shared cores one after another (see shared_cores_).
      const int partner = me < 0 ? -1 : fabric::partner_in(rounds[r], me);
      const std::size_t mine =
          partner < 0 ? rounds[r].size()
                      : static_cast<std::size_t>(std::find(rounds[r].begin(), rounds[r].end(),
                                                           fabric::node_pair(me, partner)) -
                                                 rounds[r].begin());
      const std::size_t turns = shared_cores_ ? rounds[r].size() : 1;
      for (std::size_t turn = 0; turn < turns; ++turn) {
        idle_barrier(ctx_.world());
        if (partner >= 0 && (!shared_cores_ || mine == turn)) {
          measure(rail, me, partner, out[first + mine]);
        }
      }
      done.fetch_add(1, std::memory_order_relaxed);
    }
    // The last pair's idle ranks must not spin in the reduction below while it is measured.
    idle_barrier(ctx_.world());
    combine(out, me, pass < 3);
    return out;
  }

  // Each pair was measured on its initiator (the lower position). The scan's and the retests'
  // numbers go to every rank (each plans the same retests and repeats from them); the repeats'
  // only to rank 0, which records them. Unmeasured entries are -1 (measured ones are positive),
  // so MAX combines them.
  void combine(std::vector<Measured>& pairs, int me, bool everyone) {
    const std::size_t per = static_cast<std::size_t>(cfg_.reps) + 2;
    std::vector<double> v(pairs.size() * per, -1.0);
    std::string mine;  // "index<TAB>transport" per pair this rank measured
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      if (pairs[i].pair.a != me) continue;
      std::copy(pairs[i].bw_GBps.begin(), pairs[i].bw_GBps.end(), v.begin() + i * per);
      v[i * per + per - 2] = pairs[i].lat_us;
      v[i * per + per - 1] = pairs[i].lat_p99_us;
      mine += std::to_string(i) + "\t" + pairs[i].transport + "\n";
    }
    const int count = static_cast<int>(v.size());
    if (everyone) {
      SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v.data(), count, MPI_DOUBLE, MPI_MAX, ctx_.world()));
    } else {
      SD_MPI_CHECK(MPI_Reduce(ctx_.is_root() ? MPI_IN_PLACE : v.data(), v.data(), count, MPI_DOUBLE,
                              MPI_MAX, 0, ctx_.world()));
    }
    const std::vector<std::string> all = gather_strings(ctx_.world(), 0, mine);
    if (!everyone && !ctx_.is_root()) return;
    const auto value = [](double x) { return x < 0 ? kNaN : x; };
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      for (std::size_t k = 0; k < pairs[i].bw_GBps.size(); ++k) {
        pairs[i].bw_GBps[k] = value(v[i * per + k]);
      }
      pairs[i].lat_us = value(v[i * per + per - 2]);
      pairs[i].lat_p99_us = value(v[i * per + per - 1]);
    }
    for (const std::string& text : all) {
      for (std::string_view line : split(text, '\n')) {
        const auto tab = line.find('\t');
        if (tab == std::string_view::npos) continue;
        const auto i = static_cast<std::size_t>(std::stoul(std::string(line.substr(0, tab))));
        if (i < pairs.size()) pairs[i].transport = std::string(line.substr(tab + 1));
      }
    }
  }

  // The rail's header, before its scan: which nodes and ranks, the budget, or why it was not
  // scanned. Each pass's pairs follow as soon as they are measured (record_pass), so a run that
  // stops during the retests keeps the scan, and `passes` says how far the rail got.
  void record_rail(const Rail& rail, int budget, const std::string& skipped) {
    if (!ctx_.is_root()) return;
    const std::string path = schema::linkscan_rail_group(rail.index);
    const std::uint64_t n = rail.nodes.size();
    std::vector<std::int64_t> nodes(rail.nodes.begin(), rail.nodes.end());
    std::vector<std::int64_t> ranks(rail.ranks.begin(), rail.ranks.end());
    transports_.clear();
    env_.recorder.write([&](RunWriter& w) {
      w.batch([&] {
        namespace l = schema::linkscan;
        w.set_attr(path, l::kAttrRail, static_cast<std::int64_t>(rail.index));
        w.set_attr(path, l::kAttrNetDevices, rail.net_devices);
        w.set_attr(path, l::kAttrRetestBudget, static_cast<std::int64_t>(budget));
        w.set_attr(path, l::kAttrTransports, std::string());
        w.set_attr(path, l::kAttrSkipped, skipped);
        w.set_attr(path, l::kAttrPasses, std::int64_t{0});
        w.write_array(path, l::kNodes, nodes, {n});
        w.write_array(path, l::kRanks, ranks, {n});
      });
    });
  }

  // One pass's pairs (1 the scan, 2 the retests, 3 the failed retests again), appended.
  void record_pass(const Rail& rail, const std::vector<Measured>& pairs, int pass) {
    if (!ctx_.is_root()) return;
    const std::string path = schema::linkscan_rail_group(rail.index);
    const std::uint64_t reps = static_cast<std::uint64_t>(cfg_.reps);
    std::vector<std::int64_t> ab, passes, round;
    std::vector<double> bw, lat, p99;
    for (const Measured& m : pairs) {
      ab.push_back(m.pair.a);
      ab.push_back(m.pair.b);
      passes.push_back(m.pass);
      round.push_back(m.round);
      bw.insert(bw.end(), m.bw_GBps.begin(), m.bw_GBps.end());
      lat.push_back(m.lat_us);
      p99.push_back(m.lat_p99_us);
      transports_ += std::to_string(m.pair.a) + "-" + std::to_string(m.pair.b) + ": " +
                     (m.transport.empty() ? "?" : m.transport) + "\n";
    }
    env_.recorder.write([&](RunWriter& w) {
      w.batch([&] {
        namespace l = schema::linkscan;
        if (!pairs.empty()) {
          w.append_rows(path, l::kPairs, ab, {2});
          w.append_rows(path, l::kPass, passes, {});
          w.append_rows(path, l::kRound, round, {});
          w.append_rows(path, l::kBwGBps, bw, {reps});
          w.append_rows(path, l::kLatUs, lat, {});
          w.append_rows(path, l::kLatP99Us, p99, {});
        }
        w.set_attr(path, l::kAttrTransports, transports_);
        w.set_attr(path, l::kAttrPasses, static_cast<std::int64_t>(pass));
      });
    });
  }

 private:
  // This rank's end of one pair: bandwidth windows, then the round trips. The lower position
  // initiates (sends, pings and times); --inject stretches the initiator's windows and round
  // trips (it polls, see spin_for; the other end waits for it).
  void measure(const Rail& rail, int me, int partner, Measured& m) {
    const int peer = rail.ranks[static_cast<std::size_t>(partner)];
    const bool initiator = me < partner;
    const double f = factor(rail.nodes[static_cast<std::size_t>(me)],
                            rail.nodes[static_cast<std::size_t>(partner)]);
    const double bytes =
        static_cast<double>(cfg_.bytes) * cfg_.window * (cfg_.bidirectional ? 2 : 1);
    link_.connect(peer);
    // After connect: a thread the transport starts there must not inherit the one-CPU mask.
    const PairCpu cpu(shared_cores_, initiator);
    for (int i = -cfg_.warmup; i < cfg_.reps; ++i) {
      double t = 0;
      if (cfg_.bidirectional) {
        t = link_.window_both(peer, initiator);
      } else if (initiator) {
        t = link_.window_send(peer);
      } else {
        link_.window_recv(peer);
      }
      if (!initiator) continue;
      if (f > 1) {
        spin_for((f - 1) * t);
        t *= f;
      }
      if (i >= 0) m.bw_GBps[static_cast<std::size_t>(i)] = bytes / t / 1e9;
    }
    std::vector<double> half_us;
    half_us.reserve(static_cast<std::size_t>(cfg_.lat_iters));
    double round_trips_s = 0;
    for (int i = 0; i < cfg_.lat_iters; ++i) {
      if (initiator) {
        const double rtt = link_.ping(peer);
        round_trips_s += rtt;
        half_us.push_back(rtt * f * 1e6 / 2);
      } else {
        link_.pong(peer);
      }
    }
    if (!initiator) return;
    if (f > 1) spin_for((f - 1) * round_trips_s);
    m.lat_us = median(half_us);
    m.lat_p99_us = percentile(half_us, 0.99);
    m.transport = link_.transport_to(peer);
    if (m.transport.empty()) m.transport = link_.kind();
  }

  PhaseEnv& env_;
  const Context& ctx_;
  const LinkscanConfig& cfg_;
  fabric::Link& link_;
  std::string transports_;  // rank 0: the rail's "a-b: transport" lines so far
  // Some host runs more ranks than it has CPUs (pretend nodes, an oversubscribed test): the
  // pairs of a round then take turns, or busy-polling ranks would be timed by the OS scheduler's
  // time slices instead of the link.
  bool shared_cores_ = false;
};

// The rails: one per local rank (auto: each rank on the RDMA device nearest it), local rank 0
// only (first), or one per UCX device given. Collective (auto gathers every rank's device).
std::vector<Rail> plan_rails(const Context& ctx, const RankInfo& self, const LinkscanConfig& cfg) {
  const auto& layout = ctx.layout();
  const std::vector<std::string> nearest =
      cfg.rails == "auto" ? allgather_strings(ctx.world(), fabric::ucx_device_of(self.nic))
                          : std::vector<std::string>{};
  int locals = 0;
  for (int l : layout.local_rank_of_rank) locals = std::max(locals, l + 1);
  std::vector<std::string> devices;
  if (cfg.rails == "first") {
    locals = std::min(locals, 1);
  } else if (cfg.rails != "auto") {
    for (std::string_view d : split(cfg.rails, ',')) devices.emplace_back(trim(d));
    locals = std::min(locals, static_cast<int>(devices.size()));
  }
  std::vector<Rail> rails(static_cast<std::size_t>(locals));
  for (int l = 0; l < locals; ++l) {
    rails[static_cast<std::size_t>(l)].index = l;
    if (!devices.empty())
      rails[static_cast<std::size_t>(l)].net_devices = devices[static_cast<std::size_t>(l)];
  }
  // Node indices are not ordered by rank in general: collect, then order each rail by node.
  for (std::size_t r = 0; r < layout.node_of_rank.size(); ++r) {
    const int l = layout.local_rank_of_rank[r];
    if (l >= locals) continue;
    Rail& rail = rails[static_cast<std::size_t>(l)];
    rail.nodes.push_back(layout.node_of_rank[r]);
    rail.ranks.push_back(static_cast<int>(r));
    rail.devices.push_back(!nearest.empty() ? nearest[r] : rail.net_devices);
  }
  for (Rail& rail : rails) {
    std::vector<std::size_t> order(rail.nodes.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::size_t x, std::size_t y) { return rail.nodes[x] < rail.nodes[y]; });
    std::vector<int> nodes, ranks;
    std::vector<std::string> used;
    for (std::size_t i : order) {
      nodes.push_back(rail.nodes[i]);
      ranks.push_back(rail.ranks[i]);
      used.push_back(rail.devices[i]);
    }
    rail.nodes = std::move(nodes);
    rail.ranks = std::move(ranks);
    rail.devices = std::move(used);
    rail.net_devices = fabric::describe_devices(rail.nodes, rail.devices);
  }
  return rails;
}

}  // namespace

void run_linkscan(PhaseEnv& env) {
  const LinkscanConfig& cfg = env.config.linkscan;
  const Context& ctx = env.ctx;
  env.watchdog.step("linkscan: prepare");
  const std::vector<Rail> rails = plan_rails(ctx, env.self, cfg);
  fabric::LinkOptions options;
  options.bytes = cfg.bytes;
  options.window = cfg.window;
  options.lat_bytes = cfg.lat_bytes;
  options.memory = cfg.memory;
  options.bidirectional = cfg.bidirectional;
  if (cfg.memory != "host") {
    if (cfg.transport != "ucx" && cfg.memory == "cuda") {
      agreed(ctx.world(), [&] {
        throw UsageError(
            "linkscan.memory: cuda needs linkscan.transport: ucx (the MPI transport "
            "sends host memory); use linkscan.memory: host or auto");
      });
    }
    const GpuChoice gpu = choose_gpu(ctx);
    options.cuda_device = gpu.device;
    options.no_gpu_reason = gpu.why_not;
  }
  for (const Rail& rail : rails) {
    const int position = rail.position_of(ctx.rank());
    if (position >= 0) options.net_devices = rail.devices[static_cast<std::size_t>(position)];
  }
  refuse_unreachable_steps(env, "linkscan", 3 * static_cast<long>(rails.size()),
                           "three per rail: the scan, the retests, the failed retests again");
  env.watchdog.step("linkscan: start " + cfg.transport);
  std::unique_ptr<fabric::Link> link = cfg.transport == "ucx"
                                           ? fabric::make_ucx_link(ctx.world(), options)
                                           : fabric::make_mpi_link(ctx.world(), options);
  // One pair at a time when asked, or (auto) when some host runs more ranks than CPUs.
  int oversubscribed =
      ctx.host_local_size() > static_cast<int>(std::thread::hardware_concurrency()) ? 1 : 0;
  SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &oversubscribed, 1, MPI_INT, MPI_MAX, ctx.world()));
  const int shared =
      cfg.concurrent == "false" || (cfg.concurrent == "auto" && oversubscribed != 0) ? 1 : 0;
  // On shared cores a healthy pair reads 10-20% below the best one (the scheduler, not the link:
  // clean runs on 6 pretend nodes convicted pairs at 89% of the best), so the thresholds widen
  // to the straggler rule's shared-cores slowdown; what was applied is recorded.
  const double shared_slowdown = env.config.checks.straggler_slowdown_shared;
  const fabric::Thresholds thresholds =
      oversubscribed != 0 && shared_slowdown < 1
          ? fabric::Thresholds{std::min(cfg.bw_fraction, 1 - shared_slowdown),
                               std::max(cfg.lat_factor, cfg.lat_factor / (1 - shared_slowdown))}
          : fabric::Thresholds{cfg.bw_fraction, cfg.lat_factor};
  env.recorder.write([&](RunWriter& w) {
    namespace l = schema::linkscan;
    const auto g = schema::kLinkscanGroup;
    w.batch([&] {
      w.set_attr(g, l::kAttrTransport, cfg.transport);
      w.set_attr(g, l::kAttrSchedule, cfg.schedule);
      w.set_attr(g, l::kAttrSeed, cfg.seed);
      w.set_attr(g, l::kAttrBytes, static_cast<std::int64_t>(cfg.bytes));
      w.set_attr(g, l::kAttrWindow, static_cast<std::int64_t>(cfg.window));
      w.set_attr(g, l::kAttrReps, static_cast<std::int64_t>(cfg.reps));
      w.set_attr(g, l::kAttrWarmup, static_cast<std::int64_t>(cfg.warmup));
      w.set_attr(g, l::kAttrLatBytes, static_cast<std::int64_t>(cfg.lat_bytes));
      w.set_attr(g, l::kAttrLatIters, static_cast<std::int64_t>(cfg.lat_iters));
      w.set_attr(g, l::kAttrBwFraction, thresholds.bw_fraction);
      w.set_attr(g, l::kAttrLatFactor, thresholds.lat_factor);
      w.set_attr(g, l::kAttrRails, cfg.rails);
      w.set_attr(g, l::kAttrConcurrent, static_cast<std::int64_t>(shared == 0 ? 1 : 0));
      w.set_attr(g, l::kAttrBidirectional, static_cast<std::int64_t>(cfg.bidirectional ? 1 : 0));
      w.set_attr(g, l::kAttrMemory, link->memory());
      w.set_attr(g, l::kAttrMemoryNote,
                 cfg.transport == "ucx" || cfg.memory == "host"
                     ? link->memory_note()
                     : std::string("auto: the MPI transport sends host memory"));
    });
  });
  Progress progress("linkscan", 3 * static_cast<long>(rails.size()), env.progress);
  LinkscanRun scan(env, *link, shared != 0);
  int step_number = 0;
  for (const Rail& rail : rails) {
    const int n = static_cast<int>(rail.nodes.size());
    const int budget = cfg.retest_budget > 0 ? cfg.retest_budget : 4 * n;
    const std::string name = "linkscan rail " + std::to_string(rail.index);
    if (n < 2) {
      // The step numbers stay the same on every rail, scanned or not.
      step_number += 3;
      scan.record_rail(rail, budget,
                       n == 1 ? "one node has a rank on this rail: no pair to test" : "no node");
      continue;
    }
    scan.record_rail(rail, budget, "");
    const std::vector<Round> rounds = fabric::scan_rounds(n, cfg.schedule, cfg.rounds, cfg.seed);
    const std::vector<Measured> pairs = scan.run(rail, rounds, 1, progress, ++step_number, name);
    scan.record_pass(rail, pairs, 1);
    // Every rank plans the same retests from the same numbers.
    const fabric::Judged judged = fabric::judge_pass(n, results_of(pairs), thresholds);
    const fabric::RetestPlan plan = fabric::plan_retests(judged.suspects, 2, budget);
    const std::vector<Measured> retests = scan.run(rail, fabric::pack_rounds(plan.pairs), 2,
                                                   progress, ++step_number, name + " retests");
    scan.record_pass(rail, retests, 2);
    // pack_rounds keeps the plan's order within its rounds: match the results by pair.
    const std::vector<fabric::PairResult> second =
        fabric::results_in_order(plan.pairs, results_of(retests));
    std::vector<NodePair> again;
    for (const std::size_t i :
         fabric::plan_repeats(plan, second, judged.reference, thresholds, budget)) {
      again.push_back(plan.pairs[i]);
    }
    const std::vector<Measured> repeats =
        scan.run(rail, fabric::pack_rounds(again), 3, progress, ++step_number, name + " repeats");
    scan.record_pass(rail, repeats, 3);
  }
  env.watchdog.barrier(ctx.world(), "linkscan: close the endpoints");
}

}  // namespace shakedown
