// `shakedown compare BASELINE.h5 RUN.h5`: the before/after comparison (analysis/compare.hpp),
// from the two files alone (no MPI).
#include <iostream>

#include "analysis/compare.hpp"
#include "app/app.hpp"
#include "core/error.hpp"

namespace shakedown {

int compare_command(const CompareCommandOptions& options) {
  auto open = [](const std::string& path) {
    try {
      return RunFile::open(path);
    } catch (const Error& e) {
      throw UsageError("compare: cannot read " + path + ": " + e.what());
    }
  };
  const RunFile before = open(options.baseline);
  const RunFile after = open(options.run);
  CompareOptions o;
  o.alpha = options.alpha;
  o.min_effect = options.min_effect;
  const Comparison c = compare_runs(before, after, o);
  std::cout << format_comparison(c, options.detail) << std::flush;
  return c.exit_code();
}

}  // namespace shakedown
