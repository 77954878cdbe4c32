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
int format_sweep(const SweepData& d, std::ostringstream& os) {
  const std::string title = d.scope + " " + d.op + " " + d.leaf + " " + d.mode;
  if (!d.unsupported.empty()) {
    os << "  " << title << ": unsupported: " << d.unsupported << "\n";
    return 0;
  }
  if (d.sizes.empty()) return 0;
  int above = 0;
  os << "  " << title << " (" << d.nranks << " ranks, busbw = algbw x "
     << fixed_text(d.busbw_factor, 3) << ")\n";
  char line[160];
  std::snprintf(line, sizeof line, "    %10s %12s %12s %12s %11s %11s %7s\n", "size", "count",
                "time us", "p95 us", "algbw GB/s", "busbw GB/s", "#wrong");
  os << line;
  for (std::size_t s = 0; s < d.sizes.size(); ++s) {
    std::int64_t wrong_here = 0;
    for (std::size_t r = 0; r < d.world && s * d.world + r < d.wrong.size(); ++r) {
      wrong_here += d.wrong[s * d.world + r];
    }
    const auto count = static_cast<unsigned long long>(s < d.count.size() ? d.count[s] : 0);
    if (d.skipped[s] != schema::kSkipMeasured) {
      std::snprintf(line, sizeof line, "    %10s %12llu   skipped: %s\n",
                    size_text(d.sizes[s]).c_str(), count,
                    d.skipped[s] == schema::kSkipTooSmall ? "too small for one element per rank"
                                                          : "out of memory");
    } else {
      const bool fast = d.link_GBps > 0 && d.busbw[s] > d.link_GBps;
      above += fast ? 1 : 0;
      std::snprintf(line, sizeof line, "    %10s %12llu %12s %12s %11s %10s%s %7lld\n",
                    size_text(d.sizes[s]).c_str(), count, fixed_text(d.time_med_us[s], 2).c_str(),
                    fixed_text(d.time_p95_us[s], 2).c_str(), fixed_text(d.algbw[s], 3).c_str(),
                    fixed_text(d.busbw[s], 3).c_str(), fast ? "!" : " ",
                    static_cast<long long>(wrong_here));
    }
    os << line;
  }
  return above;
}

}  // namespace

std::string format_collectives(const CollectivesData& data) {
  if (!data.ran) return "";
  std::ostringstream os;
  os << "  backend: " << data.backend << "\n";
  for (const auto& [scope, why] : data.skipped_scopes) {
    os << "  " << scope << ": skipped: " << why << "\n";
  }
  int above = 0;
  for (const SweepData& d : data.sweeps) above += format_sweep(d, os);
  for (const auto& u : data.unreadable) os << "  unreadable: " << u << "\n";
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
