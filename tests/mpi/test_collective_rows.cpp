// A sweep's samples through the phase's own gather and write path (record/collective_rows.hpp:
// SizeGather in flight across other collectives, as the phase uses it, and the blocking form)
// and back through the analysis reader: every rank's time, arrival and wait read back equal to
// what the rank had, to the stated precision (12 significant bits; arrivals and waits also to
// 1/64 us), for world, intra_node, inter_node and rail scopes, with the columns of each scope's
// participants. Runs under mpi.np2/np3/np4, mpi.np4_vn2 (2 virtual nodes), mpi.pretend_hosts
// (2 hosts of 2 ranks) and mpi.pretend_hosts_uneven (hosts of 2 and 1 ranks: rails of 2 and 1).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/collectives_data.hpp"
#include "core/stats.hpp"
#include "record/collective_rows.hpp"
#include "record/reader.hpp"
#include "record/recorder.hpp"
#include "record/schema.hpp"
#include "runtime/agree.hpp"

using namespace shakedown;

namespace {

int virtual_nodes_from_env() {
  const char* v = std::getenv("SHAKEDOWN_TEST_VIRTUAL_NODES");
  return v != nullptr ? std::atoi(v) : 0;
}

// What rank r "measured" in iteration i of size z (arrivals are large on purpose: they are
// stored relative to the iteration's earliest, which must keep their differences exact).
double time_of(int r, int i, int z) {
  return 5.0 + 1.37 * r + 0.011 * i + 1000.123 * z;
}
double arrival_of(int r, int i, int z) {
  return 4.0e9 + 1.0e5 * z + 100.0 * i + 0.77 * r;
}
double wait_of(int r, int i, int z) {
  return 0.3 * r + i + 0.5 * z;
}

void expect_near_stored(double got, double sent, double abs_step, const std::string& what) {
  // 12 significant bits: half a unit in the 12th bit relative; offsets also to 1/64 us.
  const double bound = std::ldexp(std::fabs(sent), -12) + abs_step / 2 + 1e-9;
  EXPECT_NEAR(got, sent, bound) << what;
}

struct ScopeCase {
  std::string name;
  bool mine;  // this rank takes part
};

void round_trip(const Context& ctx, const std::string& label) {
  const std::string dir =
      bcast_string(ctx.world(), 0,
                   ctx.is_root() ? std::filesystem::temp_directory_path().string() + "/sd-rows-" +
                                       std::to_string(getpid()) + "-" + label
                                 : "");
  const std::filesystem::path path = dir + "/run.h5";
  std::vector<ScopeCase> scopes = {{"world", true}, {"intra_node", true}};
  if (ctx.node_count() > 1) {
    scopes.push_back({"inter_node", true});
    int lanes = 0;  // as the phase plans them: one per local rank any node has
    for (int l : ctx.layout().local_rank_of_rank) lanes = std::max(lanes, l + 1);
    for (int l = 0; l < lanes; ++l) {
      scopes.push_back({"rail_" + std::to_string(l), ctx.local_rank() == l});
    }
  }
  constexpr int kIters = 4, kSizes = 3;
  RunMeta meta;
  meta.world_size = ctx.world_size();
  meta.node_count = ctx.node_count();
  {
    Recorder rec(ctx, path, meta, 4);
    for (const ScopeCase& scope : scopes) {
      const std::string group =
          schema::sweep_group(scope.name, "all_reduce", "float32_sum", "out_of_place");
      // Who takes part, as the phase learns it (write_header).
      const int part = scope.mine ? 1 : 0;
      std::vector<int> parts(ctx.is_root() ? static_cast<std::size_t>(ctx.world_size()) : 0);
      ASSERT_EQ(MPI_Gather(&part, 1, MPI_INT, parts.data(), 1, MPI_INT, 0, ctx.world()),
                MPI_SUCCESS);
      std::vector<std::int64_t> columns;
      for (std::size_t r = 0; r < parts.size(); ++r) {
        if (parts[r] != 0) columns.push_back(static_cast<std::int64_t>(r));
      }
      CollectiveSweepHeader h{scope.name,       "all_reduce", "float32", "sum", false,
                              ctx.world_size(), 1.0,          0,         kSizes};
      rec.write([&](RunWriter& w) { write_collective_header(w, group, h, columns); });
      for (int z = 0; z < kSizes; ++z) {
        std::vector<double> t(kIters, kNaN), a(kIters, kNaN), wt(kIters, kNaN);
        if (scope.mine) {
          for (int i = 0; i < kIters; ++i) {
            t[static_cast<std::size_t>(i)] = time_of(ctx.rank(), i, z);
            a[static_cast<std::size_t>(i)] = arrival_of(ctx.rank(), i, z);
            wt[static_cast<std::size_t>(i)] = wait_of(ctx.rank(), i, z);
          }
        }
        CollectiveRankResult mine{t, a, wt, static_cast<double>(ctx.rank()), -1, 0, 0};
        // As the phase does: the gather in flight while the ranks go on with other collectives
        // (even sizes), or one blocking step (odd sizes).
        GatheredSize g;
        if (z % 2 == 0) {
          SizeGather gather(ctx.world(), 0, mine);
          t.assign(t.size(), -1.0);  // the gather took its own copy
          int next = ctx.rank();
          MPI_Allreduce(MPI_IN_PLACE, &next, 1, MPI_INT, MPI_SUM, ctx.world());
          EXPECT_EQ(next, ctx.world_size() * (ctx.world_size() - 1) / 2);
          g = gather.finish();
        } else {
          g = gather_collective_size(ctx.world(), 0, mine);
        }
        if (!ctx.is_root()) continue;
        CollectiveSizeStats stats;
        stats.bytes = 8u << z;
        stats.count = 2u << z;
        set_iteration_stats(stats, g);
        rec.write([&](RunWriter& w) { append_collective_size(w, group, columns, stats, g); });
      }
    }
    rec.finish(schema::kStatusComplete);
  }
  if (!ctx.is_root()) return;
  const RunFile f = RunFile::open(path);
  const CollectivesData data = read_collectives(f);
  ASSERT_TRUE(data.unreadable.empty()) << data.unreadable.front();
  ASSERT_EQ(data.sweeps.size(), scopes.size());
  const auto world = static_cast<std::size_t>(ctx.world_size());
  for (const SweepData& s : data.sweeps) {
    SCOPED_TRACE(label + " " + s.scope);
    EXPECT_EQ(s.world, world);
    ASSERT_EQ(s.sizes.size(), static_cast<std::size_t>(kSizes));
    // The columns: every rank, or (rail_<L>) the ranks with local rank L.
    std::vector<std::size_t> expect;
    for (int r = 0; r < ctx.world_size(); ++r) {
      const bool in =
          !s.scope.starts_with("rail_") ||
          std::to_string(ctx.layout().local_rank_of_rank[static_cast<std::size_t>(r)]) ==
              s.scope.substr(5);
      if (in) expect.push_back(static_cast<std::size_t>(r));
    }
    EXPECT_EQ(s.columns, expect);
    const std::vector<double> base = f.read(s.path, schema::coll::kArrivalBaseUs);
    ASSERT_EQ(base.size(), static_cast<std::size_t>(kSizes * kIters));
    for (int z = 0; z < kSizes; ++z) {
      std::size_t iters = 0;
      const auto zu = static_cast<std::size_t>(z);
      const std::vector<double> t = read_size_times(f, s, zu, &iters);
      ASSERT_EQ(iters, static_cast<std::size_t>(kIters));
      std::size_t n = 0;
      const std::vector<double> a = read_size_samples(f, s, schema::coll::kArrivalUs, zu, &n);
      const std::vector<double> wt = read_size_samples(f, s, schema::coll::kWaitUs, zu, &n);
      ASSERT_EQ(n, iters);
      for (int i = 0; i < kIters; ++i) {
        const auto iu = static_cast<std::size_t>(i);
        for (std::size_t r = 0; r < world; ++r) {
          const std::string at = "size " + std::to_string(z) + " iteration " + std::to_string(i) +
                                 " rank " + std::to_string(r);
          const bool in = std::find(expect.begin(), expect.end(), r) != expect.end();
          const double tv = t[iu * world + r], av = a[iu * world + r], wv = wt[iu * world + r];
          if (!in) {
            EXPECT_TRUE(std::isnan(tv) && std::isnan(av) && std::isnan(wv)) << at;
            EXPECT_EQ(s.wrong[zu * world + r], 0) << at;
            continue;
          }
          const int rr = static_cast<int>(r);
          expect_near_stored(tv, time_of(rr, i, z), 0, "time " + at);
          expect_near_stored(av + base[zu * kIters + iu], arrival_of(rr, i, z), 1.0 / 64,
                             "arrival " + at);
          expect_near_stored(wv, wait_of(rr, i, z), 1.0 / 64, "wait " + at);
          EXPECT_EQ(s.wrong[zu * world + r], rr) << at;
        }
      }
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace

TEST(CollectiveRows, SamplesReadBackToTheStatedPrecisionInEveryScope) {
  const Context ctx = Context::create(MPI_COMM_WORLD, virtual_nodes_from_env());
  round_trip(ctx, "layout");
}
