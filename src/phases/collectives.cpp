// The collectives phase: nccl-tests-style sweeps over scopes (world, intra_node, inter_node, each
// rail alone), collectives, dtypes, reductions, in-place and out-of-place, and sizes. Every rank's
// time and clock-aligned arrival on every iteration is kept; every rank's output is checked
// against values computed from the seed; rank 0 appends one row per size to the run file as soon
// as it is measured, so a run that dies mid-sweep keeps what it measured.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include "comm/collectives.hpp"
#include "comm/comm.hpp"
#include "comm/mpi_comm.hpp"
#include "comm/nccl_comm.hpp"
#include "comm/timed_loop.hpp"
#include "config/load.hpp"
#include "core/host.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "phases/gpu.hpp"
#include "phases/phase.hpp"
#include "record/collective_rows.hpp"
#include "record/gather.hpp"
#include "record/schema.hpp"
#include "runtime/agree.hpp"
#include "runtime/clock.hpp"
#include "runtime/progress.hpp"

namespace shakedown {

namespace {

// Why a size has no timings (the `skipped` column).
// One scope instance: the communicator this rank uses, or none when it sits this one out.
struct ScopeRun {
  std::string name;  // HDF5 / report name: world, intra_node, inter_node, rail_<L>
  double link_GBps;  // configured per-rank rate of the path it exercises, 0 unknown
  Comm* comm;        // nullptr: this rank is idle (other rails)
  int nranks;        // ranks in one instance of the scope (rank 0's view)
  std::string skip;  // non-empty: the scope cannot run here, and why
  // The world ranks that take part (every instance), ascending: the sweeps' columns. From the
  // layout, which every rank holds, so no sweep needs a gather to learn them.
  std::vector<std::int64_t> members;
};

struct Backends {
  std::unique_ptr<Comm> world, node, rail;
};

std::string mode_name(bool in_place) {
  return in_place ? "in_place" : "out_of_place";
}

std::string group_path(const std::string& scope, const CollectiveInfo& info, DType dtype,
                       ReduceOp op, bool in_place) {
  std::string leaf = std::string(dtype_name(dtype));
  if (info.reduces) leaf += "_" + std::string(reduce_op_name(op));
  return schema::sweep_group(scope, info.name, leaf, mode_name(in_place));
}

std::vector<ScopeRun> plan_scopes(const Context& ctx, const CollectivesConfig& cfg, Backends& b) {
  std::vector<ScopeRun> out;
  // From the layout, so every rank plans the same sweeps also when nodes differ in size: rank
  // 0's node size (what the report shows for intra_node), and one rail per local rank any node
  // has, each with the nodes that have that local rank.
  const Layout& layout = ctx.layout();
  int root_local_size = 0;
  std::vector<int> rail_size;
  for (std::size_t r = 0; r < layout.node_of_rank.size(); ++r) {
    if (layout.node_of_rank[r] == layout.node_of_rank[0]) ++root_local_size;
    const auto l = static_cast<std::size_t>(layout.local_rank_of_rank[r]);
    if (rail_size.size() <= l) rail_size.resize(l + 1, 0);
    ++rail_size[l];
  }
  const double intra = cfg.intra_node_link_GBps;
  const double inter = cfg.inter_node_link_GBps;
  std::vector<std::int64_t> everyone(layout.node_of_rank.size());
  for (std::size_t r = 0; r < everyone.size(); ++r) everyone[r] = static_cast<std::int64_t>(r);
  for (const auto& scope : cfg.scopes) {
    if (scope == "world") {
      // Across nodes the network is the narrow path.
      out.push_back({"world", ctx.node_count() > 1 ? inter : intra, b.world.get(), ctx.world_size(),
                     "", everyone});
    } else if (scope == "intra_node") {
      out.push_back({"intra_node", intra, b.node.get(), root_local_size,
                     root_local_size < 2 ? "one rank per node: no intra-node traffic" : "",
                     everyone});
    } else if (scope == "inter_node") {
      out.push_back({"inter_node", inter, b.rail.get(), ctx.node_count(),
                     ctx.node_count() < 2 ? "one node: no inter-node traffic" : "", everyone});
    } else if (scope == "rail") {
      if (ctx.node_count() < 2) {
        out.push_back({"rail", inter, nullptr, 1, "one node: no inter-node traffic", {}});
        continue;
      }
      for (std::size_t l = 0; l < rail_size.size(); ++l) {
        const int lane = static_cast<int>(l);
        std::vector<std::int64_t> members;
        for (std::size_t r = 0; r < layout.local_rank_of_rank.size(); ++r) {
          if (layout.local_rank_of_rank[r] == lane) members.push_back(static_cast<std::int64_t>(r));
        }
        out.push_back(
            {"rail_" + std::to_string(l), inter, ctx.local_rank() == lane ? b.rail.get() : nullptr,
             rail_size[l],
             rail_size[l] < 2 ? "one node has this local rank: no inter-node traffic" : "",
             std::move(members)});
      }
    }
  }
  // Each rank's own part agrees with the layout's lists (the columns rank 0 writes).
  const auto me = static_cast<std::int64_t>(ctx.rank());
  for (const ScopeRun& s : out) {
    const bool listed = std::binary_search(s.members.begin(), s.members.end(), me);
    if (s.skip.empty() && listed != (s.comm != nullptr)) {
      throw InternalError("collectives: rank " + std::to_string(me) +
                          (listed ? " has no communicator for scope " : " takes part in scope ") +
                          s.name + (listed ? ", which its layout lists it in" : " unlisted"));
    }
  }
  return out;
}

// Where rank 0's time in the phase went (seconds), recorded on /collectives so a user (and
// bench/recording.sh) can see how much of the phase was measurement.
struct PhaseTimes {
  double timed = 0;    // the timed iterations (barrier + collective), loop by loop
  double prepare = 0;  // allocation, fills, the validation run and its check, warm-up
  double record = 0;   // the gather to rank 0 and the writes
};

// The buffers of the last sweep, kept for the next one on the same communicator when they are
// big enough (a sweep uses a prefix), so a phase's sweeps allocate and first touch their memory
// once rather than each (a first touch cost 1.6 us per 4 KiB page on a test VM, half a fill).
// Released whenever a sweep needs more, or another communicator's, before anything new is
// allocated: the memory held never exceeds what one sweep needed.
struct SweepMemory {
  const Comm* comm = nullptr;
  std::unique_ptr<Buffer> in, out;
  void release() {
    in.reset();
    out.reset();
    comm = nullptr;
  }
};

// What the sweep measured for one size on this rank (iters entries, NaN where not run).
struct RankSample {
  std::vector<double> time_us, arrival_us, wait_us;
  VerifyResult check;
};

// One (scope, collective, dtype, op, mode) sweep over sizes.
class Sweep {
 public:
  Sweep(PhaseEnv& env, const ScopeRun& scope, const CollectiveInfo& info, DType dtype, ReduceOp op,
        bool in_place, int* step_counter, Progress* progress, PhaseTimes* times,
        SweepMemory* memory)
      : env_(env),
        memory_(memory),
        times_(times),
        progress_(progress),
        scope_(scope),
        info_(info),
        dtype_(dtype),
        op_(op),
        in_place_(in_place),
        step_counter_(step_counter),
        path_(group_path(scope.name, info, dtype, op, in_place)) {}

