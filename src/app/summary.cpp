// `shakedown summary RUN.h5`: what the run printed at its end, from the file alone (no MPI), or
// the same verdict as JSON, JUnit XML or a Prometheus textfile.
#include <filesystem>
#include <iostream>

#include "analysis/reporters/formats.hpp"
#include "analysis/verdict.hpp"
#include "app/app.hpp"
#include "app/common.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace shakedown {

int summary_command(const SummaryOptions& options) {
  const std::string& path = options.path;
  std::error_code same_ec;
  if (!options.out.empty() && std::filesystem::equivalent(options.out, path, same_ec)) {
    throw UsageError("-o " + options.out + " is the run file itself; name another file for the " +
                     options.format + " report");
  }
  int code = 0;
  const auto format = parse_format(options.format);
  if (!format) {
    throw UsageError("--format: unknown format \"" + options.format +
                     "\" (known: " + join(format_names(), ", ") + ")");
  }
  const std::string text = read_in_child(
      [&] {
        const RunFile file = RunFile::open(options.path);
        const RunAnalysis analysis = options.recompute ? analyze(file) : analyze_stored(file);
        return ChildAnswer{static_cast<int>(analysis.verdict.code),
                           format_report(*format, file, analysis, options.detail)};
      },
      "'" + path + "'", &code);
  if (options.out.empty()) {
    std::cout << text << std::flush;
  } else {
    write_report_file(options.out, text);
  }
  return code;
}

}  // namespace shakedown
