// The watchdog under real MPI. The abort action is replaced, so the test can watch a stall being
// caught (and who is named) without the job dying; the real abort is tested end to end.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "mpi_offthread.hpp"
#include "runtime/clock.hpp"
#include "runtime/watchdog.hpp"

using namespace shakedown;

namespace {

std::vector<std::string> rank_names() {
  std::vector<std::string> names;
  for (int r = 0; r < comm_size(MPI_COMM_WORLD); ++r) names.push_back("rank " + std::to_string(r));
  return names;
}

struct Observed {
  std::mutex mutex;
  std::string reason;
  int aborts = 0;
};

Watchdog::Options test_options(Observed& seen, double step_timeout_s) {
  Watchdog::Options o;
  o.step_timeout_s = step_timeout_s;
  o.run_timeout_s = 120;
  o.poll_s = 0.01;
  o.abort_action = [&seen](ExitCode) {
    std::lock_guard lock(seen.mutex);
    ++seen.aborts;
  };
  return o;
}

// Every rank reaches "warm up"; the last one dawdles `late_ms` (not in MPI) before "the step",
// which the others have reached: with a 1 s step timeout, rank 0 catches it.
void last_rank_arrives_late(Watchdog& wd, int late_ms) {
  wd.step("warm up");
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm_rank(MPI_COMM_WORLD) == comm_size(MPI_COMM_WORLD) - 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
  }
  wd.step("the step");
  MPI_Barrier(MPI_COMM_WORLD);
}

