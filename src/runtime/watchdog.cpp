#include "runtime/watchdog.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include <unistd.h>
#include <fstream>

#include "core/error.hpp"
#include "core/host.hpp"
#include "core/strings.hpp"
#include "runtime/clock.hpp"
#include "runtime/oob.hpp"
#include "runtime/signals.hpp"

namespace shakedown {

namespace {
using Type = OobChannel::Type;
constexpr std::size_t kMaxLabel = 240;
constexpr std::size_t kMaxBasis = 64;
constexpr std::int64_t kDoneSeq = -1;
constexpr std::size_t kMaxNamed = 8;  // ranks named in one message before "and N more"

std::string format_seconds(double s) {
  std::ostringstream os;
  os << (s >= 10 ? std::round(s) : std::round(s * 10) / 10) << " s";
  return os.str();
}

// "rank 1, rank 2 and 3 more ranks": at most kMaxNamed names in one message.
std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kMaxNamed; ++i) {
    out += (i ? ", " : "") + names[i];
  }
  if (names.size() > kMaxNamed) {
    out += " and " + std::to_string(names.size() - kMaxNamed) + " more ranks";
  }
  return out;
}

std::string name_list(const std::vector<int>& ranks,
                      const std::function<std::string(std::size_t)>& name) {
  std::vector<std::string> names;
  for (int r : ranks) names.push_back(name(static_cast<std::size_t>(r)));
  return join_names(names);
}

// The boot id and pid namespace: processes with the same identity can be looked up in /proc.
std::string host_identity() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  char ns[128] = {};
  const ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  return local_hostname() + "|" + boot + "|" +
         (n > 0 ? std::string(ns, static_cast<std::size_t>(n)) : "");
}

// A process on this host: stopped, ended, or (as far as /proc says) running.
Liveness process_state(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return Liveness::kGone;
  std::string text;
  std::getline(stat, text);            // one line
  const auto close = text.rfind(')');  // the state follows the parenthesised command name
  if (close == std::string::npos || close + 2 >= text.size()) return Liveness::kSilent;
  const char state = text[close + 2];
  if (state == 'T' || state == 't') return Liveness::kStopped;
  if (state == 'Z' || state == 'X' || state == 'x') return Liveness::kGone;
  return Liveness::kSilent;
}
}  // namespace

std::string liveness_text(Liveness liveness) {
  switch (liveness) {
    case Liveness::kAnswering:
      return "it is answering";
    case Liveness::kSilent:
      return "its process is frozen or dead, or its node is down";
    case Liveness::kStopped:
      return "its process is stopped (SIGSTOP, a debugger or a frozen job step)";
    case Liveness::kGone:
      return "its process has ended";
  }
  return "";
}

// A rank's position as its watchdog thread reports it to rank 0.
struct PositionMessage {
  std::int64_t seq;
  double timeout_s;
  std::int64_t total;
  std::int64_t done;
  double expected_s;
  char label[kMaxLabel];
  char basis[kMaxBasis];
};

struct Watchdog::Report {
  PositionMessage msg;
  double stuck_s;  // seconds since this rank entered its current step
};

