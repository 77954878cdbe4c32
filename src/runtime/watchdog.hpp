#pragma once
// The watchdog: every rank walks the same sequence of named steps (init, barriers, phases,
// collectives per size). A thread on each rank reports its rank's position to a thread on rank 0,
// which notices when a step outlives its timeout and names the ranks that never reached it
// (e.g. "rank 1 (host vm, node 0) did not reach 'phase inventory' within 5 s; it was last at
// 'clock sync'"). The run then ends with exit 3 through MPI_Abort: a hang cannot be turned into
// an exception, because the main threads are blocked inside MPI. The threads talk over TCP
// connections of their own (runtime/oob.hpp), not MPI, so MPI runs at MPI_THREAD_SINGLE.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "runtime/mpi.hpp"

namespace shakedown {

class OobChannel;

// Whether a rank's watchdog thread still talks to rank 0. A stopped or dead process stops its
// watchdog thread too, so silence tells a frozen rank from one waiting inside a collective.
enum class Liveness {
  kAnswering,  // heard from within the heartbeat window
  kSilent,     // not heard from: frozen or dead, or its node is down (cannot tell which)
  kStopped,    // on rank 0's host, and its process is stopped (SIGSTOP, a debugger)
  kGone,       // on rank 0's host, and its process has ended
};
// What a silent rank's state means, for messages ("its process has ended").
std::string liveness_text(Liveness liveness);

// Which ranks are behind, and what to say about them. Pure, so it is unit-tested.
struct RankPosition {
  std::int64_t seq = 0;
  std::string label;
  Liveness liveness = Liveness::kAnswering;
  double silent_s = 0;    // seconds since rank 0 last heard from it
  std::int64_t done = 0;  // units of its current step done (timed iterations), 0 = not counted
  double idle_s = 0;      // seconds since `done` last changed (or since the step began)
};
// A step some rank has reached: its label, how long ago it was first reached, its timeout, and
// what the phase said about its length: units to do (0 = not counted) and an estimate.
struct StepSeen {
  std::string label;
  double since_s = 0;
  double timeout_s = 0;
  std::int64_t total = 0;
  double expected_s = 0;  // the phase's estimate of the step's length, 0 = none
  std::string basis;      // what the estimate rests on: "the 8 MiB rate"
};
struct StallReport {
  bool stalled = false;
  std::string message;
  std::vector<int> laggards;  // the ranks furthest behind: they never reached the next step
};
// The ranks furthest behind are overdue when the step after theirs was first reached (by anyone)
// longer ago than its timeout; if every rank is at the same step, all of them are overdue once
// that step outlives its timeout. `steps` must hold every sequence number in `positions`.
// The message then says which of three things it is: (a) ranks that stopped answering (named:
// frozen, dead or their node down); (b) every rank alive inside the step without progress (a
// hang in the fabric or a library); (c) every rank alive and progressing, but the step needs
// longer than its timeout (with the estimate from the progress rate or the phase's estimate).
// When the evidence is not clear yet (a rank answered late but is not silent yet, or the slowest
// rank's count paused briefly), it waits: a frozen rank is named, not called a hang.
struct AssessLimits {
  double late_s = 1.5;         // not heard from for this long: wait until it is answering or silent
  double progress_idle_s = 5;  // a count that has not moved for this long is not progressing
};
StallReport assess_positions(const std::vector<RankPosition>& positions,
                             const std::vector<std::string>& rank_names,
                             const std::map<std::int64_t, StepSeen>& steps,
                             const AssessLimits& limits = AssessLimits());

// Why rank 0 ends an interrupted run, from who answered its ping after the signal: every rank
// answered -> "interrupted by SIGTERM on <rank>: <cause>"; some did not -> they ended first (when
// rank 0 can tell: same host) or the launcher ended the job. Pure, so it is unit-tested.
// `silent` holds the ranks that did not answer and their liveness.
std::string interrupt_reason(int signal, const std::string& signalled_rank,
                             const std::vector<std::pair<std::string, Liveness>>& silent);

// Ends the whole job with `code` (MPI_Abort on MPI_COMM_WORLD). The one place besides main()
// that decides the process's exit: a hang or a failure on one rank cannot reach main() on the
// others, which are blocked inside MPI.
[[noreturn]] void abort_job(ExitCode code);

class Watchdog {
 public:
  struct Options {
    double step_timeout_s = 300;  // timeouts.phase_s
    double run_timeout_s = 3600;  // timeouts.run_s
    double poll_s = 0.05;         // how often positions are reported and checked
    // A rank's watchdog reports at least this often, so rank 0 can tell a rank that stopped
    // answering (frozen, dead) from one inside a long step; silent for 3 heartbeats = silent.
    double heartbeat_s = 1.0;
    // Where signals are read (SignalWatch::pending); null: signals are not watched.
    std::function<int()> pending_signal;
    // After a signal, how long rank 0 waits for the other ranks to answer its ping (the ones
    // that do not are named), and how long another rank waits for rank 0 to end the job before
    // it ends it itself. mpirun kills its ranks 1 s after it was signalled: keep both short.
    double interrupt_wait_s = 0.4;
    double interrupt_grace_s = 3;
    // How the job ends; tests replace it to observe a stall without dying. If it returns, the
    // watchdog stops judging and the run goes on.
    std::function<void(ExitCode)> abort_action = [](ExitCode code) { abort_job(code); };
    // How long rank 0 waits for the other ranks to run their local aborts (on_abort) before it
    // ends the job; a rank that is dead or wedged does not answer, so this bounds the wait.
    double abort_grace_s = 5;
    // How long the other ranks have to connect to rank 0's watchdog at start-up
    // (timeouts.init_s).
    double connect_timeout_s = 60;
  };
  // Called on rank 0 before the job ends, with the reason (e.g. to mark the HDF5 file aborted).
  using AbortHook = std::function<void(const std::string& reason)>;
  // Work a rank abandons when the watchdog ends the job, e.g. ncclCommAbort on its live NCCL
  // communicators, so GPU kernels waiting on a dead peer are torn down before MPI_Abort. Runs
  // on the rank's watchdog thread (rank 0 tells every rank first), at most once, bounded in time.
  using LocalAbort = std::function<void()>;
  // What a rank has to say when the watchdog ends the job, e.g. the hardware telemetry of the
  // phase it was in: its bytes go to rank 0 with the rank's acknowledgement, which hands them to
  // the AbortHook (abort_reports). Runs after the LocalAborts, on the same thread and within
  // the same time limit; at most kMaxAbortReport bytes (a longer one is left out, said).
  using AbortReport = std::function<std::string()>;
  static constexpr std::size_t kMaxAbortReport = std::size_t{768} << 10;
  // The registered LocalAborts and AbortReports, shared with the thread that runs them (which
  // may outlive a watchdog whose abort action returned). Its mutex is held while they run.
  struct LocalAborts {
    std::mutex mutex;
    std::map<int, LocalAbort> fns;
    std::map<int, AbortReport> reports;
    int next_id = 0;
  };
  // Keeps a LocalAbort registered while it lives; its destructor waits for a run in progress.
  class AbortRegistration {
   public:
    AbortRegistration() = default;
    AbortRegistration(std::shared_ptr<LocalAborts> owner, int id)
        : owner_(std::move(owner)), id_(id) {}
    AbortRegistration(AbortRegistration&& other) noexcept = default;
    AbortRegistration& operator=(AbortRegistration&& other) noexcept {
      if (this != &other) {
        reset();
        owner_ = std::move(other.owner_);
        id_ = other.id_;
      }
      return *this;
    }
    AbortRegistration(const AbortRegistration&) = delete;
    AbortRegistration& operator=(const AbortRegistration&) = delete;
    ~AbortRegistration() { reset(); }
    void reset();

