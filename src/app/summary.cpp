// `shakedown summary RUN.h5`: what the run printed at its end, from the file alone (no MPI), or
// the same verdict as JSON, JUnit XML or a Prometheus textfile.
#include <chrono>
#include <filesystem>
#include <iostream>

#include "analysis/reporters/formats.hpp"
#include "analysis/verdict.hpp"
#include "app/app.hpp"
#include "core/dynamic_library.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace shakedown {

namespace {

// The child's answer: "<exit code> <ok|error>\n" then the summary, or the error's message, a NUL
// and its detail.
std::string encode(int code, bool ok, const std::string& text, const std::string& detail = "") {
  return std::to_string(code) + (ok ? " ok\n" : " error\n") + text + '\0' + detail;
}

std::string read_summary(const SummaryOptions& o, ReportFormat format) {
  try {
    const RunFile file = RunFile::open(o.path);
    const RunAnalysis analysis = o.recompute ? analyze(file) : analyze_stored(file);
    return encode(static_cast<int>(analysis.verdict.code), true,
                  format_report(format, file, analysis, o.detail));
  } catch (const Error& e) {
    return encode(static_cast<int>(e.code()), false, e.what(), e.detail());
  } catch (const std::exception& e) {
    return encode(static_cast<int>(ExitCode::kInternal), false,
                  std::string("internal error: ") + e.what());
  }
}

}  // namespace

int summary_command(const SummaryOptions& options) {
  const std::string& path = options.path;
  std::error_code same_ec;
  if (!options.out.empty() && std::filesystem::equivalent(options.out, path, same_ec)) {
    throw UsageError("-o " + options.out + " is the run file itself; name another file for the " +
                     options.format + " report");
  }
  const auto format = parse_format(options.format);
  if (!format) {
    throw UsageError("--format: unknown format \"" + options.format +
                     "\" (known: " + join(format_names(), ", ") + ")");
  }
  // A damaged file (truncated, overwritten, corrupted in transfer) can crash HDF5 1.10 itself
  // while it reads (found by fuzzing mutated run files: a corrupt string heap makes it copy
  // past its buffers) or make it loop forever. The file is read in a child process, so either
  // becomes an error message (a hang after 5 minutes: large files read in seconds).
  const ChildProbe probe =
      probe_in_child([&] { return read_summary(options, *format); }, std::chrono::minutes(5));
  if (!probe.ok) {
    throw UsageError("cannot read '" + path + "': HDF5 " + probe.text +
                     " while reading it; the file is damaged (truncated, overwritten or "
                     "corrupted in transfer), and other HDF5 readers will likely fail on it too");
  }
  const std::string& answer = probe.text;
  const auto newline = answer.find('\n');
  const auto nul = answer.find('\0', newline == std::string::npos ? 0 : newline);
  if (newline == std::string::npos || nul == std::string::npos) {
    throw InternalError("summary: the reading process gave no answer for '" + path + "'");
  }
  const int code = std::stoi(answer.substr(0, newline));
  const bool ok = answer.compare(newline - 2, 2, "ok") == 0;
  const std::string text = answer.substr(newline + 1, nul - newline - 1);
  if (!ok) throw Error(static_cast<ExitCode>(code), text, answer.substr(nul + 1));
  if (options.out.empty()) {
    std::cout << text << std::flush;
  } else {
    write_report_file(options.out, text);
  }
  return code;
}

}  // namespace shakedown
