#include "analysis/collectives_report.hpp"

#include "analysis/collectives_data.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "analysis/number_text.hpp"
#include "record/schema.hpp"

namespace shakedown {

namespace {

std::string size_text(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  }
  return buf;
}

// Returns how many rows had a busbw above the configured link rate (marked with '!').
int format_group(const RunFile& f, const std::string& path, const std::string& title,
                 std::ostringstream& os) {
  const std::string unsupported = attr_or(f, path, "unsupported");
  if (!unsupported.empty()) {
    os << "  " << title << ": unsupported: " << unsupported << "\n";
    return 0;
  }
  if (!f.has(path + "/sizes")) return 0;
  const double link = f.has_attr(path, "link_GBps") ? f.attr_double(path, "link_GBps") : 0.0;
  int above = 0;
  const auto sizes = f.read_uint64(path + "/sizes");
  const auto counts = f.read_uint64(path + "/count");
  const auto skipped = f.read_int64(path + "/skipped");
  const auto med = f.read_doubles(path + "/time_med_us");
  const auto p95 = f.read_doubles(path + "/time_p95_us");
  const auto algbw = f.read_doubles(path + "/algbw_GBps");
  const auto busbw = f.read_doubles(path + "/busbw_GBps");
  std::vector<std::uint64_t> dims;
  const auto wrong = f.read_int64(path + "/wrong", &dims);
  const std::size_t world = dims.size() == 2 ? dims[1] : 1;
  os << "  " << title << " (" << f.attr_int64(path, "nranks") << " ranks, busbw = algbw x "
     << fixed_text(f.attr_double(path, "busbw_factor"), 3) << ")\n";
  char line[160];
  std::snprintf(line, sizeof line, "    %10s %12s %12s %12s %11s %11s %7s\n", "size", "count",
                "time us", "p95 us", "algbw GB/s", "busbw GB/s", "#wrong");
  os << line;
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    std::int64_t wrong_here = 0;
    for (std::size_t r = 0; r < world && s * world + r < wrong.size(); ++r) {
      wrong_here += wrong[s * world + r];
    }
    if (skipped[s] != 0) {
      std::snprintf(line, sizeof line, "    %10s %12llu   skipped: %s\n",
                    size_text(sizes[s]).c_str(), static_cast<unsigned long long>(counts[s]),
                    skipped[s] == 1 ? "too small for one element per rank" : "out of memory");
    } else {
      const bool fast = link > 0 && busbw[s] > link;
      above += fast ? 1 : 0;
      std::snprintf(line, sizeof line, "    %10s %12llu %12s %12s %11s %10s%s %7lld\n",
                    size_text(sizes[s]).c_str(), static_cast<unsigned long long>(counts[s]),
                    fixed_text(med[s], 2).c_str(), fixed_text(p95[s], 2).c_str(),
                    fixed_text(algbw[s], 3).c_str(), fixed_text(busbw[s], 3).c_str(),
                    fast ? "!" : " ", static_cast<long long>(wrong_here));
    }
    os << line;
  }
  return above;
}

}  // namespace

std::string format_collectives(const RunFile& f) {
  const std::string root = schema::kCollectivesGroup;
  if (!f.has(root)) return "";
  std::ostringstream os;
  os << "  backend: " << attr_or(f, root, "backend") << "\n";
  int above = 0;
  for (const auto& scope : f.children(root)) {
    const std::string sp = root + "/" + scope;
    const std::string skip = attr_or(f, sp, "skipped");
    if (!skip.empty()) {
      os << "  " << scope << ": skipped: " << skip << "\n";
      continue;
    }
    for (const auto& op : f.children(sp)) {
      for (const auto& leaf : f.children(sp + "/" + op)) {
        for (const auto& mode : f.children(sp + "/" + op + "/" + leaf)) {
          above += format_group(f, sp + "/" + op + "/" + leaf + "/" + mode,
                                scope + " " + op + " " + leaf + " " + mode, os);
        }
      }
    }
  }
  if (above > 0) {
    os << "  ! " << above
       << " results show a busbw above the link rate configured for their scope "
          "(collectives.intra_node_link_GBps / inter_node_link_GBps). They are kept: NCCL's NVLS "
          "(NVLink SHARP) and tree algorithms move less data per rank than the ring model behind "
          "busbw assumes. To compare links, rerun with NCCL_ALGO=Ring.\n";
  }
  return os.str();
}

}  // namespace shakedown
