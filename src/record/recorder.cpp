#include "record/recorder.hpp"

#include <chrono>
#include <cstdio>

#include "core/error.hpp"
#include "record/schema.hpp"

namespace shakedown {

Recorder::Recorder(const Context& ctx, const std::filesystem::path& final_path, const RunMeta& meta,
                   int compression)
    : ctx_(ctx) {
  // Rank 0 tries; the outcome (exit code + message) is broadcast so all ranks agree.
  int code = 0;
  std::string message;
  if (ctx.is_root()) {
    try {
      writer_.emplace(RunWriter::create(final_path, meta, compression));
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
}

void Recorder::write(const std::function<void(RunWriter&)>& fn) {
  if (!writer_) return;
  std::lock_guard lock(mutex_);
  if (aborted_) throw RunAborted("the run file was marked aborted; the job is ending");
  fn(*writer_);
}

void Recorder::finish(const std::string& status) {
  if (!writer_) return;
  std::lock_guard lock(mutex_);
  if (aborted_) throw RunAborted("the run file was marked aborted; the job is ending");
  if (finished_) return;
  writer_->finish(status);
  finished_ = true;
}

void Recorder::mark_aborted(const std::string& reason) noexcept {
  if (!writer_) return;
  std::unique_lock lock(mutex_, std::defer_lock);
  if (!lock.try_lock_for(std::chrono::seconds(5))) {
    std::fprintf(stderr, "shakedown: the run file is busy; it keeps status running: %s\n",
                 writer_->partial_path().c_str());
    return;
  }
  if (finished_) return;  // complete already: the data is whole, only the shutdown failed
  aborted_ = true;
  if (writer_->broken()) {
    std::fprintf(stderr,
                 "shakedown: the run file %s keeps status running: it cannot be written (%s); "
                 "everything written before is readable (shakedown summary %s)\n",
                 writer_->partial_path().c_str(), writer_->io_error().c_str(),
                 writer_->partial_path().c_str());
    return;
  }
  try {
    writer_->set_attr("/", schema::kAttrAbortReason, reason);
    writer_->finish(schema::kStatusAborted);
    finished_ = true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shakedown: could not mark %s aborted: %s\n",
                 writer_->partial_path().c_str(), e.what());
  }
}

}  // namespace shakedown