// Waits (at most 5 s) until `ran` counts a local abort on this rank.
void await_local_abort(const std::atomic<int>& ran) {
  for (int i = 0; i < 500 && ran.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

TEST(WatchdogMpi, QuickStepsNeverTrip) {
  Observed seen;
  {
    Watchdog wd(MPI_COMM_WORLD, test_options(seen, 5), rank_names(),
                [&](const std::string& reason) {
                  std::lock_guard lock(seen.mutex);
                  seen.reason = reason;
                });
    for (int i = 0; i < 200; ++i) {
      wd.step("step " + std::to_string(i));
      wd.barrier(MPI_COMM_WORLD, "after step " + std::to_string(i));
    }
    wd.stop();
    EXPECT_FALSE(wd.tripped());
  }
  EXPECT_EQ(seen.aborts, 0);
  EXPECT_EQ(seen.reason, "");
}

TEST(WatchdogMpi, NamesTheRankThatIsLate) {
  const int late = comm_size(MPI_COMM_WORLD) - 1;
  const int me = comm_rank(MPI_COMM_WORLD);
  Observed seen;
  {
    Watchdog wd(MPI_COMM_WORLD, test_options(seen, 1.0), rank_names(),
                [&](const std::string& reason) {
                  std::lock_guard lock(seen.mutex);
                  seen.reason = reason;
                });
    last_rank_arrives_late(wd, 2000);
    if (me == 0) {
      EXPECT_TRUE(wd.tripped());
    }
    wd.stop();
  }
  if (me == 0) {
    EXPECT_EQ(seen.aborts, 1);
    EXPECT_NE(seen.reason.find("TIMEOUT: rank " + std::to_string(late) +
                               " did not reach 'the step' within 1 s (last at 'warm up')"),
              std::string::npos)
        << seen.reason;
  } else {
    EXPECT_EQ(seen.aborts, 0);
  }
}

// When rank 0 ends a stalled run, every rank (the late one too) first runs the work it
// registered with on_abort (NCCL communicators in real runs), and rank 0 ends the job only after
// the others said they are done: each peer's local abort takes 300 ms here, and rank 0's abort
// action must come after the last of them finished (one host: the clocks are the same).
TEST(WatchdogMpi, LocalAbortsRunOnEveryRankBeforeTheJobEnds) {
  const int me = comm_rank(MPI_COMM_WORLD);
  Observed seen;
  std::atomic<int> ran{0};
  std::atomic<double> done_at_us{0};
  double aborted_at_us = 0;
  {
    Watchdog::Options o = test_options(seen, 1.0);
    o.abort_action = [&](ExitCode) {
      std::lock_guard lock(seen.mutex);
      ++seen.aborts;
      aborted_at_us = now_us();
    };
    Watchdog wd(MPI_COMM_WORLD, o, rank_names(), nullptr);
    auto registration = wd.on_abort([&] {
      if (me != 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ++ran;
      done_at_us = now_us();
    });
    // Registered and dropped again: must not run.
    {
      auto dropped = wd.on_abort([] { ADD_FAILURE() << "an unregistered local abort ran"; });
    }
    last_rank_arrives_late(wd, 2000);
    await_local_abort(ran);  // the notice reaches the other ranks within a few polls
    wd.stop();
  }
  EXPECT_EQ(ran.load(), 1) << "rank " << me;
  double last_peer_done = 0;
  const double mine = me == 0 ? 0.0 : done_at_us.load();
  MPI_Reduce(&mine, &last_peer_done, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (me == 0) {
    EXPECT_EQ(seen.aborts, 1);
    EXPECT_LE(done_at_us.load(), aborted_at_us);  // its own local abort first
    if (comm_size(MPI_COMM_WORLD) > 1) {
      EXPECT_GT(last_peer_done, 0.0);
      EXPECT_LE(last_peer_done, aborted_at_us) << "rank 0 ended the job before its peers were done";
    }
  }
}

// What each rank reports when the run is ended (the telemetry of the phase it was in, in real
// runs) reaches rank 0's hook: rank r sends r x 100 KiB (more than one channel message from rank
// 1 on), rank 0 its own 3 bytes, every byte intact; one report over the bound is left out, and a
// dropped registration reports nothing.
TEST(WatchdogMpi, AbortReportsReachRankZerosHookWhole) {
  const int me = comm_rank(MPI_COMM_WORLD);
  const int size = comm_size(MPI_COMM_WORLD);
  auto report_of = [](int rank) {
    if (rank == 0) return std::string("r0!");
    std::string bytes(static_cast<std::size_t>(rank) * (100 << 10), '\0');
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      bytes[i] = static_cast<char>((i * 31 + static_cast<std::size_t>(rank)) % 251);
    }
    return bytes;
  };
  Observed seen;
  std::vector<std::string> received;
  {
    Watchdog* self = nullptr;
    Watchdog wd(MPI_COMM_WORLD, test_options(seen, 1.0), rank_names(),
                [&](const std::string& reason) {
                  std::vector<std::string> reports = self->abort_reports();
                  std::lock_guard lock(seen.mutex);
                  seen.reason = reason;
                  received = std::move(reports);
                });
    self = &wd;
    auto mine = wd.on_abort_report([&] { return report_of(me); });
    auto too_big =
        wd.on_abort_report([] { return std::string(Watchdog::kMaxAbortReport + 1, 'x'); });
    {
      auto dropped = wd.on_abort_report([] {
        ADD_FAILURE() << "an unregistered report ran";
        return std::string("dropped");
      });
    }
    last_rank_arrives_late(wd, 2000);
    wd.stop();
  }
  if (me != 0) return;
  EXPECT_EQ(seen.aborts, 1);
  ASSERT_EQ(received.size(), static_cast<std::size_t>(size)) << seen.reason;
  for (int r = 0; r < size; ++r) {
    const std::string want = report_of(r);
    EXPECT_EQ(received[static_cast<std::size_t>(r)].size(), want.size()) << "rank " << r;
    EXPECT_TRUE(received[static_cast<std::size_t>(r)] == want) << "rank " << r << "'s bytes differ";
  }
}

// A signal on one rank (here the last, as `kill -TERM <pid>` or srun forwarding it would do):
// that rank tells rank 0, rank 0 pings the others, every one answers, and the run is ended with
// the reason naming the signal and the rank, once.
TEST(WatchdogMpi, ASignalOnOneRankEndsTheRunNamingIt) {
  const int signalled = comm_size(MPI_COMM_WORLD) - 1;
  const int me = comm_rank(MPI_COMM_WORLD);
  Observed seen;
  std::atomic<int> signal{0};
  {
    Watchdog::Options o = test_options(seen, 30);
    o.pending_signal = [&] { return signal.load(); };
    Watchdog wd(MPI_COMM_WORLD, o, rank_names(), [&](const std::string& reason) {
      std::lock_guard lock(seen.mutex);
      seen.reason = reason;
    });
    wd.step("working");
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == signalled) signal = SIGTERM;
    // Rank 0 decides within a few polls (every rank answers its ping at once).
    for (int i = 0; me == 0 && i < 300 && !wd.tripped(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (me == 0) {
      EXPECT_TRUE(wd.tripped());
    }
    MPI_Barrier(MPI_COMM_WORLD);
    wd.stop();
  }
  if (me == 0) {
    EXPECT_EQ(seen.aborts, 1);
    EXPECT_EQ(seen.reason, "interrupted by SIGTERM on rank " + std::to_string(signalled) +
                               ": Slurm time limit, scancel or Ctrl-C");
  } else {
    EXPECT_EQ(seen.aborts, 0);
  }
}

// Heartbeats keep a long, quiet step from looking like silence: every rank sits 1.5 s in one
// step with a 10 s timeout, reporting nothing new (a peer is stale after 3 heartbeats, 0.6 s),
// and nothing trips.
TEST(WatchdogMpi, QuietRanksKeepAnswering) {
  Observed seen;
  {
    Watchdog::Options o = test_options(seen, 10);
    o.heartbeat_s = 0.2;
    Watchdog wd(MPI_COMM_WORLD, o, rank_names(), nullptr);
    wd.step("long quiet step");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    MPI_Barrier(MPI_COMM_WORLD);
    wd.stop();
    EXPECT_FALSE(wd.tripped());
  }
  EXPECT_EQ(seen.aborts, 0);
}

// The measured path's MPI runs at the level chosen (MpiEnvironment, as in shakedown itself:
// MPI_THREAD_SINGLE unless SHAKEDOWN_MPI_THREAD=funneled),
// and the watchdog's threads keep to their own channel: a stall caught, its local aborts run on
// every rank and rank 0 waiting for their acks, a signal reported and every rank pinged, all
// without one MPI call from a thread other than the main one (counted by mpi_offthread.cpp).
TEST(WatchdogMpi, ItsThreadsCallNoMpiAtTheChosenLevel) {
  int level = -1;
  ASSERT_EQ(MPI_Query_thread(&level), MPI_SUCCESS);
  EXPECT_EQ(level, requested_thread_level());
  if (std::getenv("SHAKEDOWN_MPI_THREAD") == nullptr) {
    EXPECT_EQ(level, MPI_THREAD_SINGLE);
  }
  const int before = testing_support::mpi_calls_off_main_thread();
  const int me = comm_rank(MPI_COMM_WORLD);
  const int last = comm_size(MPI_COMM_WORLD) - 1;
  Observed seen;
  std::atomic<int> ran{0};
  std::atomic<int> signal{0};
  {
    Watchdog::Options o = test_options(seen, 1.0);
    o.heartbeat_s = 0.1;
    o.pending_signal = [&] { return signal.load(); };
    Watchdog wd(MPI_COMM_WORLD, o, rank_names(), nullptr);
    auto registration = wd.on_abort([&] { ++ran; });
    last_rank_arrives_late(wd, 2000);
    await_local_abort(ran);
    if (me == last) signal = SIGTERM;  // after the abort: reported and pinged, not acted on
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    MPI_Barrier(MPI_COMM_WORLD);
    wd.stop();
  }
  EXPECT_EQ(ran.load(), 1) << "rank " << me;
  if (me == 0) {
    EXPECT_EQ(seen.aborts, 1);
  }
  EXPECT_EQ(testing_support::mpi_calls_off_main_thread(), before)
      << "first: " << testing_support::first_mpi_call_off_main_thread();
}
