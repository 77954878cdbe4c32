// `shakedown summary RUN.h5`: what the run printed at its end, from the file alone (no MPI).
#include <iostream>

#include "analysis/summary.hpp"
#include "app/app.hpp"

namespace shakedown {

int summary_command(const std::string& path) {
  RunFile file = RunFile::open(path);
  Verdict verdict = compute_verdict(file);
  std::cout << format_summary(file, verdict) << std::flush;
  return static_cast<int>(verdict.code);
}

}  // namespace shakedown
