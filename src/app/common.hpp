#pragma once
// Pieces shared by the subcommands: the MPI ones (run, topo) and the file readers (summary,
// compare, report).
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analysis/reporters/formats.hpp"
#include "config/config.hpp"
#include "core/error.hpp"
#include "record/recorder.hpp"
#include "runtime/context.hpp"
#include "runtime/signals.hpp"
#include "runtime/watchdog.hpp"
#include "topology/placement.hpp"
#include "topology/rank_info.hpp"

namespace shakedown {

// Loads the config file (or the built-in defaults = configs/smoke.yaml) with --set overrides.
// Every rank calls it on its own copy; wrap it in agreed() so all ranks fail alike.
Config load_run_config(const std::string& config_path, const std::vector<std::string>& sets);

// timeouts.init_s of the config if it loads here, else the default: the start-up guard must run
// before MPI exists, i.e. before the ranks can agree on a config error.
double peek_init_timeout(const std::string& config_path, const std::vector<std::string>& sets);

// Ends the process with exit 3 if start-up (MPI init, context, output file) takes longer than
// `seconds`: a launcher that never wires up the ranks must not hang the job silently.
class InitGuard {
 public:
  explicit InitGuard(double seconds);
  ~InitGuard();
  InitGuard(const InitGuard&) = delete;
  InitGuard& operator=(const InitGuard&) = delete;
  void disarm();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The watchdog for a run: step timeout timeouts.phase_s, whole run timeouts.run_s, ranks named
// as the Context describes them, SIGINT/SIGTERM/SIGHUP read from `signals` (which outlives it).
std::unique_ptr<Watchdog> make_watchdog(const Context& ctx, const Config& config,
                                        Watchdog::AbortHook hook, const SignalWatch& signals);

// "shakedown: error: <message>" on stderr, the details (a library's error stack) after it.
void print_error(const Error& e);

// Runs a subcommand's body under MPI. A set-up error that every rank raised alike (AgreedError)
// is printed here, by the one rank that reports it, before MPI is finalized, and every rank then
// waits at a barrier: a rank that left first with the error's exit code would make mpirun kill
// the others - the reporting one among them - before the message is out.
template <class Body>
int report_agreed_errors(Body&& body) {
  try {
    return body();
  } catch (const AgreedError& e) {
    if (e.reporter()) print_error(e);
    MPI_Barrier(MPI_COMM_WORLD);
    return static_cast<int>(e.code());
  }
}

// Runs `body` on every rank. An error ends the job through the watchdog: named and recorded by
// rank 0 (an AgreedError, the same on every rank, is reported once, by rank 0).
template <class Body>
void run_guarded(const Context& ctx, Watchdog& watchdog, Body&& body) {
  try {
    body();
  } catch (const RunAborted& e) {
    // The watchdog thread is ending the job (it marked the file): stop here and let it.
    watchdog.await_abort(e.code());
  } catch (const AgreedError& e) {
    if (ctx.is_root()) watchdog.fail(e.code(), e.what(), "", e.names_rank());
    watchdog.await_abort(e.code());
  } catch (const Error& e) {
    watchdog.fail(e.code(), e.what(), e.detail());
  } catch (const std::exception& e) {
    watchdog.fail(ExitCode::kInternal, std::string("internal error: ") + e.what());
  }
}

// What a reader run by read_in_child() gives: the exit code and the text to print.
struct ChildAnswer {
  int code = 0;
  std::string text;
};
// Runs `read` (which opens run files and formats what it found) in a child process and returns
// its answer. A damaged file (truncated, overwritten, corrupted in transfer) can crash HDF5 1.10
// itself while it reads (found by fuzzing mutated run files: a corrupt string heap makes it copy
// past its buffers) or make it loop forever: either becomes a UsageError naming `files` (a hang
// after 5 minutes: large files read in seconds). An Error thrown by `read` is rethrown here with
// its code, message and detail.
ChildAnswer read_in_child(const std::function<ChildAnswer()>& read, const std::string& files);
// Prints the answer's text on standard output, or writes it to `out` when one is named (-o FILE);
// returns its exit code.
int deliver(const ChildAnswer& answer, const std::string& out);

// The run file at `path`, or a UsageError "<what>: cannot read <path>: <why>" ("compare",
// "--baseline").
RunFile open_run_file(const std::string& path, const std::string& what);

// The report format `name` given to `option` ("--format", "--report"); a UsageError listing the
// known formats and `extra` (what else the option takes) otherwise.
ReportFormat format_option(const std::string& name, const std::string& option,
                           const std::string& extra = "");

// UsageError when `out` (an -o FILE) is one of the run files `inputs` (empty ones are skipped):
// a report must never replace the measurements it is made from.
void refuse_to_overwrite(const std::filesystem::path& out, const std::vector<std::string>& inputs,
                         const std::string& what);

// This rank's place and hardware, as discovery sees it from the Context's layout.
RankInfo discover_this_rank(const Context& ctx);
// `network`: the topology.blocks map (NetworkMap::read), null for none.
PlacementOptions placement_options(const Context& ctx, const Config& config,
                                   const NetworkMap* network = nullptr);

}  // namespace shakedown
