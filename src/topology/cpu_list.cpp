#include "topology/cpu_list.hpp"

#include <algorithm>
#include <charconv>

#include "core/strings.hpp"

namespace shakedown {
namespace {

std::optional<int> to_int(std::string_view s) {
  s = trim(s);
  int value = 0;
  const auto* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (s.empty() || ec != std::errc() || ptr != end || value < 0) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  std::vector<int> cpus;
  text = trim(text);
  if (text.empty()) return cpus;
  // Ranges larger than this are certainly garbage, not a machine (guards against "0-2000000000").
  constexpr int kMaxCpu = 1 << 20;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const auto dash = item.find('-');
    const auto lo = to_int(item.substr(0, dash));
    const auto hi = dash == std::string_view::npos ? lo : to_int(item.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi > kMaxCpu) return std::nullopt;
    for (int c = *lo; c <= *hi; ++c) cpus.push_back(c);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace shakedown
