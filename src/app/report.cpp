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
  for (const std::string* input : {&options.path, &options.baseline}) {
    std::error_code same_ec;
    if (!input->empty() && std::filesystem::equivalent(out, *input, same_ec)) {
      throw UsageError("-o " + out.string() + " is a run file; name another file for the " +
                       "HTML report");
    }
  }
  int code = 0;
  const std::string files =
      "'" + options.path + "'" + (options.baseline.empty() ? "" : " or '" + options.baseline + "'");
  const std::string html = read_in_child(
      [&] {
        const RunFile file = RunFile::open(options.path);
        const RunAnalysis analysis = analyze_stored(file);
        int answer = static_cast<int>(analysis.verdict.code);
        if (options.baseline.empty())
          return ChildAnswer{answer, format_html(file, analysis, nullptr)};
        RunFile before = [&] {
          try {
            return RunFile::open(options.baseline);
          } catch (const Error& e) {
            throw UsageError("--baseline: cannot read " + options.baseline + ": " + e.what());
          }
        }();
        CompareOptions o;
        o.alpha = options.alpha;
        o.min_effect = options.min_effect;
        const Comparison c = compare_runs(before, file, o);
        answer = std::max(answer, c.exit_code());
        return ChildAnswer{answer, format_html(file, analysis, &c)};
      },
      files, &code);
  write_report_file(out.string(), html);
  std::cerr << "shakedown: wrote the HTML report " << out.string() << " ("
            << (html.size() + 1023) / 1024 << " KiB)\n";
  return code;
}

}  // namespace shakedown
