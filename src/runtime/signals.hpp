#pragma once
// SIGINT, SIGTERM and SIGHUP while a run is going: what Slurm sends at the time limit and on
// scancel, what mpirun sends when the user presses Ctrl-C or when another rank died, what a closed
// terminal sends. The handler only records the signal (an atomic store, async-signal-safe); the
// watchdog thread acts on it at its next poll: rank 0 marks the run file aborted, names the
// cause and ends the job with exit 3 (runtime/watchdog.hpp).
#include <csignal>
#include <string>

namespace shakedown {

// Installs the handlers while it lives and restores the previous ones after. One at a time per
// process (a second one is an InternalError). The signal number is the one piece of process-wide
// state shakedown has: a signal handler has nowhere else to put it.
class SignalWatch {
 public:
  SignalWatch();
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  // The first of SIGINT/SIGTERM/SIGHUP received since construction, 0 for none.
  int pending() const noexcept;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_hup_ {};
};

// "SIGTERM" for 15; "signal N" for others.
std::string signal_name(int signal);
// What usually sends it, for the message that names it ("Slurm time limit, scancel or Ctrl-C").
std::string signal_cause(int signal);

}  // namespace shakedown
