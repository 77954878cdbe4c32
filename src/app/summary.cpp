// `shakedown summary RUN.h5`: what the run printed at its end, from the file alone (no MPI), or
// the same verdict as JSON, JUnit XML or a Prometheus textfile.
#include <filesystem>

#include "analysis/reporters/formats.hpp"
#include "analysis/verdict.hpp"
#include "app/app.hpp"
#include "app/common.hpp"
#include "core/error.hpp"

namespace shakedown {

int summary_command(const SummaryOptions& options) {
  refuse_to_overwrite(options.out, {options.path}, options.format + " report");
  const ReportFormat format = format_option(options.format, "--format");
  const ChildAnswer answer = read_in_child(
      [&] {
        const RunFile file = RunFile::open(options.path);
        const RunAnalysis analysis = options.recompute ? analyze(file) : analyze_stored(file);
        return ChildAnswer{static_cast<int>(analysis.verdict.code),
                           format_report(format, file, analysis, options.detail)};
      },
      "'" + options.path + "'");
  return deliver(answer, options.out);
}

}  // namespace shakedown
