#include "record/recorder.hpp"

#include <chrono>

#include "core/error.hpp"
#include "record/schema.hpp"

namespace shakedown {

Recorder::Recorder(const Context& ctx, const std::filesystem::path& final_path, const RunMeta& meta,
                   int compression)
    : ctx_(ctx), final_path_(final_path) {
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
  if (code != 0) throw Error(static_cast<ExitCode>(code), message);
}

void Recorder::write(const std::function<void(RunWriter&)>& fn) {
  if (!writer_) return;
  std::lock_guard lock(mutex_);
  fn(*writer_);
}

void Recorder::finish(const std::string& status) {
  if (!writer_) return;
  std::lock_guard lock(mutex_);
  if (finished_) return;
  writer_->finish(status);
  finished_ = true;
}

bool Recorder::mark_aborted(const std::string& reason) noexcept {
  if (!writer_) return false;
  std::unique_lock lock(mutex_, std::defer_lock);
  if (!lock.try_lock_for(std::chrono::seconds(5))) return false;
  if (finished_) return true;
  try {
    writer_->set_attr("/", std::string(schema::kAttrAbortReason), reason);
    writer_->finish("aborted");
    finished_ = true;
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace shakedown
