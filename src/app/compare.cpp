// `shakedown compare BASELINE.h5 RUN.h5`: the before/after comparison (analysis/compare.hpp),
// from the two files alone (no MPI), as text, JSON, JUnit XML or a Prometheus textfile.
#include <filesystem>
#include <iostream>

#include "analysis/compare.hpp"
#include "analysis/reporters/formats.hpp"
#include "app/app.hpp"
#include "app/common.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace shakedown {

int compare_command(const CompareCommandOptions& options) {
  const auto format = parse_format(options.format);
  if (!format) {
    throw UsageError("--format: unknown format \"" + options.format +
                     "\" (known: " + join(format_names(), ", ") + ")");
  }
  for (const std::string* input : {&options.baseline, &options.run}) {
    std::error_code same_ec;
    if (!options.out.empty() && std::filesystem::equivalent(options.out, *input, same_ec)) {
      throw UsageError("-o " + options.out + " is one of the run files compared; name another " +
                       "file for the " + options.format + " comparison");
    }
  }
  int code = 0;
  const std::string text = read_in_child(
      [&] {
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
        return ChildAnswer{c.exit_code(), format_compare(*format, c, options.detail)};
      },
      "'" + options.baseline + "' or '" + options.run + "'", &code);
  if (options.out.empty()) {
    std::cout << text << std::flush;
  } else {
    write_report_file(options.out, text);
  }
  return code;
}

}  // namespace shakedown
