#include "runtime/watchdog.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <map>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "runtime/clock.hpp"

namespace shakedown {

namespace {
constexpr int kTag = 7302;          // PositionMessage
constexpr int kFailTag = 7303;      // int exit code, then the failing rank's message
constexpr int kAbortTag = 7304;     // rank 0 -> the others: run your local aborts (one int)
constexpr int kAbortAckTag = 7305;  // the others -> rank 0: local aborts done (one int)
constexpr std::size_t kMaxLabel = 240;
constexpr std::int64_t kDoneSeq = -1;
constexpr std::size_t kMaxNamed = 8;  // ranks named in one message before "and N more"

std::string format_seconds(double s) {
  std::ostringstream os;
  os << (s >= 10 ? std::round(s) : std::round(s * 10) / 10) << " s";
  return os.str();
}
}  // namespace

// A rank's position as its watchdog thread reports it to rank 0.
struct PositionMessage {
  std::int64_t seq;
  double timeout_s;
  char label[kMaxLabel];
};

StallReport assess_positions(const std::vector<RankPosition>& positions,
                             const std::vector<std::string>& rank_names,
                             const std::map<std::int64_t, StepSeen>& steps) {
  StallReport report;
  if (positions.empty()) return report;
  auto name = [&](std::size_t r) {
    return r < rank_names.size() ? rank_names[r] : "rank " + std::to_string(r);
  };
  auto [lo, hi] = std::minmax_element(positions.begin(), positions.end(),
                                      [](const auto& a, const auto& b) { return a.seq < b.seq; });
  const std::int64_t behind = lo->seq;
  const std::int64_t furthest = hi->seq;
  std::ostringstream os;
  if (behind == furthest) {
    auto it = steps.find(furthest);
    if (it == steps.end() || it->second.since_s <= it->second.timeout_s) return report;
    report.stalled = true;
    os << "no rank finished '" << it->second.label << "' within "
       << format_seconds(it->second.timeout_s) << ": all " << positions.size()
       << " ranks are inside it (a hang in the fabric, the MPI/NCCL library or the phase itself)";
    report.message = os.str();
    return report;
  }
  // The step the slowest ranks have not reached yet. They are overdue once it has waited longer
  // than its own timeout and than the timeout of the step they are still in (a long step, e.g.
  // a 600 s checkpoint write, is not cut short by a 300 s barrier after it).
  auto next = steps.upper_bound(behind);
  if (next == steps.end()) return report;
  auto current = steps.find(behind);
  const double limit_s =
      std::max(next->second.timeout_s, current == steps.end() ? 0.0 : current->second.timeout_s);
  if (next->second.since_s <= limit_s) return report;
  report.stalled = true;
  std::vector<int> between;  // neither the slowest nor the furthest: usually waiting on the slowest
  for (std::size_t r = 0; r < positions.size(); ++r) {
    if (positions[r].seq == behind) report.laggards.push_back(static_cast<int>(r));
    if (positions[r].seq > behind && positions[r].seq < furthest) {
      between.push_back(static_cast<int>(r));
    }
  }
  for (std::size_t i = 0; i < report.laggards.size() && i < kMaxNamed; ++i) {
    os << (i ? ", " : "") << name(static_cast<std::size_t>(report.laggards[i]));
  }
  if (report.laggards.size() > kMaxNamed) {
    os << " and " << report.laggards.size() - kMaxNamed << " more ranks";
  }
  os << " did not reach '" << next->second.label << "' within " << format_seconds(limit_s)
     << " (last at '" << lo->label << "'); " << positions.size() - report.laggards.size() << " of "
     << positions.size() << " ranks got there";
  if (!between.empty()) {
    os << " (";
    for (std::size_t i = 0; i < between.size() && i < kMaxNamed; ++i) {
      auto r = static_cast<std::size_t>(between[i]);
      os << (i ? ", " : "") << name(r) << " is at '" << positions[r].label << "'";
    }
    os << ", probably waiting for them)";
  }
  report.message = os.str();
  return report;
}

void abort_job(ExitCode code) {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, static_cast<int>(code));
  std::abort();  // MPI_Abort does not return
}

