#include "analysis/reporters/formats.hpp"

#include "core/strings.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "analysis/reporters/summary_text.hpp"
#include "core/error.hpp"

namespace shakedown {

namespace {

struct FormatInfo {
  ReportFormat format;
  std::string_view name, suffix;
};
constexpr FormatInfo kFormats[] = {{ReportFormat::kText, "text", ".txt"},
                                   {ReportFormat::kJson, "json", ".json"},
                                   {ReportFormat::kJunit, "junit", ".junit.xml"},
                                   {ReportFormat::kPrometheus, "prometheus", ".prom"}};

const FormatInfo& info(ReportFormat f) {
  for (const auto& i : kFormats) {
    if (i.format == f) return i;
  }
  return kFormats[0];
}

}  // namespace

std::string_view format_name(ReportFormat f) {
  return info(f).name;
}
std::string_view format_suffix(ReportFormat f) {
  return info(f).suffix;
}

std::optional<ReportFormat> parse_format(std::string_view name) {
  for (const auto& i : kFormats) {
    if (i.name == name) return i.format;
  }
  return std::nullopt;
}

std::vector<std::string> format_names() {
  std::vector<std::string> out;
  for (const auto& i : kFormats) out.emplace_back(i.name);
  return out;
}

std::string format_report(ReportFormat format, const RunFile& file, const RunAnalysis& analysis,
                          bool detail) {
  switch (format) {
    case ReportFormat::kText:
      return format_summary(file, analysis, detail);
    case ReportFormat::kJson:
      return format_json(file, analysis);
    case ReportFormat::kJunit:
      return format_junit(file, analysis);
    case ReportFormat::kPrometheus:
      return format_prometheus(file, analysis);
  }
  return "";
}

std::string format_compare(ReportFormat format, const Comparison& c, bool detail) {
  switch (format) {
    case ReportFormat::kText:
      return format_comparison(c, detail);
    case ReportFormat::kJson:
      return format_compare_json(c);
    case ReportFormat::kJunit:
      return format_compare_junit(c);
    case ReportFormat::kPrometheus:
      return format_compare_prometheus(c);
  }
  return "";
}

void write_report_file(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  // A hidden name in the same directory: the rename is atomic, and node_exporter's textfile
  // collector reads only *.prom.
  const fs::path tmp = target.parent_path() /
                       ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
  auto fail = [&](const std::string& what, int err) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw RuntimeFault("cannot write the report '" + path + "': " + what +
                       (err != 0 ? std::string(": ") + std::strerror(err) : "") +
                       " (is the directory there, writable and not full?)");
  };
  {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) fail("cannot create " + tmp.string(), errno);
    const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    const int werr = errno;
    const bool flushed = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
    const int ferr = errno;
    const bool closed = std::fclose(f) == 0;
    if (!wrote) fail("writing failed", werr);
    if (!flushed || !closed) fail("writing failed", ferr);
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) fail("cannot rename " + tmp.string() + " to it", ec.value());
}

std::string markup_escape(std::string_view raw) {
  const std::string s = valid_utf8(raw);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out +=
            (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') ? '?' : c;
    }
  }
  return out;
}

}  // namespace shakedown
