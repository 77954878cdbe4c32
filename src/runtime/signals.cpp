#include "runtime/signals.hpp"

#include <atomic>

#include "core/error.hpp"

namespace shakedown {

namespace {

// The signal handler's only output (see SignalWatch).
std::atomic<int> g_pending{0};
std::atomic<bool> g_installed{false};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free store");

extern "C" void record_signal(int signal) {
  int none = 0;
  g_pending.compare_exchange_strong(none, signal);  // keep the first
}

void install(int signal, int flags, struct sigaction* old) {
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = flags;
  if (sigaction(signal, &action, old) != 0) {
    throw InternalError("sigaction(" + signal_name(signal) + ") failed");
  }
}

}  // namespace

SignalWatch::SignalWatch() {
  if (g_installed.exchange(true)) throw InternalError("a second SignalWatch in one process");
  g_pending.store(0);
  // SA_RESETHAND on SIGINT only: a second Ctrl-C ends the process at once, as users expect.
  // Not on SIGTERM: srun may forward scancel's SIGTERM to tasks that Slurm also signals
  // directly, and the second copy must not kill a rank before rank 0 has marked the file.
  install(SIGINT, SA_RESTART | SA_RESETHAND, &old_int_);
  install(SIGTERM, SA_RESTART, &old_term_);
  install(SIGHUP, SA_RESTART, &old_hup_);
}

SignalWatch::~SignalWatch() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
  g_installed.store(false);
}

int SignalWatch::pending() const noexcept {
  return g_pending.load();
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "signal " + std::to_string(signal);
  }
}

std::string signal_cause(int signal) {
  switch (signal) {
    case SIGINT:
      return "Ctrl-C";
    case SIGTERM:
      return "Slurm time limit, scancel or Ctrl-C";
    case SIGHUP:
      return "the terminal or session that started the job ended";
    default:
      return "a signal";
  }
}

}  // namespace shakedown