  // Returns the number of wrong elements found (all ranks, all sizes) on rank 0, 0 elsewhere.
  std::uint64_t run(const std::vector<std::uint64_t>& sizes) {
    const CollectivesConfig& cfg = env_.config.collectives;
    write_header(sizes.size());
    // This rank's own communicator size: with uneven nodes an intra-node scope differs from
    // rank 0's view (scope_.nranks, what the report shows).
    const int nranks = scope_.comm != nullptr ? scope_.comm->size() : scope_.nranks;
    const double t_pool = now_us();
    Buffers pool;
    if (scope_.comm != nullptr) pool = allocate_largest(sizes, nranks);
    // Whether every rank that takes part holds the sweep's buffers: then no size can fail to
    // allocate and nothing needs agreeing per size.
    std::int64_t pooled = scope_.comm == nullptr || pool.in != nullptr ? 1 : 0;
    SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &pooled, 1, MPI_INT64_T, MPI_MIN, env_.ctx.world()));
    times_->prepare += (now_us() - t_pool) * 1e-6;
    std::uint64_t wrong_total = 0;
    for (std::uint64_t bytes : sizes) {
      // The previous size reaches rank 0 before anyone starts this one's step, so the watchdog's
      // step still names a rank that did not finish it, and a rank that stops here has its
      // previous sizes in the file.
      wrong_total += settle();
      const CollectiveCounts counts = info_.counts(bytes, dtype_size(dtype_), nranks);
      std::string label = "collectives " + scope_.name + "/" + std::string(info_.name) + " " +
                          std::string(dtype_name(dtype_)) + " " + mode_name(in_place_) + " " +
                          format_size(bytes);
      step(label, plan_step(bytes));
      RankSample mine;
      mine.time_us.assign(static_cast<std::size_t>(cfg.iters), kNaN);
      mine.arrival_us.assign(static_cast<std::size_t>(cfg.iters), kNaN);
      mine.wait_us.assign(static_cast<std::size_t>(cfg.iters), kNaN);
      std::int64_t skipped = counts.unit == 0 ? schema::kSkipTooSmall : schema::kSkipMeasured;
      Buffers own;  // this size's own, when the sweep's largest could not be had
      Buffers* buffers = &pool;
      if (pooled == 0) {
        const double t_alloc = now_us();
        if (skipped == schema::kSkipMeasured && scope_.comm != nullptr && !pool.in) {
          skipped = allocate(counts, own);
          buffers = &own;
        }
        // An allocation may fail on one rank only: agree before anyone enters a collective,
        // so the size is skipped everywhere instead of leaving the others waiting.
        SD_MPI_CHECK(
            MPI_Allreduce(MPI_IN_PLACE, &skipped, 1, MPI_INT64_T, MPI_MAX, env_.ctx.world()));
        times_->prepare += (now_us() - t_alloc) * 1e-6;
      }
      if (skipped == schema::kSkipMeasured && scope_.comm != nullptr) {
        measure(counts, bytes, *buffers, mine);
        if (const double us = median(mine.time_us); std::isfinite(us) && bytes > 0) {
          last_bytes_ = bytes;
          last_iter_us_ = us;
        }
      }
      const double t_record = now_us();
      start_record(bytes, counts, skipped, mine, std::move(label));
      times_->record += (now_us() - t_record) * 1e-6;
    }
    wrong_total += settle();
    return wrong_total;
  }

