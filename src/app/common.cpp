#include "app/common.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

#include "analysis/reporters/formats.hpp"
#include "config/load.hpp"
#include "core/dynamic_library.hpp"
#include "core/error.hpp"
#include "core/host.hpp"
#include "core/strings.hpp"
#include "topology/discovery.hpp"

namespace shakedown {

void print_error(const Error& e) {
  std::fprintf(stderr, "%sshakedown: error: %s\n", stderr_line_start(), e.what());
  if (!e.detail().empty()) std::fprintf(stderr, "shakedown: details: %s\n", e.detail().c_str());
  std::fflush(stderr);
}

Config load_run_config(const std::string& config_path, const std::vector<std::string>& sets) {
  return config_path.empty() ? default_config(sets) : load_config_file(config_path, sets);
}

double peek_init_timeout(const std::string& config_path, const std::vector<std::string>& sets) {
  try {
    return load_run_config(config_path, sets).timeouts.init_s;
  } catch (const std::exception&) {
    return TimeoutsConfig{}.init_s;  // the error itself is reported once MPI is up
  }
}

struct InitGuard::State {
  std::mutex mutex;
  std::condition_variable cv;
  bool disarmed = false;
  std::thread thread;
};

InitGuard::InitGuard(double seconds) : state_(std::make_unique<State>()) {
  // Read before the thread starts: MPI_Init may change the environment meanwhile.
  const int rank = launcher_rank();
  const std::string host = local_hostname();
  state_->thread = std::thread([s = state_.get(), seconds, rank, host] {
    std::unique_lock lock(s->mutex);
    if (s->cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return s->disarmed; })) {
      return;
    }
    std::fprintf(stderr,
                 "shakedown: TIMEOUT: rank %d (host %s): start-up (MPI initialisation, context "
                 "setup, output file) did not finish within timeouts.init_s = %.0f s; some ranks "
                 "never started or cannot reach each other (check the launcher, hostfile and "
                 "network)\n",
                 rank, host.c_str(), seconds);
    std::fflush(stderr);
    // MPI is not usable yet, so there is no MPI_Abort to call and no exception can reach main.
    std::_Exit(static_cast<int>(ExitCode::kRuntime));
  });
}

void InitGuard::disarm() {
  {
    std::lock_guard lock(state_->mutex);
    state_->disarmed = true;
  }
  state_->cv.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
}

InitGuard::~InitGuard() {
  disarm();
}

std::unique_ptr<Watchdog> make_watchdog(const Context& ctx, const Config& config,
                                        Watchdog::AbortHook hook, const SignalWatch& signals) {
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(ctx.world_size()));
  for (int r = 0; r < ctx.world_size(); ++r) names.push_back(ctx.describe_rank(r));
  Watchdog::Options options;
  options.step_timeout_s = config.timeouts.phase_s;
  options.run_timeout_s = config.timeouts.run_s;
  options.connect_timeout_s = config.timeouts.init_s;  // the watchdog's start-up is start-up
  options.pending_signal = [&signals] { return signals.pending(); };
  return std::make_unique<Watchdog>(ctx.world(), options, std::move(names), std::move(hook));
}

RankInfo discover_this_rank(const Context& ctx) {
  return discover_rank(ctx.rank(), ctx.node_index(), ctx.local_rank(), ctx.local_size(),
                       ctx.host_local_rank());
}

PlacementOptions placement_options(const Context& ctx, const Config& config,
                                   const NetworkMap* network) {
  PlacementOptions opts;
  opts.network = network;
  opts.allow_oversubscribe = config.topology.allow_oversubscribe;
  opts.expected_gpus_per_node = config.topology.expected_gpus_per_node;
  opts.virtual_nodes = ctx.virtual_nodes() > 1;
  return opts;
}

namespace {

// The child's answer: "<exit code> <ok|error>\n" then the text, or the error's message, a NUL
// and its detail.
std::string encode(int code, bool ok, const std::string& text, const std::string& detail = "") {
  return std::to_string(code) + (ok ? " ok\n" : " error\n") + text + '\0' + detail;
}

}  // namespace

ChildAnswer read_in_child(const std::function<ChildAnswer()>& read, const std::string& files) {
  const ChildProbe probe = probe_in_child(
      [&] {
        try {
          const ChildAnswer a = read();
          return encode(a.code, true, a.text);
        } catch (const Error& e) {
          return encode(static_cast<int>(e.code()), false, e.what(), e.detail());
        } catch (const std::exception& e) {
          return encode(static_cast<int>(ExitCode::kInternal), false,
                        std::string("internal error: ") + e.what());
        }
      },
      std::chrono::minutes(5));
  if (!probe.ok) {
    throw UsageError("cannot read " + files + ": HDF5 " + probe.text +
                     " while reading it; the file is damaged (truncated, overwritten or "
                     "corrupted in transfer), and other HDF5 readers will likely fail on it too");
  }
  const std::string& answer = probe.text;
  const auto newline = answer.find('\n');
  const auto nul = answer.find('\0', newline == std::string::npos ? 0 : newline);
  if (newline == std::string::npos || nul == std::string::npos || newline < 2) {
    throw InternalError("the reading process gave no answer for " + files);
  }
  ChildAnswer out{std::stoi(answer.substr(0, newline)),
                  answer.substr(newline + 1, nul - newline - 1)};
  if (answer.compare(newline - 2, 2, "ok") != 0) {
    throw Error(static_cast<ExitCode>(out.code), out.text, answer.substr(nul + 1));
  }
  return out;
}

int deliver(const ChildAnswer& answer, const std::string& out) {
  if (out.empty()) {
    std::cout << answer.text << std::flush;
  } else {
    write_report_file(out, answer.text);
  }
  return answer.code;
}

RunFile open_run_file(const std::string& path, const std::string& what) {
  try {
    return RunFile::open(path);
  } catch (const Error& e) {
    throw UsageError(what + ": cannot read " + path + ": " + e.what());
  }
}

ReportFormat format_option(const std::string& name, const std::string& option,
                           const std::string& extra) {
  const auto format = parse_format(name);
  if (!format) {
    throw UsageError(option + ": unknown format \"" + name + "\" (known: " +
                     join(format_names(), ", ") + (extra.empty() ? "" : ", " + extra) + ")");
  }
  return *format;
}

void refuse_to_overwrite(const std::filesystem::path& out, const std::vector<std::string>& inputs,
                         const std::string& what) {
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (!out.empty() && !input.empty() && std::filesystem::equivalent(out, input, ec)) {
      throw UsageError("-o " + out.string() + " is the run file itself (" + input +
                       "); name another file for the " + what);
    }
  }
}

void report_error(const std::exception& e) {
  if (const auto* error = dynamic_cast<const Error*>(&e)) {
    print_error(*error);
    return;
  }
  print_error(Error(ExitCode::kInternal, e.what()));
}

}  // namespace shakedown
