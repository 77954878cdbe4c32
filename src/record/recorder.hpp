#pragma once
// The MPI side of recording: per-rank rows are gathered to rank 0, which alone owns the RunWriter
// (serial HDF5). Creation is collective so every rank fails the same way when the file cannot be
// made. The writer is guarded by a mutex because the watchdog thread may mark the file aborted.
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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

  // Gathers one record per rank to rank 0 (empty vector on other ranks). Collective.
  template <class T>
  std::vector<T> gather(const T& mine) const {
    return gather_records(ctx_.world(), 0, mine);
  }

  // Runs `fn` with the writer on rank 0 only (no-op elsewhere). Each RunWriter call flushes and
  // closes the file, so a phase's data is safe once its write returns. Once the file is marked
  // aborted (the job is ending under the main thread's feet), it throws RunAborted instead.
  void write(const std::function<void(RunWriter&)>& fn);

  // Normal end: status complete (or aborted), rename .partial -> final. Rank 0 only; no-op
  // elsewhere.
  void finish(const std::string& status);
  // From any thread on rank 0: record the reason and mark the file aborted. Gives up (saying so
  // on stderr) if the writer stays busy, rather than deadlocking a hung run, and never reopens
  // a file whose writing failed (a full disk): that file keeps status running, readable.
  void mark_aborted(const std::string& reason) noexcept;

 private:
  const Context& ctx_;
  std::optional<RunWriter> writer_;
  std::timed_mutex mutex_;
  bool finished_ = false;
  bool aborted_ = false;
};

}  // namespace shakedown