 private:
  void step(const std::string& label, const Watchdog::StepPlan& plan) {
    begin_measured_step(env_, "collectives", ++*step_counter_, label, *progress_, plan);
  }

  // The timed iterations the watchdog counts, and the step's length scaled from the last size
  // measured (bandwidth-bound: time grows with bytes), so a timeout can say "estimated at 140 s
  // from the 8 GiB rate" rather than call a long step a hang.
  Watchdog::StepPlan plan_step(std::uint64_t bytes) const {
    Watchdog::StepPlan plan;
    plan.total = iterations(bytes);
    if (last_bytes_ > 0 && last_iter_us_ > 0) {
      const int runs = untimed_runs() + iterations(bytes);
      plan.expected_s = last_iter_us_ * 1e-6 * static_cast<double>(bytes) /
                        static_cast<double>(last_bytes_) * runs;
      plan.basis = "the " + format_size(last_bytes_) + " rate";
    }
    return plan;
  }

  // Rank 0: the sweep's header and columns (the ranks that take part, from the layout).
  void write_header(std::size_t nsizes) {
    if (!env_.ctx.is_root()) return;
    columns_ = std::make_shared<const std::vector<std::int64_t>>(scope_.members);
    CollectiveSweepHeader h;
    h.scope = scope_.name;
    h.collective = std::string(info_.name);
    h.dtype = std::string(dtype_name(dtype_));
    h.reduce_op = info_.reduces ? std::string(reduce_op_name(op_)) : "";
    h.in_place = in_place_;
    h.nranks = scope_.nranks;
    h.busbw_factor = info_.busbw_factor(scope_.nranks);
    h.link_GBps = scope_.link_GBps;
    h.planned_sizes = static_cast<std::int64_t>(nsizes);
    env_.recorder.write_async([path = path_, h, columns = columns_](
                                  RunWriter& w) { write_collective_header(w, path, h, *columns); },
                              columns_->size() * sizeof(std::int64_t));
  }