   private:
    std::shared_ptr<LocalAborts> owner_;
    int id_ = 0;
  };

  // Collective over `world` (main thread): sets up the watchdog's connections to rank 0.
  // `rank_names[r]` is how messages name rank r.
  Watchdog(MPI_Comm world, Options options, std::vector<std::string> rank_names, AbortHook hook);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // What a phase knows about a step's length when it begins it.
  struct StepPlan {
    std::int64_t total = 0;  // units (timed iterations) it will count with progress(); 0 = none
    double expected_s = 0;   // its estimate of the step's length, 0 = none
    std::string basis;       // what the estimate rests on ("the 8 MiB rate"), short
  };
  // This rank enters the next step. Every rank must pass the same steps in the same order.
  void step(const std::string& label) { step(label, options_.step_timeout_s); }
  void step(const std::string& label, double timeout_s) { step(label, timeout_s, StepPlan()); }
  void step(const std::string& label, double timeout_s, const StepPlan& plan);
  // Units of the current step done so far, set by the measuring loop (a relaxed store: cheap
  // enough for every iteration); step() resets it to 0. Tells "slow but progressing" from hung.
  std::atomic<std::int64_t>& progress() noexcept { return progress_; }
  // MPI_Barrier on `comm` as a named step.
  void barrier(MPI_Comm comm, const std::string& label);
  // Normal end of the run; every rank calls it. Rank 0 waits until every rank has said so.
  void stop();

