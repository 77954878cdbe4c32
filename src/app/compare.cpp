// `shakedown compare BASELINE.h5 RUN.h5`: the before/after comparison (analysis/compare.hpp),
// from the two files alone (no MPI), as text, JSON, JUnit XML or a Prometheus textfile.

#include "analysis/compare.hpp"
#include "analysis/reporters/formats.hpp"
#include "app/app.hpp"
#include "app/common.hpp"
#include "core/error.hpp"

namespace shakedown {

int compare_command(const CompareCommandOptions& options) {
  const ReportFormat format = format_option(options.format, "--format");
  refuse_to_overwrite(options.out, {options.baseline, options.run}, options.format + " comparison");
  const ChildAnswer answer = read_in_child(
      [&] {
        CompareOptions o;
        o.alpha = options.alpha;
        o.min_effect = options.min_effect;
        const Comparison c = compare_runs(open_run_file(options.baseline, "compare"),
                                          open_run_file(options.run, "compare"), o);
        return ChildAnswer{c.exit_code(), format_compare(format, c, options.detail)};
      },
      "'" + options.baseline + "' or '" + options.run + "'");
  return deliver(answer, options.out);
}

}  // namespace shakedown