  // One buffer in place, input and output otherwise; allocated outside any timing: the sweep's
  // (held by SweepMemory) or a size's own. `capacity`: the input elements the sweep's sizes
  // read; `filled`: how many of them hold the pattern already (out of place the collective only
  // reads its input, and element i holds the same value at any count, so one fill serves every
  // size).
  struct Buffers {
    Buffer* in = nullptr;
    Buffer* out = nullptr;
    std::uint64_t capacity = 0;
    std::uint64_t filled = 0;
    std::unique_ptr<Buffer> own_in, own_out;
  };

  // Element counts the buffers need for one size.
  std::pair<std::uint64_t, std::uint64_t> needs(const CollectiveCounts& counts) const {
    if (in_place_) return {std::max(counts.send, counts.recv), 0};
    return {counts.send, counts.recv};
  }

  // Returns schema::kSkipMeasured, or schema::kSkipOutOfMemory when this rank cannot have the
  // buffers.
  std::int64_t allocate(const CollectiveCounts& counts, Buffers& b) {
    Comm& comm = *scope_.comm;
    const std::size_t elem = dtype_size(dtype_);
    const auto [in, out] = needs(counts);
    try {
      b.own_in = comm.allocate(in * elem);
      if (!in_place_) b.own_out = comm.allocate(out * elem);
    } catch (const OutOfMemory&) {
      b = {};
      return schema::kSkipOutOfMemory;
    }
    b.in = b.own_in.get();
    b.out = b.own_out.get();
    b.capacity = counts.send;
    return schema::kSkipMeasured;
  }

  // The buffers of the sweep's largest size, used by every size (a prefix each), so memory is
  // allocated and first touched once per sweep rather than once per size, and kept for the next
  // sweep (SweepMemory). Empty when this rank cannot have them: then each size allocates its own
  // (and only a size that cannot is skipped).
  Buffers allocate_largest(const std::vector<std::uint64_t>& sizes, int nranks) {
    CollectiveCounts largest;  // element counts covering every size's needs
    for (std::uint64_t bytes : sizes) {
      const CollectiveCounts c = info_.counts(bytes, dtype_size(dtype_), nranks);
      if (c.unit == 0) continue;
      largest.send = std::max(largest.send, c.send);
      largest.recv = std::max(largest.recv, c.recv);
    }
    Buffers b;
    if (largest.send + largest.recv == 0) return b;
    const std::size_t elem = dtype_size(dtype_);
    const auto [in, out] = needs(largest);
    SweepMemory& kept = *memory_;
    const bool fits = kept.comm == scope_.comm && kept.in && kept.in->bytes() >= in * elem &&
                      (in_place_ || (kept.out && kept.out->bytes() >= out * elem));
    if (!fits) {
      kept.release();  // first: the old and the new buffers are never held together
      Buffers fresh;
      if (allocate(largest, fresh) != schema::kSkipMeasured) return b;
      kept.comm = scope_.comm;
      kept.in = std::move(fresh.own_in);
      kept.out = std::move(fresh.own_out);
    }
    b.in = kept.in.get();
    b.out = in_place_ ? nullptr : kept.out.get();
    b.capacity = largest.send;
    return b;
  }

  // The validation run is the first of the warm-up runs (both run the collective untimed).
  int untimed_runs() const {
    const CollectivesConfig& cfg = env_.config.collectives;
    return std::max(cfg.warmup, cfg.validate != "off" ? 1 : 0);
  }

