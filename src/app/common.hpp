#pragma once
// Pieces shared by the MPI subcommands (run, topo).
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace shakedown {

// Loads the config file (or the built-in defaults) with --set overrides, validated.
Config load_run_config(const std::string& config_path, const std::vector<std::string>& sets);

// Ends the process with `code` if MPI init and context setup take longer than `seconds`:
// a launcher that never wires up the ranks must not hang the job silently.
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

}  // namespace shakedown
