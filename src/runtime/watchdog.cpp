#include "runtime/watchdog.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "runtime/clock.hpp"

namespace shakedown {

namespace {
constexpr int kTag = 7302;
constexpr std::size_t kMaxLabel = 240;
constexpr std::int64_t kDoneSeq = -1;
constexpr std::size_t kMaxNamed = 8;  // ranks named in one message before "and N more"

std::string format_seconds(double s) {
  std::ostringstream os;
  os << (s >= 10 ? std::round(s) : std::round(s * 10) / 10) << " s";
  return os.str();
}
}  // namespace

struct Watchdog::Message {
  std::int64_t seq;
  double timeout_s;
  char label[kMaxLabel];
};

StallReport assess_positions(const std::vector<RankPosition>& positions,
                             const std::vector<std::string>& rank_names, double furthest_since_s,
                             double timeout_s) {
  StallReport report;
  if (positions.empty() || furthest_since_s <= timeout_s) return report;
  auto name = [&](std::size_t r) {
    return r < rank_names.size() ? rank_names[r] : "rank " + std::to_string(r);
  };
  const auto furthest = std::max_element(positions.begin(), positions.end(),
                                         [](const auto& a, const auto& b) { return a.seq < b.seq; });
  for (std::size_t r = 0; r < positions.size(); ++r) {
    if (positions[r].seq < furthest->seq) report.laggards.push_back(static_cast<int>(r));
  }
  report.stalled = true;
  std::ostringstream os;
  if (report.laggards.empty()) {
    os << "no rank finished '" << furthest->label << "' within " << format_seconds(timeout_s)
       << ": all " << positions.size()
       << " ranks are inside it (a hang in the fabric, the MPI/NCCL library or the phase itself)";
  } else {
    std::size_t shown = 0;
    for (int r : report.laggards) {
      if (shown == kMaxNamed) break;
      os << (shown ? "; " : "") << name(static_cast<std::size_t>(r));
      if (shown == 0) {
        os << " did not reach '" << furthest->label << "' within " << format_seconds(timeout_s);
      }
      os << " (last at '" << positions[static_cast<std::size_t>(r)].label << "')";
      ++shown;
    }
    if (report.laggards.size() > kMaxNamed) {
      os << "; and " << report.laggards.size() - kMaxNamed << " more ranks";
    }
    std::size_t waiting = positions.size() - report.laggards.size();
    os << "; " << waiting << " of " << positions.size() << " ranks are waiting there";
  }
  report.message = os.str();
  return report;
}

Watchdog::Watchdog(MPI_Comm world, Options options, std::vector<std::string> rank_names,
                   AbortHook hook)
    : options_(options), rank_names_(std::move(rank_names)), hook_(std::move(hook)) {
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
}

void Watchdog::step(const std::string& label, double timeout_s) {
  {
    std::lock_guard lock(mutex_);
    ++seq_;
    label_ = label.substr(0, kMaxLabel - 1);
    timeout_s_ = timeout_s;
    step_started_us_ = now_us();
  }
  wake_.notify_all();
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

void Watchdog::abort_run(const std::string& message) {
  std::call_once(abort_once_, [&] {
    std::fprintf(stderr, "shakedown: TIMEOUT: %s\n", message.c_str());
    std::fflush(stderr);
    if (hook_) {
      try {
        hook_(message);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "shakedown: could not record the abort: %s\n", e.what());
      }
    }
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(ExitCode::kRuntime));
  });
  std::abort();  // MPI_Abort does not return; this only satisfies [[noreturn]]
}

void Watchdog::run_peer() {
  std::int64_t sent = -2;
  for (;;) {
    Message msg{};
    bool stopping = false;
    bool abandon = false;
    double stuck_s = 0;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::duration<double>(options_.poll_s),
                     [&] { return stop_requested_ || seq_ != sent; });
      stopping = stop_requested_;
      abandon = abandon_;
      msg.seq = seq_;
      msg.timeout_s = timeout_s_;
      std::strncpy(msg.label, label_.c_str(), kMaxLabel - 1);
      stuck_s = (now_us() - step_started_us_) * 1e-6;
    }
    if (abandon) return;
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
      abort_run(rank_names_[static_cast<std::size_t>(rank_)] + " made no progress at '" +
                msg.label + "' for " + format_seconds(stuck_s) +
                " and rank 0 did not end the run (rank 0 may be dead or hung)");
    }
  }
}

void Watchdog::run_root() {
  std::vector<RankPosition> positions(static_cast<std::size_t>(size_));
  for (auto& p : positions) p.label = "start";
  std::map<std::int64_t, std::pair<double, double>> first_seen;  // seq -> (time us, timeout s)
  first_seen[0] = {start_us_, options_.step_timeout_s};
  auto note = [&](int r, std::int64_t seq, double timeout, const std::string& label) {
    auto& p = positions[static_cast<std::size_t>(r)];
    p.seq = seq;
    p.label = label;
    first_seen.try_emplace(seq, now_us(), timeout);
  };
  int done = 0;
  for (;;) {
    bool stopping = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::duration<double>(options_.poll_s));
      if (abandon_) return;
      stopping = stop_requested_;
      if (seq_ != positions[0].seq) note(0, seq_, timeout_s_, label_);
    }
    for (;;) {
      int flag = 0;
      MPI_Status status;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kTag, comm_.get(), &flag, &status) != MPI_SUCCESS || !flag) {
        break;
      }
      Message msg{};
      MPI_Recv(&msg, sizeof msg, MPI_BYTE, status.MPI_SOURCE, kTag, comm_.get(), MPI_STATUS_IGNORE);
      msg.label[kMaxLabel - 1] = '\0';
      if (msg.seq == kDoneSeq) {
        positions[static_cast<std::size_t>(status.MPI_SOURCE)].done = true;
        ++done;
      } else {
        note(status.MPI_SOURCE, msg.seq, msg.timeout_s, msg.label);
      }
    }
    if (stopping && done == size_ - 1) return;

    const double now = now_us();
    std::int64_t furthest = 0;
    for (const auto& p : positions) furthest = std::max(furthest, p.seq);
    const auto [since_us, timeout_s] = first_seen[furthest];
    StallReport report =
        assess_positions(positions, rank_names_, (now - since_us) * 1e-6, timeout_s);
    if (report.stalled && !stopping) abort_run(report.message);
    if ((now - start_us_) * 1e-6 > options_.run_timeout_s) {
      abort_run("the run exceeded timeouts.run_s = " + format_seconds(options_.run_timeout_s) +
                " while rank 0 was at '" + positions[0].label + "'");
    }
  }
}

}  // namespace shakedown