  // Validation run, warm-up and the timed loop.
  void measure(const CollectiveCounts& counts, std::uint64_t bytes, Buffers& buffers,
               RankSample& out) {
    Comm& comm = *scope_.comm;
    const CollectivesConfig& cfg = env_.config.collectives;
    const std::size_t elem = dtype_size(dtype_);
    Buffer* in = buffers.in;
    Buffer* outbuf = buffers.out;
    Buffer& result = in_place_ ? *in : *outbuf;
    char* base = static_cast<char*>(in->data());
    void* send =
        in_place_ ? base + comm.in_place_send_offset(info_.kind, counts.unit) * elem : in->data();
    const std::uint64_t out_offset =
        in_place_ ? comm.in_place_recv_offset(info_.kind, counts.unit) : 0;
    void* recv = in_place_ ? static_cast<void*>(base + out_offset * elem) : outbuf->data();
    PatternSpec spec{cfg.seed, dtype_, op_, comm.size(), 0};
    const auto corrupt = env_.faults.find("corrupt", env_.ctx.rank(), "collectives");

    // In place, the input sits inside the one buffer (e.g. all_gather: at rank * unit).
    const std::uint64_t in_offset =
        in_place_ ? comm.in_place_send_offset(info_.kind, counts.unit) : 0;
    auto fill = [&] { comm.fill(*in, in_offset, info_.kind, counts, spec); };
    // Out of place: the whole input buffer once (every smaller size of the sweep reads a prefix).
    auto fill_once = [&] {
      if (in_place_) return fill();
      if (buffers.filled >= counts.send) return;
      CollectiveCounts whole = counts;
      whole.send = buffers.capacity;
      comm.fill(*in, 0, info_.kind, whole, spec);
      buffers.filled = whole.send;
    };
    auto check = [&] {
      comm.synchronize();
      if (corrupt) comm.corrupt(result, out_offset, dtype_);
      VerifyResult r = comm.verify(result, out_offset, info_.kind, counts, spec);
      if (r.wrong > out.check.wrong) out.check = r;
    };

    const double t_prepare = now_us();
    const bool validate = cfg.validate != "off";
    fill_once();
    if (validate) {
      comm.run(info_.kind, send, recv, counts.unit, dtype_, op_, 0);
      check();
    }
    // In place, the remaining warm-up and the timed runs start from the validation run's
    // output: what they compute is not checked (validate: every_iteration refills and checks
    // each), and the time of a collective does not depend on the values.
    for (int i = validate ? 1 : 0; i < untimed_runs(); ++i)
      comm.run(info_.kind, send, recv, counts.unit, dtype_, op_, 0);
    comm.synchronize();
    const double t_timed = now_us();
    times_->prepare += (t_timed - t_prepare) * 1e-6;
    struct Timed {  // counted however the loop ends
      PhaseTimes* times;
      double start;
      ~Timed() { times->timed += (now_us() - start) * 1e-6; }
    } timed{times_, t_timed};

    const int iters = iterations(bytes);
    const double offset = env_.ctx.clock_offset_us();
    double* t = out.time_us.data();
    double* a = out.arrival_us.data();
    double* w = out.wait_us.data();
    const auto slow = env_.faults.find("slow", env_.ctx.rank(), "collectives");
    if (cfg.validate == "every_iteration" || slow) {
      // The timed loop's iteration, with a refill and check after it, or with the planted
      // lateness before the arrival (the self-test of collectives.lateness).
      for (int it = 0; it < iters; ++it) {
        if (cfg.validate == "every_iteration" && in_place_) fill();
        if (slow && it > 0) {
          std::this_thread::sleep_for(
              std::chrono::duration<double, std::micro>((slow->factor - 1) * t[it - 1]));
        }
        const double ready = now_us();
        comm.barrier();
        const double t0 = now_us();
        comm.run(info_.kind, send, recv, counts.unit, dtype_, op_, 0);
        comm.synchronize();
        const double t1 = now_us();
        a[it] = ready - offset;
        w[it] = t0 - ready;
        t[it] = t1 - t0;
        env_.watchdog.progress().store(it + 1, std::memory_order_relaxed);
        if (cfg.validate == "every_iteration") check();
      }
    } else {
      timed_loop(comm, {info_.kind, send, recv, counts.unit, dtype_, op_, 0}, iters, offset, t, a,
                 w, &env_.watchdog.progress());
    }
  }

  // Fewer iterations for huge sizes when iter_bytes_budget is set (at least one).
  int iterations(std::uint64_t bytes) const {
    const CollectivesConfig& cfg = env_.config.collectives;
    if (cfg.iter_bytes_budget == 0 || bytes == 0) return cfg.iters;
    const auto fit = static_cast<int>(
        std::min<std::uint64_t>(static_cast<std::uint64_t>(cfg.iters),
                                std::max<std::uint64_t>(1, cfg.iter_bytes_budget / bytes)));
    return fit;
  }

