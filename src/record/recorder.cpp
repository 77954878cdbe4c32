#include "record/recorder.hpp"

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "core/error.hpp"
#include "record/h5.hpp"
#include "record/schema.hpp"
#include "topology/cpu_list.hpp"

namespace shakedown {
namespace {

std::string cpu_text(const cpu_set_t& set) {
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return format_cpu_list(std::move(cpus));
}

}  // namespace

Recorder::Recorder(const Context& ctx, const std::filesystem::path& final_path, const RunMeta& meta,
                   int compression)
    : ctx_(ctx), final_path_(final_path) {
  // Rank 0 tries; the outcome (exit code + message) is broadcast so all ranks agree.
  int code = 0;
  std::string message;
  if (ctx.is_root()) {
    try {
      writer_.emplace(RunWriter::create(final_path, meta, compression));
      // Open for the whole run: every write still ends flushed (readable if the job dies),
      // without reopening the file, and reloading its metadata, for each message size.
      writer_->hold_open();
    } catch (const Error& e) {
      code = static_cast<int>(e.code());
      message = e.what();
    } catch (const std::exception& e) {
      code = static_cast<int>(ExitCode::kRuntime);
      message = std::string("cannot create ") + final_path.string() + ": " + e.what();
    }
  }
  SD_MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, 0, ctx.world()));
  message = bcast_string(ctx.world(), 0, message);
  if (code != 0) throw AgreedError(static_cast<ExitCode>(code), message, ctx.is_root());
  // Rank 0's writer thread runs on rank 0's own CPUs when it may use 2 or more; bound to one,
  // rank 0 writes inline until use_free_cpus offers CPUs no rank is bound to.
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (writer_ && sched_getaffinity(0, sizeof mine, &mine) == 0 && CPU_COUNT(&mine) >= 2) {
    thread_ = std::thread([this] { worker(); });
    writer_cpus_ = cpu_text(mine);
  }
}

void Recorder::use_free_cpus(const std::vector<int>& cpus) {
  if (!writer_ || background() || cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  }
  if (CPU_COUNT(&set) == 0) return;
  thread_ = std::thread([this] { worker(); });
  cpu_set_t placed;
  CPU_ZERO(&placed);
  // The kernel keeps to the job's cpuset: what the thread got is read back.
  if (pthread_setaffinity_np(thread_.native_handle(), sizeof set, &set) != 0 ||
      pthread_getaffinity_np(thread_.native_handle(), sizeof placed, &placed) != 0 ||
      CPU_COUNT(&placed) == 0) {
    stop_thread();  // not allowed there: rank 0 goes on writing inline
    return;
  }
  writer_cpus_ = cpu_text(placed);
}

void Recorder::stop_thread() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  queue_changed_.notify_all();
  thread_.join();
}

Recorder::~Recorder() {
  stop_thread();
}

