// Recorder: per-rank rows gathered to rank 0, written with serial HDF5, read back.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>

#include "record/reader.hpp"
#include "record/recorder.hpp"
#include "record/schema.hpp"

using namespace shakedown;

TEST(Recorder, GathersEveryRankAndReadsBack) {
  Context ctx = Context::create(MPI_COMM_WORLD, 0);
  std::string dir = bcast_string(ctx.world(), 0,
                                 ctx.is_root() ? std::filesystem::temp_directory_path().string() +
                                                     "/sd-recorder-" + std::to_string(getpid())
                                               : "");
  const std::filesystem::path path = dir + "/run.h5";
  RunMeta meta;
  meta.schema_version = schema::kSchemaVersion;
  meta.status = "running";
  meta.world_size = ctx.world_size();
  meta.node_count = ctx.node_count();
  {
    Recorder rec(ctx, path, meta, 0);
    RankInfo mine;
    mine.rank = ctx.rank();
    mine.node_index = ctx.node_index();
    mine.local_rank = ctx.local_rank();
    mine.hostname = "host-" + std::to_string(ctx.rank() * 7);
    mine.cpus = std::to_string(ctx.rank());
    std::vector<RankInfo> rows = rec.gather(mine);
    EXPECT_EQ(rows.size(), ctx.is_root() ? static_cast<std::size_t>(ctx.world_size()) : 0u);
    rec.write([&](RunWriter& w) {
      w.write_topology(rows, {{"placement.test", CheckStatus::kWarn, "because"}});
    });
    rec.finish("complete");
  }
  MPI_Barrier(ctx.world());
  if (ctx.is_root()) {
    RunFile f = RunFile::open(path);
    EXPECT_EQ(f.meta().status, "complete");
    auto ranks = f.ranks();
    ASSERT_EQ(static_cast<int>(ranks.size()), ctx.world_size());
    for (int r = 0; r < ctx.world_size(); ++r) {
      EXPECT_EQ(ranks[static_cast<std::size_t>(r)].rank, r);
      EXPECT_EQ(ranks[static_cast<std::size_t>(r)].hostname, "host-" + std::to_string(r * 7));
    }
    ASSERT_EQ(f.placement_checks().size(), 1u);
    EXPECT_EQ(f.placement_checks()[0].status, CheckStatus::kWarn);
    std::filesystem::remove_all(dir);
  }
}

TEST(Recorder, UnwritableOutputFailsOnEveryRank) {
  Context ctx = Context::create(MPI_COMM_WORLD, 0);
  RunMeta meta;
  meta.schema_version = schema::kSchemaVersion;
  int threw = 0;
  try {
    Recorder rec(ctx, "/proc/shakedown-cannot-write-here/run.h5", meta, 0);
  } catch (const Error& e) {
    threw = 1;
    EXPECT_NE(std::string(e.what()).find("/proc/shakedown-cannot-write-here"), std::string::npos)
        << e.what();
  }
  int all = threw;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  EXPECT_EQ(all, 1);
}

namespace {
std::filesystem::path shared_temp(const Context& ctx, const std::string& tag) {
  return bcast_string(ctx.world(), 0,
                      ctx.is_root() ? std::filesystem::temp_directory_path().string() + "/sd-" +
                                          tag + "-" + std::to_string(getpid())
                                    : "");
}

// Queues `n` jobs on `rec`, job i appending the value i to `path`; each bumps `ran` if given.
void queue_rows(Recorder& rec, const std::string& path, std::int64_t n,
                std::atomic<int>* ran = nullptr) {
  for (std::int64_t i = 0; i < n; ++i) {
    rec.write_async(
        [i, path, ran](RunWriter& w) {
          w.append_rows(path, std::span<const std::int64_t>(&i, 1), {});
          if (ran != nullptr) ++*ran;
        },
        8);
  }
}

}  // namespace

