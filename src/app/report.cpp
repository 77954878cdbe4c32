// `shakedown report RUN.h5 [--baseline B.h5] [-o report.html]`: the HTML report of a run file
// (analysis/reporters/html.cpp), from the files alone (no MPI).
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "analysis/compare.hpp"
#include "analysis/reporters/formats.hpp"
#include "analysis/verdict.hpp"
#include "app/app.hpp"
#include "app/common.hpp"
#include "core/error.hpp"

namespace shakedown {

int report_command(const ReportOptions& options) {
  std::filesystem::path out = options.out;
  if (out.empty()) {
    out = options.path;
    out.replace_extension(".html");
  }
  refuse_to_overwrite(out, {options.path, options.baseline}, "HTML report");
  const ChildAnswer answer = read_in_child(
      [&] {
        const RunFile file = RunFile::open(options.path);
        const RunAnalysis analysis = analyze_stored(file);
        const int verdict = static_cast<int>(analysis.verdict.code);
        if (options.baseline.empty()) {
          return ChildAnswer{verdict, format_html(file, analysis, nullptr)};
        }
        CompareOptions o;
        o.alpha = options.alpha;
        o.min_effect = options.min_effect;
        const Comparison c = compare_runs(open_run_file(options.baseline, "--baseline"), file, o);
        return ChildAnswer{std::max(verdict, c.regression_code()), format_html(file, analysis, &c)};
      },
      "'" + options.path + "'" +
          (options.baseline.empty() ? "" : " or '" + options.baseline + "'"));
  write_report_file(out.string(), answer.text);
  std::cerr << "shakedown: wrote the HTML report " << out.string() << " ("
            << (answer.text.size() + 1023) / 1024 << " KiB)\n";
  return answer.code;
}

}  // namespace shakedown