Watchdog::Watchdog(MPI_Comm world, Options options, std::vector<std::string> rank_names,
                   AbortHook hook)
    : options_(std::move(options)), rank_names_(std::move(rank_names)), hook_(std::move(hook)) {
  comm_ = comm_dup(world);
  rank_ = comm_rank(comm_.get());
  size_ = comm_size(comm_.get());
  start_us_ = now_us();
  step_started_us_ = start_us_;
  timeout_s_ = options_.step_timeout_s;
  thread_ = std::thread([this] { rank_ == 0 ? run_root() : run_peer(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    if (!stop_requested_) abandon_ = true;
    stop_requested_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Notices to ranks that never read them (they had stopped): nothing waits for them any more.
  for (MPI_Request& request : abort_notices_) {
    int done = 0;
    if (request == MPI_REQUEST_NULL) continue;
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) continue;
    MPI_Cancel(&request);
    MPI_Request_free(&request);
  }
}

Watchdog::AbortRegistration Watchdog::on_abort(LocalAbort fn) {
  std::lock_guard lock(local_->mutex);
  const int id = local_->next_id++;
  local_->fns.emplace(id, std::move(fn));
  return AbortRegistration(local_, id);
}

void Watchdog::AbortRegistration::reset() {
  if (owner_ == nullptr) return;
  std::lock_guard lock(owner_->mutex);
  owner_->fns.erase(id_);
  owner_.reset();
}

void Watchdog::run_local_aborts(double limit_s) {
  std::call_once(local_once_, [&] {
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> finished = done->get_future();
    // A thread of its own, so an abort that wedges (a driver call that never returns) cannot keep
    // the job from ending: after limit_s the watchdog gives up on it and ends the job anyway.
    // Everything the runner touches is its own (shared state, a copied name): it may outlive
    // this watchdog when it wedges.
    std::thread runner([done, local = local_, me = rank_names_[static_cast<std::size_t>(rank_)]] {
      {
        std::lock_guard lock(local->mutex);
        for (auto& [id, fn] : local->fns) {
          try {
            fn();
          } catch (const std::exception& e) {
            std::fprintf(stderr, "shakedown: %s: local abort failed: %s\n", me.c_str(), e.what());
          }
        }
      }
      done->set_value();
    });
    if (finished.wait_for(std::chrono::duration<double>(limit_s)) == std::future_status::ready) {
      runner.join();
    } else {
      std::fprintf(stderr, "shakedown: %s: local aborts did not finish within %s; ending anyway\n",
                   rank_names_[static_cast<std::size_t>(rank_)].c_str(),
                   format_seconds(limit_s).c_str());
      runner.detach();
    }
  });
}

void Watchdog::notify_peers_and_wait() {
  static const int kNotice = 1;  // the payload is not read; a constant outlives the sends
  abort_notices_.assign(static_cast<std::size_t>(std::max(size_ - 1, 0)), MPI_REQUEST_NULL);
  for (int r = 1; r < size_; ++r) {
    MPI_Isend(&kNotice, 1, MPI_INT, r, kAbortTag, comm_.get(),
              &abort_notices_[static_cast<std::size_t>(r - 1)]);
  }
  const double started = now_us();
  run_local_aborts(options_.abort_grace_s);
  // Acks are read here, whichever thread this is, with matched probes (MPI_Improbe/MPI_Mrecv),
  // so the watchdog thread reading its own messages meanwhile can never take one from under us.
  // A peer whose local aborts time out acks after the grace period and one poll: wait that long.
  const double deadline = started + (2 * options_.abort_grace_s + 2 * options_.poll_s) * 1e6;
  while (abort_acks_.load() < size_ - 1 && now_us() < deadline) {
    int flag = 0;
    MPI_Message message;
    if (MPI_Improbe(MPI_ANY_SOURCE, kAbortAckTag, comm_.get(), &flag, &message,
                    MPI_STATUS_IGNORE) == MPI_SUCCESS &&
        flag) {
      int word = 0;
      MPI_Mrecv(&word, 1, MPI_INT, &message, MPI_STATUS_IGNORE);
      ++abort_acks_;
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void Watchdog::step(const std::string& label, double timeout_s) {
  std::lock_guard lock(mutex_);
  ++seq_;
  label_ = label.substr(0, kMaxLabel - 1);
  timeout_s_ = timeout_s;
  step_started_us_ = now_us();
  // No notify: the thread reports the latest position once per poll, so a thousand quick steps
  // cost rank 0 a handful of messages, not a thousand.
}

void Watchdog::barrier(MPI_Comm comm, const std::string& label) {
  step("barrier " + label);
  SD_MPI_CHECK(MPI_Barrier(comm));
}

void Watchdog::stop() {
  step("end of run");
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Watchdog::tripped() const {
  std::lock_guard lock(mutex_);
  return tripped_;
}

void Watchdog::fail(ExitCode code, const std::string& message, const std::string& detail) {
  const std::string& me = rank_names_[static_cast<std::size_t>(rank_)];
  const std::string reason = me + ": " + message;
  std::fprintf(stderr, "shakedown: %s\n", reason.c_str());
  if (!detail.empty()) std::fprintf(stderr, "shakedown: details: %s\n", detail.c_str());
  std::fflush(stderr);
  if (rank_ != 0) {
    // Rank 0 owns the run file: tell it why, so it marks the file aborted before ending the job.
    std::string payload(sizeof(int), '\0');
    const int c = static_cast<int>(code);
    std::memcpy(payload.data(), &c, sizeof c);
    payload += reason;
    if (MPI_Send(payload.data(), static_cast<int>(payload.size()), MPI_CHAR, 0, kFailTag,
                 comm_.get()) == MPI_SUCCESS) {
      // Rank 0 normally ends the job within a poll; if it is gone, end it from here.
      std::this_thread::sleep_for(std::chrono::seconds(10));
    }
  } else {
    abort_run(code, reason, false);
  }
  abort_job(code);
}

void Watchdog::await_abort(ExitCode code) {
  std::this_thread::sleep_for(std::chrono::seconds(30));
  abort_job(code);
}

void Watchdog::abort_run(ExitCode code, const std::string& reason, bool print) {
  std::call_once(abort_once_, [&] {
    if (print) {
      std::fprintf(stderr, "shakedown: %s\n", reason.c_str());
      std::fflush(stderr);
    }
    if (hook_) {
      try {
        hook_(reason);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "shakedown: could not record the abort: %s\n", e.what());
      }
    }
    if (rank_ == 0) {
      notify_peers_and_wait();
    } else {
      run_local_aborts(options_.abort_grace_s);
    }
    options_.abort_action(code);
    std::lock_guard lock(mutex_);
    tripped_ = true;
  });
}

void Watchdog::run_peer() {
  std::int64_t sent = -2;
  for (;;) {
    PositionMessage msg{};
    bool stopping = false;
    double stuck_s = 0;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::duration<double>(options_.poll_s),
                     [&] { return stop_requested_; });
      if (abandon_) return;
      stopping = stop_requested_;
      msg.seq = seq_;
      msg.timeout_s = timeout_s_;
      std::strncpy(msg.label, label_.c_str(), kMaxLabel - 1);
      stuck_s = (now_us() - step_started_us_) * 1e-6;
    }
    // Rank 0 is ending the job: abandon local work (NCCL communicators) and say so.
    int notice = 0;
    if (MPI_Iprobe(0, kAbortTag, comm_.get(), &notice, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
        notice) {
      int word = 0;
      MPI_Recv(&word, 1, MPI_INT, 0, kAbortTag, comm_.get(), MPI_STATUS_IGNORE);
      run_local_aborts(options_.abort_grace_s);
      MPI_Send(&word, 1, MPI_INT, 0, kAbortAckTag, comm_.get());
    }
    if (msg.seq != sent) {
      if (MPI_Send(&msg, sizeof msg, MPI_BYTE, 0, kTag, comm_.get()) != MPI_SUCCESS) return;
      sent = msg.seq;
    }
    if (stopping) {
      msg.seq = kDoneSeq;
      MPI_Send(&msg, sizeof msg, MPI_BYTE, 0, kTag, comm_.get());
      return;
    }
    // Rank 0 normally ends a stalled run; if rank 0 itself is gone, leave on our own, later.
    if (stuck_s > 2 * msg.timeout_s + 30) {
      abort_run(ExitCode::kRuntime,
                "TIMEOUT: " + rank_names_[static_cast<std::size_t>(rank_)] +
                    " made no progress at '" + msg.label + "' for " + format_seconds(stuck_s) +
                    " and rank 0 did not end the run (rank 0 may be dead or hung)",
                true);
      return;
    }
  }
}

void Watchdog::run_root() {
  std::vector<RankPosition> positions(static_cast<std::size_t>(size_));
  for (auto& p : positions) p.label = "start";
  struct Seen {
    std::string label;
    double first_us;
    double timeout_s;
  };
  std::map<std::int64_t, Seen> seen;  // every step some rank reached, when it was first reached
  seen[0] = {"start", start_us_, options_.step_timeout_s};
  auto note = [&](int r, std::int64_t seq, double timeout, const std::string& label) {
    auto& p = positions[static_cast<std::size_t>(r)];
    p.seq = seq;
    p.label = label;
    seen.try_emplace(seq, Seen{label, now_us(), timeout});
  };
  int done = 0;
  for (;;) {
    bool stopping = false;
    bool judging = true;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::duration<double>(options_.poll_s),
                     [&] { return stop_requested_; });
      if (abandon_) return;
      stopping = stop_requested_;
      judging = !tripped_;
      if (seq_ != positions[0].seq) note(0, seq_, timeout_s_, label_);
    }
    for (;;) {
      // Matched probes: the main thread may read abort acks on this communicator at the same
      // time (notify_peers_and_wait), and a plain probe + receive could then receive the wrong
      // message.
      int flag = 0;
      MPI_Status status;
      MPI_Message message;
      if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_.get(), &flag, &message, &status) !=
              MPI_SUCCESS ||
          !flag) {
        break;
      }
      if (status.MPI_TAG == kAbortAckTag) {
        int word = 0;
        MPI_Mrecv(&word, 1, MPI_INT, &message, MPI_STATUS_IGNORE);
        ++abort_acks_;
        continue;
      }
      if (status.MPI_TAG == kFailTag) {
        int count = 0;
        MPI_Get_count(&status, MPI_CHAR, &count);
        std::string payload(static_cast<std::size_t>(std::max(count, 0)), '\0');
        if (MPI_Mrecv(payload.data(), count, MPI_CHAR, &message, MPI_STATUS_IGNORE) !=
                MPI_SUCCESS ||
            payload.size() < sizeof(int)) {
          continue;
        }
        int code = 0;
        std::memcpy(&code, payload.data(), sizeof code);
        // The failing rank printed its message already; record it and end the job.
        abort_run(static_cast<ExitCode>(code), payload.substr(sizeof(int)), false);
        continue;
      }
      if (status.MPI_TAG != kTag) {  // not a message rank 0 expects: take it off the queue
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        std::vector<char> ignored(static_cast<std::size_t>(std::max(count, 0)));
        MPI_Mrecv(ignored.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
        continue;
      }
      PositionMessage msg{};
      if (MPI_Mrecv(&msg, sizeof msg, MPI_BYTE, &message, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        continue;
      }
      msg.label[kMaxLabel - 1] = '\0';
      if (msg.seq == kDoneSeq) {
        ++done;
      } else {
        note(status.MPI_SOURCE, msg.seq, msg.timeout_s, msg.label);
      }
    }
    if (stopping && done == size_ - 1) return;
    if (!judging) continue;

    const double now = now_us();
    std::int64_t behind = positions[0].seq;
    for (const auto& p : positions) behind = std::min(behind, p.seq);
    // Steps every rank has left are of no further interest.
    seen.erase(seen.begin(), seen.lower_bound(behind));
    std::map<std::int64_t, StepSeen> steps;
    for (const auto& [seq, s] : seen)
      steps[seq] = {s.label, (now - s.first_us) * 1e-6, s.timeout_s};
    // Judged while stopping too: a rank that never reaches the end of the run is a hang as well.
    StallReport report = assess_positions(positions, rank_names_, steps);
    if (report.stalled) {
      abort_run(ExitCode::kRuntime, "TIMEOUT: " + report.message, true);
    } else if ((now - start_us_) * 1e-6 > options_.run_timeout_s) {
      abort_run(
          ExitCode::kRuntime,
          "TIMEOUT: the run exceeded timeouts.run_s = " + format_seconds(options_.run_timeout_s) +
              " while rank 0 was at '" + positions[0].label + "'",
          true);
    }
  }
}

}  // namespace shakedown
