#pragma once
// The report formats `summary --format` and `run --report` write (docs/reports.md): the text
// summary, JSON (docs/report-schema.json), JUnit XML and a Prometheus textfile. Each reporter
// formats what analyze() found; none reads measurements of its own beyond the file's records.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/compare.hpp"
#include "analysis/verdict.hpp"
#include "record/reader.hpp"

namespace shakedown {

enum class ReportFormat { kText, kJson, kJunit, kPrometheus };

// "text", "json", "junit", "prometheus".
std::string_view format_name(ReportFormat format);
std::optional<ReportFormat> parse_format(std::string_view name);
// Every format's name, for messages.
std::vector<std::string> format_names();
// What `run --report` appends to the run file's stem: ".txt", ".json", ".junit.xml", ".prom".
std::string_view format_suffix(ReportFormat format);

// The version of the JSON report's layout ("report_version"); docs/report-schema.json.
inline constexpr int kReportVersion = 1;

std::string format_json(const RunFile& file, const RunAnalysis& analysis);
std::string format_junit(const RunFile& file, const RunAnalysis& analysis);
std::string format_prometheus(const RunFile& file, const RunAnalysis& analysis);
// The report in `format`; kText is format_summary() (detail applies to text only).
std::string format_report(ReportFormat format, const RunFile& file, const RunAnalysis& analysis,
                          bool detail);

// `shakedown compare` in each format: the text of format_comparison(), JSON
// (docs/compare-schema.json), JUnit (one testcase per place compared; a place that got slower
// fails) and Prometheus (counts, the verdict, and one series per place that changed).
std::string format_compare_json(const Comparison& c);
std::string format_compare_junit(const Comparison& c);
std::string format_compare_prometheus(const Comparison& c);
std::string format_compare(ReportFormat format, const Comparison& c, bool detail);

// The HTML report (docs/reports.md): one self-contained page (Chart.js inlined, no network) with
// the verdict, checks and drain list, the comparison with `baseline` when given, the charts of
// every phase the run has, and the run's metadata, inventory and topology.
std::string format_html(const RunFile& file, const RunAnalysis& analysis,
                        const Comparison* baseline);

// Text for XML and HTML (element content and quoted attributes): valid UTF-8, & < > " '
// escaped, control characters other than tab and newlines as '?'. JUnit and the HTML page.
std::string markup_escape(std::string_view raw);

// Writes `text` to `path` whole or not at all (a temporary file in the same directory, renamed
// over it), so node_exporter's textfile collector or a CI job never reads half a report.
// RuntimeFault naming the path when it cannot.
void write_report_file(const std::string& path, const std::string& text);

}  // namespace shakedown