  // A size on its way to rank 0: its gather (started by start_record, collective over world)
  // and what rank 0 needs to record it once the gather is complete (settle).
  struct PendingSize {
    PendingSize(std::uint64_t b, const CollectiveCounts& c, std::int64_t s, std::string l,
                MPI_Comm comm, const CollectiveRankResult& mine)
        : bytes(b), counts(c), skipped(s), label(std::move(l)), gather(comm, 0, mine) {}
    std::uint64_t bytes;
    CollectiveCounts counts;
    std::int64_t skipped;
    std::string label;
    SizeGather gather;
  };
  void start_record(std::uint64_t bytes, const CollectiveCounts& counts, std::int64_t skipped,
                    const RankSample& mine, std::string label) {
    const CollectiveRankResult result{mine.time_us,
                                      mine.arrival_us,
                                      mine.wait_us,
                                      static_cast<double>(mine.check.wrong),
                                      static_cast<double>(mine.check.first_wrong),
                                      mine.check.expected,
                                      mine.check.got};
    pending_.emplace(bytes, counts, skipped, std::move(label), env_.ctx.world(), result);
  }
  // Completes the size in flight, if any: rank 0 appends its rows and reports wrong data; returns
  // its wrong elements (rank 0; 0 elsewhere). Collective over world.
  std::uint64_t settle() {
    if (!pending_) return 0;
    const double t_record = now_us();
    const std::uint64_t wrong = record(*pending_);
    pending_.reset();
    times_->record += (now_us() - t_record) * 1e-6;
    return wrong;
  }
  std::uint64_t record(PendingSize& size);

  PhaseEnv& env_;
  SweepMemory* memory_;
  PhaseTimes* times_;
  Progress* progress_;
  const ScopeRun& scope_;
  const CollectiveInfo& info_;
  DType dtype_;
  ReduceOp op_;
  bool in_place_;
  int* step_counter_;
  std::string path_;
  // Rank 0: the world ranks that take part, ascending (shared with the write jobs).
  std::shared_ptr<const std::vector<std::int64_t>> columns_;
  std::uint64_t last_bytes_ = 0;  // the last size this rank measured, and its median iteration
  double last_iter_us_ = 0;
  std::optional<PendingSize> pending_;
};

std::uint64_t Sweep::record(PendingSize& size) {
  const Context& ctx = env_.ctx;
  const int world = ctx.world_size();
  GatheredSize g = size.gather.finish();
  if (!ctx.is_root()) return 0;
  const std::uint64_t bytes = size.bytes;
  const CollectiveCounts& counts = size.counts;
  const std::int64_t skipped = size.skipped;
  const std::string& label = size.label;

  CollectiveSizeStats stats;
  stats.bytes = bytes;
  stats.count = counts.unit;
  stats.skipped = skipped;
  std::uint64_t wrong_total = 0;
  std::string report;
  int named = 0;
  for (int r = 0; r < world; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    if (g.wrong[ur] > 0) {
      wrong_total += static_cast<std::uint64_t>(g.wrong[ur]);
      if (named++ < 8) {
        char detail[192];
        std::snprintf(detail, sizeof detail,
                      ": %lld of %llu elements wrong, first at index %lld: expected %.9g, got %.9g",
                      static_cast<long long>(g.wrong[ur]),
                      static_cast<unsigned long long>(counts.recv),
                      static_cast<long long>(g.first_wrong[ur]), g.expected[ur], g.got[ur]);
        report += (report.empty() ? "" : "; ") + ctx.describe_rank(r) + detail;
      }
    }
  }

  // Written behind the next measurement (Recorder::write_async); the job owns the samples.
  const std::size_t held = (g.time_us.size() * 3 + g.world * 4) * sizeof(double);
  // The statistics too: off the measuring thread when the writer has its own. An iteration
  // lasts until its last rank is done; bandwidth from the median iteration.
  env_.recorder.write_async(
      [path = path_, columns = columns_, stats, g = std::move(g), coll_bytes = counts.bytes,
       factor = info_.busbw_factor(scope_.nranks)](RunWriter& w) mutable {
        set_iteration_stats(stats, g);
        stats.algbw_GBps = stats.skipped == schema::kSkipMeasured
                               ? algbw_gbps(coll_bytes, stats.time_med_us * 1e-6)
                               : kNaN;
        stats.busbw_GBps = stats.algbw_GBps * factor;
        append_collective_size(w, path, *columns, stats, g);
      },
      held);

  if (wrong_total > 0) {
    const std::string message = "wrong data in " + label + ": " + report;
    if (env_.config.collectives.on_wrong == "abort") {
      // Rank 0 alone throws; the watchdog records it and ends the job with exit 3.
      throw RuntimeFault("collectives: " + message +
                         " (collectives.on_wrong: continue keeps sweeping)");
    }
    std::fprintf(stderr, "shakedown: collectives: %s\n", message.c_str());
  }
  return wrong_total;
}