// write_async: jobs run in order and before a later write(); a failing job's error comes out of
// the next call on the main thread; mark_aborted writes what is still queued first.
TEST(Recorder, BackgroundWritesKeepOrderAndReportFailures) {
  Context ctx = Context::create(MPI_COMM_WORLD, 0);
  const std::filesystem::path dir = shared_temp(ctx, "async");
  RunMeta meta;
  meta.world_size = ctx.world_size();
  {
    Recorder rec(ctx, dir / "run.h5", meta, 4);
    queue_rows(rec, "/t/order", 50);
    rec.write([](RunWriter& w) { w.set_attr("/t", "after", std::int64_t{1}); });
    rec.write_async([](RunWriter&) { throw RuntimeFault("job failed on purpose"); }, 1);
    bool threw = false;
    try {
      rec.drain();
    } catch (const RuntimeFault& e) {
      threw = std::string(e.what()).find("on purpose") != std::string::npos;
    }
    EXPECT_EQ(threw, ctx.is_root());  // other ranks have no writer
  }
  {
    Recorder rec(ctx, dir / "aborted.h5", meta, 4);
    queue_rows(rec, "/t/queued", 20);
    rec.mark_aborted("test: ending");
    if (ctx.is_root()) {
      EXPECT_THROW(rec.write_async([](RunWriter&) {}, 1), RunAborted);
    }
  }
  MPI_Barrier(ctx.world());
  if (ctx.is_root()) {
    const RunFile f = RunFile::open(dir / "run.h5.partial");  // never finished
    std::vector<std::int64_t> want(50);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = static_cast<std::int64_t>(i);
    EXPECT_EQ(f.read_int64("/t/order"), want);
    EXPECT_EQ(f.attr_int64("/t", "after"), 1);
    const RunFile a = RunFile::open(dir / "aborted.h5");
    EXPECT_EQ(a.meta().status, "aborted");
    EXPECT_EQ(a.read_int64("/t/queued").size(), 20u);  // every queued row made it
    std::filesystem::remove_all(dir);
  }
}

// The writer thread defers the flush of small rows, but never past Recorder::kFlushInterval: rows
// written by jobs and then nothing else reach the file on disk by themselves (another process,
// h5dump, reads them while the recorder still holds the file open).
TEST(Recorder, BackgroundRowsReachTheDiskWithoutAnotherWrite) {
  Context ctx = Context::create(MPI_COMM_WORLD, 0);
  const std::filesystem::path dir = shared_temp(ctx, "deadline");
  RunMeta meta;
  meta.world_size = ctx.world_size();
  Recorder rec(ctx, dir / "run.h5", meta, 4);
  if (ctx.is_root() && !rec.background()) {
    GTEST_SKIP() << "rank 0 has one CPU: the recorder writes inline, flushing every write";
  }
  queue_rows(rec, "/t/rows", 30);
  if (ctx.is_root()) {
    rec.drain();
    const std::string cmd = "h5dump -H -d /t/rows " + (dir / "run.h5.partial").string() +
                            " 2>&1 | grep -q 'SIMPLE { ( 30 )'";
    bool seen = false;
    // The deadline is 200 ms; 10 s leaves room for a loaded machine.
    for (int tries = 0; tries < 100 && !seen; ++tries) {
      seen = std::system(cmd.c_str()) == 0;
      if (!seen) usleep(100 * 1000);
    }
    EXPECT_TRUE(seen) << cmd;
  }
  rec.finish(schema::kStatusComplete);
  MPI_Barrier(ctx.world());
  if (ctx.is_root()) std::filesystem::remove_all(dir);
}

// Held, the writer thread leaves queued jobs alone until the hold ends (or a drain); jobs held
// when the run is marked aborted are still written.
TEST(Recorder, HeldJobsWaitForTheHoldAndSurviveAnAbort) {
  Context ctx = Context::create(MPI_COMM_WORLD, 0);
  const std::filesystem::path dir = shared_temp(ctx, "hold");
  RunMeta meta;
  meta.world_size = ctx.world_size();
  {
    Recorder rec(ctx, dir / "run.h5", meta, 4);
    std::atomic<int> ran{0};
    {
      Recorder::Hold hold(rec);
      queue_rows(rec, "/t/held", 10, &ran);
      if (ctx.is_root() && rec.background()) {
        usleep(300 * 1000);  // the thread had time to run them, and did not
        EXPECT_EQ(ran.load(), 0);
      }
    }
    rec.drain();
    EXPECT_EQ(ran.load(), ctx.is_root() ? 10 : 0);
    rec.finish(schema::kStatusComplete);
  }
  {
    Recorder rec(ctx, dir / "aborted.h5", meta, 4);
    Recorder::Hold hold(rec);
    queue_rows(rec, "/t/held", 10);
    rec.mark_aborted("test: ending while held");
  }
  MPI_Barrier(ctx.world());
  if (ctx.is_root()) {
    EXPECT_EQ(RunFile::open(dir / "run.h5").read_int64("/t/held").size(), 10u);
    const RunFile a = RunFile::open(dir / "aborted.h5");
    EXPECT_EQ(a.meta().status, "aborted");
    EXPECT_EQ(a.read_int64("/t/held").size(), 10u);
    std::filesystem::remove_all(dir);
  }
}
