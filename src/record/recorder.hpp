#pragma once
// The MPI side of recording: per-rank rows are gathered to rank 0, which alone owns the RunWriter
// (serial HDF5). Creation is collective so every rank fails the same way when the file cannot be
// made. The writer is guarded by a mutex because the watchdog thread may mark the file aborted.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "record/run_meta.hpp"
#include "record/serialize.hpp"
#include "record/writer.hpp"
#include "runtime/context.hpp"

namespace shakedown {

// Thrown on rank 0's main thread by a write after the file was marked aborted: the job is being
// ended (a signal, a failure elsewhere) and this thread should stop where it is and wait.
class RunAborted : public RuntimeFault {
 public:
  using RuntimeFault::RuntimeFault;
};

class Recorder {
 public:
  // Collective over ctx.world(). Throws the same error on every rank if rank 0 cannot create it.
  Recorder(const Context& ctx, const std::filesystem::path& final_path, const RunMeta& meta,
           int compression);

  // The run file's name once complete (every rank knows it).
  const std::filesystem::path& final_path() const noexcept { return final_path_; }

  // Gathers one record per rank to rank 0 (empty vector on other ranks). Collective.
  template <class T>
  std::vector<T> gather(const T& mine) const {
    return gather_records(ctx_.world(), 0, mine);
  }

  // Runs `fn` with the writer on rank 0 only (no-op elsewhere). The writer holds the file open
  // for the whole run (RunWriter::hold_open) and each of its calls ends with a flush, so a
  // phase's data is safe once its write returns. Once the file is marked
  // aborted (the job is ending under the main thread's feet), it throws RunAborted instead.
  void write(const std::function<void(RunWriter&)>& fn);

  // Queues `job` for rank 0's writer thread and returns at once (no-op on other ranks): for the
  // many writes of a phase that measures between them (one per message size), so HDF5's work
  // and compression overlap the next measurement instead of holding every rank up. `job` owns
  // what it writes (capture by value). Jobs run in order, and before any later write(); a job's
  // failure is thrown by the next write_async, write, drain or finish on this thread. The thread
  // is used only when rank 0 may run on 2 CPUs or more (its affinity mask), or, bound to one,
  // on CPUs of its host that no rank is bound to (use_free_cpus), so it never takes the one CPU
  // a measurement runs on; otherwise the job runs here, at once. `bytes` is about what
  // the job holds: queued jobs are held to kQueueBytes, beyond which this waits.
  // The thread flushes the file at most every kFlushInterval and at the latest kFlushInterval
  // after a job (HDF5's flush of its metadata cache costs more than a small size's rows; one
  // flush per size was a third of the thread's CPU in the smoke run), so a rank 0 killed
  // outright loses at most the rows of the last kFlushInterval; write(), finish() and
  // mark_aborted() flush everything before them.
  static constexpr std::size_t kQueueBytes = 256u << 20;
  static constexpr std::chrono::milliseconds kFlushInterval{200};
  void write_async(std::function<void(RunWriter&)> job, std::size_t bytes);
  // Waits until every queued job has run; rethrows the first failure of one. Ends a hold.
  void drain();
  // While held, the writer thread leaves queued jobs alone (unless they pass half of
  // kQueueBytes): for a phase whose measurements use every CPU of rank 0 (the train phase's CPU
  // GEMMs), so HDF5's work waits for the phase's end instead of slowing rank 0 alone. Jobs held
  // are still written by mark_aborted when the run ends early. Rank 0 only; no-op elsewhere.
  class Hold {
   public:
    explicit Hold(Recorder& r);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    Recorder& r_;
  };
  // Whether write_async uses the writer thread (rank 0), for the run file's record of it.
  bool background() const noexcept { return !writer_cpus_.empty(); }
  // Rank 0 bound to one CPU writes inline; given the CPUs of its host that no rank is bound to
  // (host_free_cpus, once the ranks' bindings are known), its writer thread runs there from now
  // on. Where the job's cpuset refuses them, or there are none, rank 0 goes on writing inline.
  // No-op on other ranks and when the thread runs already.
  void use_free_cpus(const std::vector<int>& cpus);
  // The CPUs the writer thread runs on ("0-1", rank 0's own or free ones), "" when rank 0
  // writes inline.
  const std::string& writer_cpus() const noexcept { return writer_cpus_; }

  // Normal end: status complete (or aborted), rename .partial -> final. Rank 0 only; no-op
  // elsewhere.
  void finish(const std::string& status);
  // From any thread on rank 0: record the reason and mark the file aborted. Gives up (saying so
  // on stderr) if the writer stays busy, rather than deadlocking a hung run, and never reopens
  // a file whose writing failed (a full disk): that file keeps status running, readable.
  // Queued jobs (measured rows not yet written) are written first.
  // `phase`: the phase the run was in ("" between phases), recorded with the reason. Then the
  // registered AbortWrites run, and the file is closed.
  // True when the file is now closed with status aborted (false: it could not be, said on
  // stderr, or the run had completed already).
  bool mark_aborted(const std::string& reason, const std::string& phase = "") noexcept;

  // What to add to the file when it is marked aborted, after the reason, the status and the
  // queued rows, before it is closed: e.g. the telemetry of the phase the run ended in. Rank 0;
  // runs on the thread that marks the file. Registered while the returned object lives; its
  // destructor waits for a run in progress. A write that throws is said on stderr and skipped.
  // (The registration must not outlive the recorder: declare it after.)
  using AbortWrite = std::function<void(RunWriter&)>;
  class AbortWriteRegistration {
   public:
    AbortWriteRegistration(Recorder& owner, int id) : owner_(owner), id_(id) {}
    AbortWriteRegistration(const AbortWriteRegistration&) = delete;
    AbortWriteRegistration& operator=(const AbortWriteRegistration&) = delete;
    ~AbortWriteRegistration();

   private:
    Recorder& owner_;
    int id_ = 0;
  };
  [[nodiscard]] std::unique_ptr<AbortWriteRegistration> on_abort(AbortWrite fn);

  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

 private:
  struct Job {
    std::function<void(RunWriter&)> fn;
    std::size_t bytes = 0;
  };
  void worker();
  void stop_thread();
  // Runs queued jobs on this thread (the caller holds mutex_); keeps the first failure.
  void run_queued_locked();
  void rethrow_failure();

  const Context& ctx_;
  std::filesystem::path final_path_;
  std::optional<RunWriter> writer_;
  std::mutex mutex_;  // the writer: held while a job or a write runs
  bool finished_ = false;
  bool aborted_ = false;

  // The writer thread's CPUs ("" without one, rank 0 writing inline), and its queue.
  std::string writer_cpus_;
  std::mutex queue_mutex_;
  std::condition_variable queue_changed_;
  std::deque<Job> queue_;
  std::size_t queued_bytes_ = 0;
  bool running_job_ = false;
  bool stopping_ = false;
  bool held_ = false;           // Hold: the thread waits for the queue to fill or the hold to end
  std::exception_ptr failure_;  // the first job that threw, for the main thread
  std::mutex abort_writes_mutex_;  // held while the AbortWrites run
  std::map<int, AbortWrite> abort_writes_;
  int next_abort_write_ = 0;
  std::thread thread_;
};

}  // namespace shakedown
