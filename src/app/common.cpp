#include "app/common.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "app/app.hpp"
#include "config/load.hpp"
#include "core/error.hpp"

namespace shakedown {

Config load_run_config(const std::string& config_path, const std::vector<std::string>& sets) {
  if (config_path.empty()) {
    // Built-in defaults equal configs/smoke.yaml; overrides still go through validation.
    return default_config(sets);
  }
  return load_config_file(config_path, sets);
}

int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return 0;
}

struct InitGuard::State {
  std::mutex mutex;
  std::condition_variable cv;
  bool disarmed = false;
  std::thread thread;
};

InitGuard::InitGuard(double seconds) : state_(std::make_unique<State>()) {
  state_->thread = std::thread([s = state_.get(), seconds] {
    std::unique_lock lock(s->mutex);
    if (s->cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return s->disarmed; })) {
      return;
    }
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::fprintf(stderr,
                 "shakedown: TIMEOUT: rank %d (host %s): start-up (MPI initialisation, context "
                 "setup, output file) did not finish within timeouts.init_s = %.0f s; some ranks "
                 "never started or cannot "
                 "reach each other (check the launcher, hostfile and network)\n",
                 launcher_rank(), host, seconds);
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

}  // namespace shakedown