void Recorder::worker() {
  // HDF5's error printing is per thread in a thread-safe build (Debian's): this thread writes
  // to the file held open and never passes through open_file, so it silences its own.
  h5::quiet_errors();
  // SCHED_BATCH: the same share of the CPU as before, but a wake-up does not preempt the thread
  // running there. Woken by each job, this thread used to take the core of the rank that had
  // just queued the job, in the middle of its measurement, while the other ranks waited for it
  // at the next barrier: the CPU smoke collectives phase (2 ranks, 2 cores) read
  // wall/(timed + preparation) 1.06-1.29 with the phase's rows drained, 1.03-1.08 with this.
  // Best effort: where the call fails the thread keeps the normal policy.
  {
    sched_param normal{};
    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &normal);
  }
  using Clock = std::chrono::steady_clock;
  Clock::time_point flushed = Clock::now();
  bool dirty = false;           // a job's writes wait for their flush
  const auto flush_now = [&] {  // the caller holds mutex_
    if (!aborted_ && !failure_) {
      try {
        writer_->flush();
      } catch (...) {
        std::lock_guard q(queue_mutex_);
        failure_ = std::current_exception();
      }
    }
    dirty = false;
    flushed = Clock::now();
  };
  for (;;) {
    bool job_ready = true;
    {
      std::unique_lock lock(queue_mutex_);
      const auto ready = [this] {
        return stopping_ || (!queue_.empty() && (!held_ || queued_bytes_ >= kQueueBytes / 2));
      };
      if (dirty) {
        job_ready = queue_changed_.wait_until(lock, flushed + kFlushInterval, ready);
      } else {
        queue_changed_.wait(lock, ready);
      }
      if (job_ready && queue_.empty()) {  // stopping, nothing left
        lock.unlock();
        std::lock_guard writer_lock(mutex_);
        if (dirty) flush_now();
        return;
      }
    }
    // The writer first, then the job off the queue: a job is always either queued or being
    // written, so mark_aborted (which holds the writer while it runs what is queued) never
    // misses one taken off the queue but not yet written.
    std::lock_guard writer_lock(mutex_);
    if (!job_ready) {  // the deadline of the rows written last
      flush_now();
      continue;
    }
    Job job;
    {
      std::lock_guard lock(queue_mutex_);
      if (queue_.empty()) continue;  // mark_aborted ran them meanwhile
      job = std::move(queue_.front());
      queue_.pop_front();
      running_job_ = true;
    }
    if (!aborted_ && !failure_) {  // after a failure the file takes nothing more
      writer_->defer_flushes(true);
      try {
        job.fn(*writer_);
      } catch (...) {
        std::lock_guard q(queue_mutex_);
        failure_ = std::current_exception();
      }
      writer_->defer_flushes(false);
      dirty = writer_->unflushed();
      if (dirty && Clock::now() - flushed >= kFlushInterval) flush_now();
    }
    {
      std::lock_guard lock(queue_mutex_);
      running_job_ = false;
      queued_bytes_ -= job.bytes;
    }
    queue_changed_.notify_all();
  }
}

void Recorder::rethrow_failure() {
  std::exception_ptr e;
  {
    std::lock_guard lock(queue_mutex_);
    e = failure_;
  }
  if (e) std::rethrow_exception(e);
}

void Recorder::write_async(std::function<void(RunWriter&)> job, std::size_t bytes) {
  if (!writer_) return;
  rethrow_failure();
  if (!background()) {
    write(job);
    return;
  }
  {
    std::unique_lock lock(queue_mutex_);
    // Room for it (one job alone may exceed the bound).
    queue_changed_.wait(lock, [&] {
      return queued_bytes_ == 0 || queued_bytes_ + bytes <= kQueueBytes || failure_;
    });
    if (failure_) std::rethrow_exception(failure_);  // a job failed while this one waited
    if (aborted_) throw RunAborted("the run file was marked aborted; the job is ending");
    queue_.push_back({std::move(job), bytes});
    queued_bytes_ += bytes;
  }
  queue_changed_.notify_all();
}

Recorder::Hold::Hold(Recorder& r) : r_(r) {
  std::lock_guard lock(r_.queue_mutex_);
  r_.held_ = true;
}

Recorder::Hold::~Hold() {
  {
    std::lock_guard lock(r_.queue_mutex_);
    r_.held_ = false;
  }
  r_.queue_changed_.notify_all();
}

void Recorder::drain() {
  if (!writer_) return;
  if (background()) {
    {
      std::lock_guard lock(queue_mutex_);
      held_ = false;
    }
    queue_changed_.notify_all();
    std::unique_lock lock(queue_mutex_);
    queue_changed_.wait(lock, [this] { return queue_.empty() && !running_job_; });
  }
  rethrow_failure();
}

void Recorder::run_queued_locked() {
  std::deque<Job> jobs;
  {
    std::lock_guard lock(queue_mutex_);
    jobs.swap(queue_);
  }
  for (Job& job : jobs) {
    if (failure_) break;
    try {
      job.fn(*writer_);
    } catch (...) {
      std::lock_guard lock(queue_mutex_);
      failure_ = std::current_exception();
    }
  }
  std::lock_guard lock(queue_mutex_);
  for (const Job& job : jobs) queued_bytes_ -= job.bytes;
  queue_changed_.notify_all();
}