StallReport assess_positions(const std::vector<RankPosition>& positions,
                             const std::vector<std::string>& rank_names,
                             const std::map<std::int64_t, StepSeen>& steps,
                             const AssessLimits& limits) {
  StallReport report;
  if (positions.empty()) return report;
  auto name = [&](std::size_t r) {
    return r < rank_names.size() ? rank_names[r] : "rank " + std::to_string(r);
  };
  auto [lo, hi] = std::minmax_element(positions.begin(), positions.end(),
                                      [](const auto& a, const auto& b) { return a.seq < b.seq; });
  const std::int64_t behind = lo->seq;
  const std::int64_t furthest = hi->seq;
  // "rank 2 (...) stopped answering 12 s ago: its process is stopped (...)" for each silent
  // rank among `ranks`, or "" when all of them answer.
  auto silence = [&](const std::vector<int>& ranks) {
    std::ostringstream os;
    for (int r : ranks) {
      const RankPosition& p = positions[static_cast<std::size_t>(r)];
      if (p.liveness == Liveness::kAnswering) continue;
      os << (os.tellp() > 0 ? "; " : "") << name(static_cast<std::size_t>(r))
         << " stopped answering " << format_seconds(p.silent_s)
         << " ago: " << liveness_text(p.liveness);
    }
    return os.str();
  };
  std::ostringstream os;
  if (behind == furthest) {
    auto it = steps.find(furthest);
    if (it == steps.end() || it->second.since_s <= it->second.timeout_s) return report;
    const StepSeen& step = it->second;
    std::vector<int> silent;
    bool late = false;  // answering, but not lately: it may be going silent
    for (std::size_t r = 0; r < positions.size(); ++r) {
      if (positions[r].liveness != Liveness::kAnswering) silent.push_back(static_cast<int>(r));
      if (positions[r].liveness == Liveness::kAnswering && positions[r].silent_s > limits.late_s) {
        late = true;
      }
    }
    if (silent.empty() && late) return report;  // decide once it answers or falls silent
    report.stalled = true;
    if (!silent.empty()) {
      // (a) Frozen or dead ranks inside a collective: the others wait for them in it.
      report.laggards = silent;
      os << silence(silent) << (silent.size() == 1 ? "; it was" : "; they were") << " inside '"
         << step.label << "', where the other " << positions.size() - silent.size() << " of "
         << positions.size() << " ranks have waited for " << format_seconds(step.since_s)
         << " (timeout " << format_seconds(step.timeout_s) << ")";
      report.message = os.str();
      return report;
    }
    // Every rank answers. The slowest one's progress says whether the step moves at all.
    const auto slowest = std::min_element(
        positions.begin(), positions.end(),
        [](const RankPosition& a, const RankPosition& b) { return a.done < b.done; });
    const bool counted = step.total > 0 || slowest->done > 0;
    // Moving: its count changed lately, or within two of its own average iterations (one
    // iteration of a huge collective may take longer than the limits). Still for longer than
    // the pause limit: stuck. In between, wait for the count to move or to stay still.
    const double per_iteration_s =
        slowest->done > 0 ? step.since_s / static_cast<double>(slowest->done) : 0;
    const bool moving =
        slowest->done > 0 && slowest->idle_s < std::max(limits.late_s, 2 * per_iteration_s);
    if (!moving && slowest->done > 0 && slowest->idle_s < limits.progress_idle_s) {
      report.stalled = false;
      return report;
    }
    if (moving) {
      // (c) Alive and progressing, only slower than the timeout allows.
      const double rate = static_cast<double>(slowest->done) / step.since_s;
      os << "all " << positions.size() << " ranks are alive and progressing in '" << step.label
         << "' (" << slowest->done;
      if (step.total > 0) os << " of " << step.total;
      os << " iterations done on the slowest rank), but the step needs longer than its timeout of "
         << format_seconds(step.timeout_s);
      if (step.total > 0 && rate > 0) {
        os << ": about " << format_seconds(static_cast<double>(step.total) / rate)
           << " at the current rate";
      }
      os << "; raise timeouts.phase_s or make the step smaller (fewer iterations or sizes)";
      report.message = os.str();
      return report;
    }
    if (slowest->done == 0 && step.expected_s > step.timeout_s) {
      // (c) The phase expected the step to outlast the timeout.
      os << "all " << positions.size() << " ranks are alive inside '" << step.label
         << "', which was estimated at " << format_seconds(step.expected_s)
         << (step.basis.empty() ? "" : " from " + step.basis) << "; its timeout is "
         << format_seconds(step.timeout_s)
         << ": raise timeouts.phase_s or make the step smaller (fewer iterations or sizes)";
      report.message = os.str();
      return report;
    }
    // (b) Alive but stuck.
    os << "no rank finished '" << step.label << "' within " << format_seconds(step.timeout_s)
       << ": all " << positions.size() << " ranks are alive and inside it";
    if (counted) {
      os << " with no progress for " << format_seconds(slowest->idle_s) << " (" << slowest->done;
      if (step.total > 0) os << " of " << step.total;
      os << " iterations done on the slowest rank)";
    }
    os << " (a hang in the fabric, the MPI/NCCL library or the phase itself)";
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
  // Laggards that stopped answering (a frozen or killed process) hold the others back: when some
  // laggards still answer, the silent ones come first and are the ones named, and the answering
  // ones are said to be waiting (a rank frozen in one rail's collective keeps its rail peers in
  // theirs, short of the same step).
  std::vector<int> silent_laggards, waiting_laggards;
  for (int r : report.laggards) {
    (positions[static_cast<std::size_t>(r)].liveness == Liveness::kAnswering ? waiting_laggards
                                                                             : silent_laggards)
        .push_back(r);
  }
  const bool split = !silent_laggards.empty() && !waiting_laggards.empty();
  if (split) report.laggards = silent_laggards;
  os << name_list(report.laggards, name) << " did not reach '" << next->second.label << "' within "
     << format_seconds(limit_s) << " (last at '" << lo->label << "'); "
     << positions.size() - report.laggards.size() - waiting_laggards.size() * (split ? 1 : 0)
     << " of " << positions.size() << " ranks got there";
  if (split) {
    os << " (" << name_list(waiting_laggards, name)
       << (waiting_laggards.size() == 1 ? ", which answers, is" : ", which answer, are")
       << " short of it too, probably waiting for " << (silent_laggards.size() == 1 ? "it" : "them")
       << ")";
  }
  if (!between.empty()) {
    os << " (";
    for (std::size_t i = 0; i < between.size() && i < kMaxNamed; ++i) {
      auto r = static_cast<std::size_t>(between[i]);
      os << (i ? ", " : "") << name(r) << " is at '" << positions[r].label << "'";
    }
    os << ", probably waiting for them)";
  }
  if (const std::string silent = silence(report.laggards); !silent.empty()) os << "; " << silent;
  report.message = os.str();
  return report;
}

std::string interrupt_reason(int signal, const std::string& signalled_rank,
                             const std::vector<std::pair<std::string, Liveness>>& silent) {
  const std::string sig = signal_name(signal);
  if (silent.empty()) {
    return "interrupted by " + sig + " on " + signalled_rank + ": " + signal_cause(signal);
  }
  std::vector<std::string> gone, unknown;
  for (const auto& [name, liveness] : silent) {
    (liveness == Liveness::kGone ? gone : unknown).push_back(name);
  }
  std::string out;
  if (!gone.empty()) {
    out = join_names(gone) + " ended unexpectedly (" +
          (gone.size() == 1 ? "its process is gone" : "their processes are gone") +
          "), and the launcher then ended the job (" + sig + " on " + signalled_rank + ")";
    if (!unknown.empty()) out += "; " + join_names(unknown) + " did not answer either";
    return out;
  }
  return "the job was ended by the launcher (" + sig + " on " + signalled_rank + "); " +
         join_names(unknown) +
         " did not answer (it may have ended first: a crash or a kill, or it is frozen)";
}

void abort_job(ExitCode code) {
  std::fflush(stdout);
  std::fflush(stderr);
  // The one MPI call a watchdog thread makes, while the main thread may be blocked inside MPI
  // (only the main thread calls MPI otherwise: docs/architecture.md "Failure handling" says why
  // this is the exception). Open MPI and MPICH hand it to the launcher (PMIx_Abort, PMI abort),
  // which ends every rank; it does not use the communication state a thread level protects.
  MPI_Abort(MPI_COMM_WORLD, static_cast<int>(code));
  std::abort();  // MPI_Abort does not return
}

Watchdog::Watchdog(MPI_Comm world, Options options, std::vector<std::string> rank_names,
                   AbortHook hook)
    : options_(std::move(options)), rank_names_(std::move(rank_names)), hook_(std::move(hook)) {
  rank_ = comm_rank(world);
  size_ = comm_size(world);
  const std::vector<std::string> ids =
      allgather_strings(world, std::to_string(getpid()) + " " + host_identity());
  for (const std::string& id : ids) {
    const auto space = id.find(' ');
    pids_.push_back(std::stol(id.substr(0, space)));
    host_ids_.push_back(space == std::string::npos ? "" : id.substr(space + 1));
  }
  skip_ack_.assign(static_cast<std::size_t>(size_), false);
  channel_ = std::make_unique<OobChannel>(world, rank_names_, options_.connect_timeout_s);
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

Watchdog::AbortRegistration Watchdog::on_abort(LocalAbort fn) {
  std::lock_guard lock(local_->mutex);
  const int id = local_->next_id++;
  local_->fns.emplace(id, std::move(fn));
  return AbortRegistration(local_, id);
}

Watchdog::AbortRegistration Watchdog::on_abort_report(AbortReport fn) {
  std::lock_guard lock(local_->mutex);
  const int id = local_->next_id++;
  local_->reports.emplace(id, std::move(fn));
  return AbortRegistration(local_, id);
}

void Watchdog::AbortRegistration::reset() {
  if (owner_ == nullptr) return;
  std::lock_guard lock(owner_->mutex);
  owner_->fns.erase(id_);
  owner_->reports.erase(id_);
  owner_.reset();
}

std::string Watchdog::run_local_aborts(double limit_s) {
  std::string out;
  std::call_once(local_once_, [&] {
    auto done = std::make_shared<std::promise<std::string>>();
    std::future<std::string> finished = done->get_future();
    // A thread of its own, so an abort that wedges (a driver call that never returns) cannot keep
    // the job from ending: after limit_s the watchdog gives up on it and ends the job anyway.
    // Everything the runner touches is its own (shared state, a copied name): it may outlive
    // this watchdog when it wedges.
    std::thread runner([done, local = local_, me = rank_names_[static_cast<std::size_t>(rank_)]] {
      std::string framed;
      {
        std::lock_guard lock(local->mutex);
        for (auto& [id, fn] : local->fns) {
          try {
            fn();
          } catch (const std::exception& e) {
            std::fprintf(stderr, "shakedown: %s: local abort failed: %s\n", me.c_str(), e.what());
          }
        }
        for (auto& [id, fn] : local->reports) {
          try {
            const std::string part = fn();
            if (framed.size() + sizeof(std::uint32_t) + part.size() > kMaxAbortReport) {
              std::fprintf(stderr,
                           "shakedown: %s: a report of %zu bytes left out of the abort (at most "
                           "%zu)\n",
                           me.c_str(), part.size(), kMaxAbortReport);
              continue;
            }
            const auto size = static_cast<std::uint32_t>(part.size());
            framed.append(reinterpret_cast<const char*>(&size), sizeof size);
            framed += part;
          } catch (const std::exception& e) {
            std::fprintf(stderr, "shakedown: %s: abort report failed: %s\n", me.c_str(), e.what());
          }
        }
      }
      done->set_value(std::move(framed));
    });
    if (finished.wait_for(std::chrono::duration<double>(limit_s)) == std::future_status::ready) {
      runner.join();
      out = finished.get();
    } else {
      std::fprintf(stderr, "shakedown: %s: local aborts did not finish within %s; ending anyway\n",
                   rank_names_[static_cast<std::size_t>(rank_)].c_str(),
                   format_seconds(limit_s).c_str());
      runner.detach();
    }
  });
  return out;
}

void Watchdog::send_abort_ack(const std::string& report) {
  // Pieces of [offset (u64), bytes], then the ack with the whole size (u64): rank 0 places
  // each piece at its offset, whichever of its threads reads it.
  constexpr std::size_t kPiece = OobChannel::kMaxPayload - sizeof(std::uint64_t);
  bool sent = true;
  for (std::uint64_t at = 0; sent && at < report.size(); at += kPiece) {
    std::string piece(reinterpret_cast<const char*>(&at), sizeof at);
    piece += report.substr(at, kPiece);
    sent = channel_->send(0, Type::kAbortReport, piece);
  }
  const std::uint64_t size = sent ? report.size() : 0;  // a report cut short: none
  channel_->send(0, Type::kAbortAck, &size, sizeof size);
}

void Watchdog::absorb_abort_message(int peer, bool ack, const std::string& payload) {
  std::lock_guard lock(reports_.mutex);
  std::uint64_t word = 0;
  if (payload.size() >= sizeof word) std::memcpy(&word, payload.data(), sizeof word);
  if (ack) {
    reports_.announced[peer] = word;
    ++abort_acks_;
  } else if (payload.size() >= sizeof word &&
             word + payload.size() - sizeof word <= kMaxAbortReport) {
    std::string& bytes = reports_.bytes[peer];
    const std::size_t size = payload.size() - sizeof word;
    if (bytes.size() < word + size) bytes.resize(word + size);
    bytes.replace(word, size, payload, sizeof word, size);
    reports_.received[peer] += size;
  }
}

void Watchdog::notify_peers_and_wait() {
  std::call_once(notify_once_, [&] {
    // The notice itself went out before the run file was marked (abort_run).
    const double started = now_us();
    std::string own = run_local_aborts(options_.abort_grace_s);
    {
      std::lock_guard lock(reports_.mutex);
      reports_.announced[0] = reports_.received[0] = own.size();
      reports_.bytes[0] = std::move(own);
    }
    // Acks are read here, whichever thread this is; the watchdog thread, if it is not this one,
    // takes some from the channel meanwhile (absorb_abort_message either way).
    // A peer whose local aborts time out acks after the grace period and one poll: wait that
    // long. Reports are taken before acks: a peer's pieces precede its ack on the wire.
    const double deadline = started + (2 * options_.abort_grace_s + 2 * options_.poll_s) * 1e6;
    int expected = 0;  // ranks known to be silent will not answer: do not wait for them
    for (int r = 1; r < size_; ++r) expected += skip_ack_[static_cast<std::size_t>(r)] ? 0 : 1;
    auto whole = [&] {
      std::lock_guard lock(reports_.mutex);
      for (const auto& [rank, size] : reports_.announced) {
        if (reports_.received[rank] < size) return false;
      }
      return true;
    };
    while ((abort_acks_.load() < expected || !whole()) && now_us() < deadline) {
      channel_->pump();
      const auto pieces = channel_->take(Type::kAbortReport);
      const auto acks = channel_->take(Type::kAbortAck);
      for (const auto& m : pieces) absorb_abort_message(m.peer, false, m.payload);
      for (const auto& m : acks) absorb_abort_message(m.peer, true, m.payload);
      if (pieces.empty() && acks.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
}

std::vector<std::string> Watchdog::abort_reports() {
  if (rank_ != 0 || interrupted_.load()) return {};
  notify_peers_and_wait();
  std::vector<std::string> out;
  std::lock_guard lock(reports_.mutex);
  for (const auto& [rank, bytes] : reports_.bytes) {
    const auto announced = reports_.announced.find(rank);
    if (announced == reports_.announced.end() || announced->second != bytes.size() ||
        reports_.received[rank] != bytes.size()) {
      continue;  // cut short, or its ack not in yet
    }
    for (std::size_t at = 0; at + sizeof(std::uint32_t) <= bytes.size();) {
      std::uint32_t size = 0;
      std::memcpy(&size, bytes.data() + at, sizeof size);
      at += sizeof size;
      if (size > bytes.size() - at) break;
      out.push_back(bytes.substr(at, size));
      at += size;
    }
  }
  return out;
}

void Watchdog::step(const std::string& label, double timeout_s, const StepPlan& plan) {
  std::lock_guard lock(mutex_);
  ++seq_;
  label_ = label.substr(0, kMaxLabel - 1);
  timeout_s_ = timeout_s;
  step_started_us_ = now_us();
  plan_ = plan;
  progress_.store(0, std::memory_order_relaxed);
  // No notify: the thread reports the latest position once per poll, so a thousand quick steps
  // cost rank 0 a handful of messages, not a thousand.
}

Watchdog::Report Watchdog::current() const {
  Report r{};
  std::lock_guard lock(mutex_);
  r.msg.seq = seq_;
  r.msg.timeout_s = timeout_s_;
  r.msg.total = plan_.total;
  r.msg.done = progress_.load(std::memory_order_relaxed);
  r.msg.expected_s = plan_.expected_s;
  std::strncpy(r.msg.label, label_.c_str(), kMaxLabel - 1);
  std::strncpy(r.msg.basis, plan_.basis.c_str(), kMaxBasis - 1);
  r.stuck_s = (now_us() - step_started_us_) * 1e-6;
  return r;
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

void Watchdog::fail(ExitCode code, const std::string& message, const std::string& detail,
                    bool named) {
  const std::string& me = rank_names_[static_cast<std::size_t>(rank_)];
  const std::string reason = named ? message : me + ": " + message;
  std::fprintf(stderr, "%sshakedown: %s\n", stderr_line_start(), reason.c_str());
  if (!detail.empty()) std::fprintf(stderr, "shakedown: details: %s\n", detail.c_str());
  std::fflush(stderr);
  if (rank_ != 0) {
    // Rank 0 owns the run file: tell it why, so it marks the file aborted before ending the job.
    std::string payload(sizeof(int), '\0');
    const int c = static_cast<int>(code);
    std::memcpy(payload.data(), &c, sizeof c);
    // One message's worth (the channel refuses a longer one): the whole text is printed above.
    payload += reason.substr(0, OobChannel::kMaxPayload - payload.size());
    if (channel_->send(0, Type::kFail, payload) && channel_->flush(5)) {
      // Rank 0 normally ends the job within a poll; if it is gone, end it from here, after 10 s,
      // or after a minute once rank 0 has said it is ending the job (it marks the run file
      // first, which may wait for a write in progress: ending the job sooner would kill it
      // before the file says why).
      const auto since = std::chrono::steady_clock::now();
      for (;;) {
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
        if (waited >= (rank0_ending_ ? 60.0 : 10.0)) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
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
      std::fprintf(stderr, "%sshakedown: %s\n", stderr_line_start(), reason.c_str());
      std::fflush(stderr);
    }
    // Rank 0: the peers hear first that it is ending the job, so that none ends it on its own
    // (after a signal's grace, or after its own failure) while the run file is being marked.
    if (rank_ == 0) {
      for (int r = 1; r < size_; ++r) channel_->send(r, Type::kAbort, nullptr, 0);
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
  std::int64_t sent_seq = -2;
  std::int64_t sent_done = -1;
  double sent_us = 0;
  double interrupted_us = 0;  // when this rank told rank 0 it got a signal
  int interrupt_word = 0;
  const std::string& me = rank_names_[static_cast<std::size_t>(rank_)];
  for (;;) {
    bool stopping = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::duration<double>(options_.poll_s),
                     [&] { return stop_requested_; });
      if (abandon_) break;
      stopping = stop_requested_;
    }
    Report now = current();
    channel_->pump();
    bool ping = false;
    for (const OobChannel::Message& m : channel_->take()) {
      if (m.type == Type::kAbort && !rank0_ending_) {
        // Rank 0 is ending the job: abandon local work (NCCL communicators) and say so.
        send_abort_ack(run_local_aborts(options_.abort_grace_s));
        rank0_ending_ = true;
      } else if (m.type == Type::kPing) {
        ping = true;  // rank 0 asks who is still there (after a signal): answer at once
      }
    }
    // A signal: rank 0 marks the file and ends the job; this rank only tells it.
    if (interrupted_us == 0 && options_.pending_signal) {
      if (const int signal = options_.pending_signal(); signal != 0) {
        interrupt_word = signal;
        interrupted_us = now_us();
        channel_->send(0, Type::kInterrupt, &interrupt_word, sizeof interrupt_word);
      }
    }
    // The position when it changed, and at least once per heartbeat: silence means trouble.
    // A send that fails (rank 0 gone, or frozen with its queue full) is not retried: the next
    // one carries the newer position, and the time-outs below still apply.
    const double t = now_us();
    if (ping || now.msg.seq != sent_seq || now.msg.done != sent_done ||
        (t - sent_us) * 1e-6 >= options_.heartbeat_s) {
      channel_->send(0, Type::kPosition, &now.msg, sizeof now.msg);
      sent_seq = now.msg.seq;
      sent_done = now.msg.done;
      sent_us = t;
    }
    if (stopping) {
      now.msg.seq = kDoneSeq;
      channel_->send(0, Type::kPosition, &now.msg, sizeof now.msg);
      channel_->flush(options_.abort_grace_s);
      break;
    }
    if (interrupted_us > 0 && !rank0_ending_ &&
        (t - interrupted_us) * 1e-6 > options_.interrupt_grace_s) {
      abort_run(ExitCode::kRuntime,
                "interrupted by " + signal_name(interrupt_word) + " on " + me +
                    ", and rank 0 did not end the job within " +
                    format_seconds(options_.interrupt_grace_s) +
                    " (it may be gone: the run file then keeps status running)",
                true);
      break;
    }
    // Rank 0 normally ends a stalled run; if rank 0 itself is gone, leave on our own, later.
    if (now.stuck_s > 2 * now.msg.timeout_s + 30) {
      abort_run(ExitCode::kRuntime,
                "TIMEOUT: " + me + " made no progress at '" + now.msg.label + "' for " +
                    format_seconds(now.stuck_s) +
                    " and rank 0 did not end the run (rank 0 may be dead or hung)",
                true);
      break;
    }
  }
}

void Watchdog::run_root() {
  struct Rank {
    RankPosition position;
    double heard_us = 0;    // the last message from it
    double changed_us = 0;  // when its progress count last changed (or its step began)
    bool reported = false;  // it told us it got a signal
    bool finished = false;  // it reached the end of the run
  };
  const double t_start = now_us();
  std::vector<Rank> ranks(static_cast<std::size_t>(size_));
  for (auto& r : ranks) {
    r.position.label = "start";
    r.heard_us = t_start;
    r.changed_us = t_start;
  }
  struct Seen {
    StepSeen step;
    double first_us;
  };
  std::map<std::int64_t, Seen> seen;  // every step some rank reached, when it was first reached
  seen[0] = {StepSeen{"start", 0, options_.step_timeout_s, 0, 0, ""}, start_us_};
  auto note = [&](int r, const PositionMessage& m) {
    Rank& rank = ranks[static_cast<std::size_t>(r)];
    const double t = now_us();
    if (m.seq != rank.position.seq || m.done != rank.position.done) rank.changed_us = t;
    rank.position.seq = m.seq;
    rank.position.label = m.label;
    rank.position.done = m.done;
    StepSeen step{m.label, 0, m.timeout_s, m.total, m.expected_s, m.basis};
    seen.try_emplace(m.seq, Seen{step, t});
  };
  // After a signal: rank 0 pings every other rank and names those that do not answer.
  struct Interrupt {
    int signal = 0;
    int rank = 0;  // the rank that got it first
    double ping_us = 0;
  };
  std::optional<Interrupt> interrupt;
  auto start_interrupt = [&](int signal, int rank) {
    interrupt = Interrupt{signal, rank, now_us()};
    for (int r = 1; r < size_; ++r) channel_->send(r, Type::kPing, nullptr, 0);
  };
  // A rank whose connection closed has ended (on any host); other silent ranks are looked up in
  // /proc when they run on rank 0's host.
  auto liveness_of = [&](int r) {
    if (channel_->closed(r)) return Liveness::kGone;
    if (host_ids_[static_cast<std::size_t>(r)] != host_ids_[0]) return Liveness::kSilent;
    return process_state(pids_[static_cast<std::size_t>(r)]);
  };
  const double stale_s = 3 * options_.heartbeat_s;
  std::vector<double> closed_since(static_cast<std::size_t>(size_), 0);  // when seen closed
  int done = 0;
  for (;;) {
    bool stopping = false;
    bool judging = true;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::duration<double>(options_.poll_s),
                     [&] { return stop_requested_; });
      if (abandon_) break;
      stopping = stop_requested_;
      judging = !tripped_;
    }
    note(0, current().msg);
    ranks[0].heard_us = now_us();
    if (!interrupt && options_.pending_signal) {
      if (const int signal = options_.pending_signal(); signal != 0) start_interrupt(signal, 0);
    }
    channel_->pump();
    for (const OobChannel::Message& m : channel_->take()) {
      const int source = m.peer;
      if (source <= 0 || source >= size_) continue;
      Rank& from = ranks[static_cast<std::size_t>(source)];
      from.heard_us = now_us();
      if (m.type == Type::kAbortAck || m.type == Type::kAbortReport) {
        absorb_abort_message(source, m.type == Type::kAbortAck, m.payload);
      } else if (m.type == Type::kInterrupt && m.payload.size() == sizeof(int)) {
        int signal = 0;
        std::memcpy(&signal, m.payload.data(), sizeof signal);
        from.reported = true;
        if (!interrupt) start_interrupt(signal, source);
      } else if (m.type == Type::kFail && m.payload.size() >= sizeof(int)) {
        int code = 0;
        std::memcpy(&code, m.payload.data(), sizeof code);
        // The failing rank printed its message already; record it and end the job.
        abort_run(static_cast<ExitCode>(code), m.payload.substr(sizeof(int)), false);
      } else if (m.type == Type::kPosition && m.payload.size() == sizeof(PositionMessage)) {
        PositionMessage msg{};
        std::memcpy(&msg, m.payload.data(), sizeof msg);
        msg.label[kMaxLabel - 1] = '\0';
        msg.basis[kMaxBasis - 1] = '\0';
        if (msg.seq == kDoneSeq) {
          from.finished = true;
          ++done;
        } else {
          note(source, msg);
        }
      }
    }
    // A rank at the end of the run has nothing more to say: it is not silent.
    for (Rank& r : ranks) {
      if (r.finished) r.heard_us = now_us();
    }
    if (stopping && done == size_ - 1) break;
    if (!judging) continue;

    const double now = now_us();
    if (interrupt) {
      // Every rank that answered since the ping (or said it got the signal) is alive.
      std::vector<std::pair<std::string, Liveness>> silent;
      for (int r = 1; r < size_; ++r) {
        const Rank& rank = ranks[static_cast<std::size_t>(r)];
        if (!rank.reported && rank.heard_us < interrupt->ping_us) {
          silent.emplace_back(rank_names_[static_cast<std::size_t>(r)], liveness_of(r));
        }
      }
      if (silent.empty() || (now - interrupt->ping_us) * 1e-6 >= options_.interrupt_wait_s) {
        interrupted_ = true;
        for (int r = 1; r < size_; ++r) {
          const Rank& rank = ranks[static_cast<std::size_t>(r)];
          skip_ack_[static_cast<std::size_t>(r)] =
              !rank.reported && rank.heard_us < interrupt->ping_us;
        }
        abort_run(ExitCode::kRuntime,
                  interrupt_reason(interrupt->signal,
                                   rank_names_[static_cast<std::size_t>(interrupt->rank)], silent),
                  true);
      }
      continue;  // an interrupted run is not judged for time-outs
    }

    std::int64_t behind = ranks[0].position.seq;
    for (const auto& r : ranks) behind = std::min(behind, r.position.seq);
    // Steps every rank has left are of no further interest.
    seen.erase(seen.begin(), seen.lower_bound(behind));
    std::map<std::int64_t, StepSeen> steps;
    for (const auto& [seq, s] : seen) {
      steps[seq] = s.step;
      steps[seq].since_s = (now - s.first_us) * 1e-6;
    }
    std::vector<RankPosition> positions;
    for (int r = 0; r < size_; ++r) {
      const Rank& rank = ranks[static_cast<std::size_t>(r)];
      RankPosition p = rank.position;
      p.silent_s = (now - rank.heard_us) * 1e-6;
      p.idle_s = (now - rank.changed_us) * 1e-6;
      p.liveness = p.silent_s > stale_s || (r > 0 && !rank.finished && channel_->closed(r))
                       ? liveness_of(r)
                       : Liveness::kAnswering;
      // Silent, yet /proc shows it running: its watchdog thread is starved or blocked. Still
      // silent: it is not answering rank 0.
      positions.push_back(std::move(p));
    }
    // A rank whose connection to rank 0 closed before the end of the run has ended (killed,
    // crashed, out of memory) under a launcher that left the job running: the others would
    // wait for it in their next collective until the step's timeout. The job ends now, naming
    // it, after a second's grace for its own last words (a failure it reported).
    std::vector<std::string> ended, at;
    for (int r = 1; r < size_; ++r) {
      double& since = closed_since[static_cast<std::size_t>(r)];
      const Rank& rank = ranks[static_cast<std::size_t>(r)];
      if (rank.finished || !channel_->closed(r)) {
        since = 0;
        continue;
      }
      if (since == 0) since = now;
      if ((now - since) * 1e-6 < 1.0) continue;
      ended.push_back(rank_names_[static_cast<std::size_t>(r)]);
      at.push_back("'" + rank.position.label + "'");
      skip_ack_[static_cast<std::size_t>(r)] = true;
    }
    if (!ended.empty()) {
      std::sort(at.begin(), at.end());
      at.erase(std::unique(at.begin(), at.end()), at.end());
      abort_run(ExitCode::kRuntime,
                join_names(ended) + " ended unexpectedly (" +
                    (ended.size() == 1 ? "its process is gone" : "their processes are gone") +
                    ": killed, crashed or out of memory; the kernel log says which) at " +
                    join_limited(at, ", ", 3) + ", and the other ranks cannot go on without it",
                true);
      continue;
    }
    // Judged while stopping too: a rank that never reaches the end of the run is a hang as well.
    // Only evaluated when some step is overdue, so /proc is read rarely.
    AssessLimits limits;
    limits.late_s = 1.5 * options_.heartbeat_s;
    limits.progress_idle_s = std::max(5.0, 5 * options_.heartbeat_s);
    StallReport report = assess_positions(positions, rank_names_, steps, limits);
    if (report.stalled) {
      for (int r : report.laggards) {
        skip_ack_[static_cast<std::size_t>(r)] =
            positions[static_cast<std::size_t>(r)].liveness != Liveness::kAnswering;
      }
      abort_run(ExitCode::kRuntime, "TIMEOUT: " + report.message, true);
    } else if ((now - start_us_) * 1e-6 > options_.run_timeout_s) {
      abort_run(
          ExitCode::kRuntime,
          "TIMEOUT: the run exceeded timeouts.run_s = " + format_seconds(options_.run_timeout_s) +
              " while rank 0 was at '" + ranks[0].position.label + "'",
          true);
    }
  }
}

}  // namespace shakedown