// auto: NCCL when every rank has a GPU of its own (and the build has NCCL), else MPI.
std::string choose_backend(const PhaseEnv& env, const GpuChoice& gpu) {
  return choose_gpu_path(env.ctx, gpu, "collectives.backend", env.config.collectives.backend,
                         "nccl", "mpi", /*exclusive=*/true)
             ? "nccl"
             : "mpi";
}

Backends make_backends(const Context& ctx, const std::string& backend, const GpuChoice& gpu) {
  Backends b;
  if (backend == "nccl") {
#if SHAKEDOWN_HAVE_CUDA
    auto world = NcclComm::create(ctx.world(), gpu.device);
    // ncclCommSplit: intra-node = same node (NVLink), one rail = same local rank (network).
    b.node = world->split(ctx.node_index(), ctx.local_rank());
    b.rail = world->split(ctx.local_rank(), ctx.node_index());
    b.world = std::move(world);
    return b;
#else
    (void)gpu;
    throw InternalError("nccl backend chosen in a build without CUDA");
#endif
  }
  // Fills and checks of large host buffers use the rank's share of the host's CPUs.
  const int threads = cpu_share(ctx.host_local_size());
  b.world = std::make_unique<MpiComm>(ctx.world(), threads);
  b.node = std::make_unique<MpiComm>(ctx.node(), threads);
  b.rail = std::make_unique<MpiComm>(ctx.rail(), threads);
  return b;
}

// One (scope, collective, dtype, reduction, mode) sweep over the sizes, or why it cannot run.
struct SweepPlan {
  const ScopeRun* scope;
  const CollectiveInfo* info;
  DType dtype;
  ReduceOp op;
  bool in_place;
  std::string unsupported;  // non-empty: recorded, not run
};

// Every sweep of the phase, in the order they run; scopes that cannot run here are left out.
std::vector<SweepPlan> plan_sweeps(const std::vector<ScopeRun>& scopes,
                                   const CollectivesConfig& cfg, const Comm& world) {
  std::vector<ReduceOp> reduce_ops;
  for (const auto& r : cfg.reduce_ops) reduce_ops.push_back(*parse_reduce_op(r));
  std::vector<bool> modes;
  if (cfg.in_place != "yes") modes.push_back(false);
  if (cfg.in_place != "no") modes.push_back(true);
  std::vector<SweepPlan> plans;
  for (const ScopeRun& scope : scopes) {
    if (!scope.skip.empty()) continue;
    for (const auto& op_name : cfg.ops) {
      const CollectiveInfo* info = find_collective(op_name);
      if (!info) throw InternalError("collectives: unknown collective " + op_name);
      // A collective without a reduction runs once, whatever reduce_ops lists.
      const std::vector<ReduceOp> ops = info->reduces ? reduce_ops : std::vector{ReduceOp::kSum};
      for (const auto& dtype_text : cfg.dtypes) {
        const DType dtype = *parse_dtype(dtype_text);
        for (ReduceOp op : ops) {
          const std::string why = world.unsupported(info->kind, dtype, op);
          for (bool in_place : modes) {
            plans.push_back({&scope, info, dtype, op, in_place,
                             !why.empty() ? why
                             : in_place   ? world.unsupported_in_place(info->kind)
                                          : ""});
          }
        }
      }
    }
  }
  return plans;
}

}  // namespace