void Recorder::write(const std::function<void(RunWriter&)>& fn) {
  if (!writer_) return;
  drain();
  std::lock_guard lock(mutex_);
  if (aborted_) throw RunAborted("the run file was marked aborted; the job is ending");
  writer_->flush();  // rows the thread left for a deferred flush, before `fn` reads or writes
  fn(*writer_);
}

void Recorder::finish(const std::string& status) {
  if (!writer_) return;
  drain();
  std::lock_guard lock(mutex_);
  if (aborted_) throw RunAborted("the run file was marked aborted; the job is ending");
  if (finished_) return;
  writer_->finish(status);
  finished_ = true;
}

bool Recorder::mark_aborted(const std::string& reason, const std::string& phase) noexcept {
  if (!writer_) return false;
  h5::quiet_errors();  // called from the watchdog's thread (see worker())
  // Up to 5 s, by try_lock: try_lock_for waits in pthread_mutex_clocklock, which
  // ThreadSanitizer does not see, so the writes below would look unordered with the worker's.
  std::unique_lock lock(mutex_, std::defer_lock);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!lock.try_lock() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!lock.owns_lock()) {
    std::fprintf(stderr,
                 "shakedown: the run file is busy; it keeps its status (running, or complete "
                 "when every phase had ended): %s\n",
                 writer_->partial_path().c_str());
    return false;
  }
  if (finished_) return false;  // complete already: the data is whole, only the shutdown failed
  // Why, and status aborted, reach the disk first: the job may end any moment now (a peer that
  // gives up waiting), and a file left saying "running" would tell nobody what happened.
  if (!writer_->broken()) {
    try {
      writer_->set_attr("/", schema::kAttrAbortReason, reason);
      if (!phase.empty()) writer_->set_attr("/", schema::kAttrAbortPhase, phase);
      writer_->set_status(schema::kStatusAborted);
      writer_->flush();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shakedown: could not mark %s aborted: %s\n",
                   writer_->partial_path().c_str(), e.what());
    }
  }
  if (!writer_->broken()) run_queued_locked();  // then the measured rows still queued
  {
    std::lock_guard q(queue_mutex_);
    aborted_ = true;
  }
  queue_changed_.notify_all();
  if (writer_->broken()) {
    std::fprintf(stderr,
                 "shakedown: the run file %s keeps status running: it cannot be written (%s); "
                 "everything written before is readable (shakedown summary %s)\n",
                 writer_->partial_path().c_str(), writer_->io_error().c_str(),
                 writer_->partial_path().c_str());
    return false;
  }
  {
    std::lock_guard writes(abort_writes_mutex_);
    for (auto& [id, fn] : abort_writes_) {
      if (writer_->broken()) break;
      try {
        fn(*writer_);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "shakedown: could not add to the aborted run file %s: %s\n",
                     writer_->partial_path().c_str(), e.what());
      }
    }
  }
  if (writer_->broken()) return false;  // said by the write that failed; it keeps status running
  try {
    writer_->finish(schema::kStatusAborted);
    finished_ = true;
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shakedown: could not mark %s aborted: %s\n",
                 writer_->partial_path().c_str(), e.what());
  }
  return false;
}

std::unique_ptr<Recorder::AbortWriteRegistration> Recorder::on_abort(AbortWrite fn) {
  std::lock_guard lock(abort_writes_mutex_);
  const int id = next_abort_write_++;
  abort_writes_.emplace(id, std::move(fn));
  return std::make_unique<AbortWriteRegistration>(*this, id);
}

Recorder::AbortWriteRegistration::~AbortWriteRegistration() {
  std::lock_guard lock(owner_.abort_writes_mutex_);
  owner_.abort_writes_.erase(id_);
}

}  // namespace shakedown