  // This rank failed (an exception the others cannot see): print it naming this rank (unless
  // `named`: the message names the rank it is about already), have rank 0 record it in the run
  // file, and end the job with `code`. `detail` (a library's error stack) is printed on a line
  // of its own after the message and not recorded. Never returns.
  [[noreturn]] void fail(ExitCode code, const std::string& message, const std::string& detail = "",
                         bool named = false);

  // Another rank (rank 0) is ending the job: wait for it, and end it from here if it does not
  // within a grace period. Never returns.
  [[noreturn]] void await_abort(ExitCode code);

  // True once the abort action ran and returned (tests only).
  bool tripped() const;

  // Registers `fn` to run when the watchdog ends the job (see LocalAbort).
  [[nodiscard]] AbortRegistration on_abort(LocalAbort fn);
  // Registers `fn` to report when the watchdog ends the job (see AbortReport).
  [[nodiscard]] AbortRegistration on_abort_report(AbortReport fn);

  // Rank 0, from the AbortHook: has every rank run its LocalAborts and AbortReports (once; the
  // watchdog would do it after the hook otherwise), waits for their acknowledgements as long as
  // it would anyway, and returns the reports that arrived whole, rank 0's own first. Empty on
  // the other ranks, and after a signal: the launcher kills the ranks within about a second
  // of it, and the run file must be closed by then.
  std::vector<std::string> abort_reports();

 private:
  void run_root();
  void run_peer();
  // The position this rank reports now.
  struct Report;
  Report current() const;
  // Prints (when asked), tells the peers (rank 0), runs the hook, ends the job. Returns only if
  // abort_action returns.
  void abort_run(ExitCode code, const std::string& reason, bool print);
  // Runs the registered LocalAborts, then the AbortReports, once, giving up on them after
  // `limit_s`; returns the reports, framed (empty when there are none or they timed out).
  std::string run_local_aborts(double limit_s);
  // A peer: sends its framed reports to rank 0 in pieces, then its acknowledgement.
  void send_abort_ack(const std::string& report);
  // Rank 0: a peer's acknowledgement (`ack`) or a piece of its report (either thread).
  void absorb_abort_message(int peer, bool ack, const std::string& payload);
  // Rank 0: runs its own LocalAborts, then waits (bounded) for the peers' acks of the notice
  // abort_run sent them (each runs its LocalAborts and AbortReports on it). Once.
  void notify_peers_and_wait();

  Options options_;
  std::vector<std::string> rank_names_;
  AbortHook hook_;
  std::unique_ptr<OobChannel> channel_;
  int rank_ = 0;
  int size_ = 1;
  double start_us_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::int64_t seq_ = 0;
  std::string label_ = "start";
  double timeout_s_ = 0;
  double step_started_us_ = 0;
  StepPlan plan_;
  std::atomic<std::int64_t> progress_{0};
  // Every rank's process id and host identity (boot id and pid namespace), so rank 0 can look
  // at the processes on its own host that stopped answering.
  std::vector<long> pids_;
  std::vector<std::string> host_ids_;
  std::vector<bool> skip_ack_;  // rank 0: ranks known silent, not waited for after an abort
  bool stop_requested_ = false;
  bool abandon_ = false;  // error path: leave without the closing handshake
  bool tripped_ = false;
  std::once_flag abort_once_;

  std::shared_ptr<LocalAborts> local_ = std::make_shared<LocalAborts>();
  std::once_flag local_once_;
  std::atomic<int> abort_acks_{0};  // rank 0: peers that ran their local aborts
  std::once_flag notify_once_;
  std::atomic<bool> interrupted_{false};  // rank 0: the abort is a signal's
  // Rank 0: the peers' reports as they arrive, by rank (pieces placed at their offsets), the
  // size each announced with its ack, and bytes received; rank 0's own under 0.
  struct Reports {
    std::mutex mutex;
    std::map<int, std::string> bytes;
    std::map<int, std::uint64_t> announced;
    std::map<int, std::uint64_t> received;
  };
  Reports reports_;
  // A peer: rank 0 said it is ending the job (it is marking the run file, then ends the job).
  std::atomic<bool> rank0_ending_{false};

  std::thread thread_;
};

}  // namespace shakedown