void run_collectives(PhaseEnv& env) {
  const double t_phase = now_us();
  const CollectivesConfig& cfg = env.config.collectives;
  const Context& ctx = env.ctx;
  env.watchdog.step("collectives: backend");
  const GpuChoice gpu = choose_gpu(ctx);
  const std::string backend = choose_backend(env, gpu);
  env.watchdog.step("collectives: " + backend + " communicators");
  Backends b = make_backends(ctx, backend, gpu);
  // A watchdog timeout aborts the NCCL communicators (ncclCommAbort, from the watchdog thread)
  // before the job ends, so no GPU is left spinning in a kernel waiting for a dead peer. Declared
  // after `b`: unregistered (waiting for a run in progress) before the communicators go.
  Watchdog::AbortRegistration abort_nccl;
  if (backend == "nccl") {
    abort_nccl = env.watchdog.on_abort([&b] {
      abort_busy_first({b.rail.get(), b.node.get(), b.world.get()});
    });
  }
  const std::vector<std::uint64_t>& sizes =
      backend == "nccl" ? cfg.nccl_sizes.values : cfg.sizes.values;

  const std::vector<ScopeRun> scopes = plan_scopes(ctx, cfg, b);
  for (const ScopeRun& scope : scopes) {
    if (scope.skip.empty()) continue;
    env.recorder.write([&](RunWriter& w) {
      w.set_attr(schema::join(schema::kCollectivesGroup, scope.name),
                 schema::coll::kAttrScopeSkipped, scope.skip);
    });
  }
  const std::vector<SweepPlan> plans = plan_sweeps(scopes, cfg, *b.world);
  long runnable = 0;
  for (const SweepPlan& p : plans) runnable += p.unsupported.empty() ? 1 : 0;
  refuse_unreachable_steps(env, "collectives", runnable * static_cast<long>(sizes.size()),
                           "one per scope, collective, dtype, reduction, mode and size");
  Progress progress("collectives", runnable * static_cast<long>(sizes.size()), env.progress);

  std::uint64_t wrong_total = 0;
  int step_counter = 0;
  PhaseTimes times;
  SweepMemory memory;  // after the communicators and their abort: released before them
  for (const SweepPlan& p : plans) {
    if (!p.unsupported.empty()) {
      env.recorder.write([&](RunWriter& w) {
        w.set_attr(group_path(p.scope->name, *p.info, p.dtype, p.op, p.in_place),
                   schema::coll::kAttrUnsupported, p.unsupported);
      });
      continue;
    }
    Sweep sweep(env, *p.scope, *p.info, p.dtype, p.op, p.in_place, &step_counter, &progress, &times,
                &memory);
    wrong_total += sweep.run(sizes);
    release_free_memory();  // rank 0's rows, a size's own buffers (core/host.hpp says why)
  }
  memory.release();
  release_free_memory();
  // The phase ends when its rows are in the file: rank 0's writer thread may still hold some.
  env.recorder.drain();
  const double wall = (now_us() - t_phase) * 1e-6;
  env.recorder.write([&](RunWriter& w) {
    w.batch([&] {
      namespace c = schema::coll;
      w.set_attr(schema::kCollectivesGroup, c::kAttrBackend, backend);
      w.set_attr(schema::kCollectivesGroup, c::kAttrWrongTotal, wrong_total);
      w.set_attr(schema::kCollectivesGroup, c::kAttrSecondsWall, wall);
      w.set_attr(schema::kCollectivesGroup, c::kAttrSecondsTimed, times.timed);
      w.set_attr(schema::kCollectivesGroup, c::kAttrSecondsPrepare, times.prepare);
      w.set_attr(schema::kCollectivesGroup, c::kAttrSecondsRecord, times.record);
      w.set_attr(schema::kCollectivesGroup, c::kAttrRecording,
                 std::string(env.recorder.background() ? "background" : "inline"));
      w.set_attr(schema::kCollectivesGroup, c::kAttrRecordingCpus, env.recorder.writer_cpus());
    });
  });
}

}  // namespace shakedown
