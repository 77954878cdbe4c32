#include "topology/hostlist.hpp"

#include <charconv>
#include <stdexcept>

namespace shakedown {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

unsigned long long to_number(std::string_view s, std::string_view entry) {
  unsigned long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    throw std::invalid_argument("number '" + std::string(s) + "' out of range in '" +
                                std::string(entry) + "'");
  }
  return v;
}

// The values one bracket stands for, already formatted ("08", "09", "10").
std::vector<std::string> bracket_values(std::string_view inside, std::string_view entry,
                                        std::size_t limit) {
  std::vector<std::string> values;
  std::size_t start = 0;
  while (start <= inside.size()) {
    const std::size_t comma = std::min(inside.find(',', start), inside.size());
    const std::string_view item = inside.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    const std::string_view lo = item.substr(0, dash);
    const std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi)) {
      throw std::invalid_argument("'" + std::string(item) + "' in '" + std::string(entry) +
                                  "' is not a number or a range a-b");
    }
    const unsigned long long a = to_number(lo, entry), b = to_number(hi, entry);
    if (b < a) {
      throw std::invalid_argument("range '" + std::string(item) + "' in '" + std::string(entry) +
                                  "' goes down");
    }
    if (b - a >= limit || values.size() + (b - a) >= limit) {
      throw std::invalid_argument("'" + std::string(entry) + "' names more than " +
                                  std::to_string(limit) + " hosts");
    }
    // Leading zeros fix the width ("001-018"); without them numbers are printed plainly.
    const std::size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;
    // Counted, not `v <= b`: with b the largest unsigned value that condition never ends.
    for (unsigned long long k = 0; k <= b - a; ++k) {
      std::string text = std::to_string(a + k);
      if (text.size() < width) text.insert(0, width - text.size(), '0');
      values.push_back(std::move(text));
    }
    start = comma + 1;
  }
  return values;
}

void expand_entry(std::string_view entry, std::vector<std::string>& out, std::size_t limit) {
  std::vector<std::string> partial = {""};
  std::size_t i = 0;
  while (i < entry.size()) {
    const std::size_t open = entry.find('[', i);
    const std::size_t close_stray = entry.find(']', i);
    if (close_stray != std::string_view::npos &&
        (open == std::string_view::npos || close_stray < open)) {
      throw std::invalid_argument("']' without '[' in '" + std::string(entry) + "'");
    }
    const std::string_view literal =
        entry.substr(i, open == std::string_view::npos ? std::string_view::npos : open - i);
    for (auto& p : partial) p += literal;
    if (open == std::string_view::npos) break;
    const std::size_t close = entry.find(']', open);
    if (close == std::string_view::npos) {
      throw std::invalid_argument("'[' without ']' in '" + std::string(entry) + "'");
    }
    const std::string_view inside = entry.substr(open + 1, close - open - 1);
    if (inside.find('[') != std::string_view::npos) {
      throw std::invalid_argument("nested '[' in '" + std::string(entry) + "'");
    }
    const std::vector<std::string> values = bracket_values(inside, entry, limit);
    if (partial.size() * values.size() + out.size() > limit) {
      throw std::invalid_argument("'" + std::string(entry) + "' names more than " +
                                  std::to_string(limit) + " hosts");
    }
    std::vector<std::string> next;
    next.reserve(partial.size() * values.size());
    for (const auto& p : partial) {
      for (const auto& v : values) next.push_back(p + v);
    }
    partial = std::move(next);
    i = close + 1;
  }
  for (auto& p : partial) out.push_back(std::move(p));
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view expression, std::size_t limit) {
  std::vector<std::string> out;
  std::size_t start = 0, depth = 0;
  for (std::size_t i = 0; i <= expression.size(); ++i) {
    const char c = i < expression.size() ? expression[i] : ',';
    if (c == '[') ++depth;
    if (c == ']' && depth > 0) --depth;
    if (c == ',' && (depth == 0 || i == expression.size())) {
      const std::string_view entry = expression.substr(start, i - start);
      if (entry.empty()) {
        throw std::invalid_argument("empty host name in '" + std::string(expression) + "'");
      }
      expand_entry(entry, out, limit);
      start = i + 1;
    }
  }
  return out;
}

}  // namespace shakedown
