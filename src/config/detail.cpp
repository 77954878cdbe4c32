#include "config/detail.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>

#include "core/error.hpp"

namespace shakedown::config_detail {

std::string Origin::str() const {
  return line > 0 ? source + ":" + std::to_string(line) : source;
}

void fail(const Origin& at, std::string_view key_path, std::string_view problem) {
  std::string message = at.str() + ": ";
  if (!key_path.empty()) message.append(key_path).append(": ");
  message.append(problem);
  throw UsageError(message);
}

std::string in_quotes(std::string_view text) {
  // Long enough to recognise the value, short enough that binary junk cannot flood the terminal.
  constexpr std::size_t kMaxShown = 60;
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == '"' || byte == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(byte));
    } else if (byte < 0x20 || byte == 0x7f) {
      std::array<char, 8> hex{};
      std::snprintf(hex.data(), hex.size(), "\\x%02x", static_cast<unsigned>(byte));
      out.append(hex.data());
    } else {
      out.push_back(static_cast<char>(byte));
    }
  }
  if (text.size() > kMaxShown) out.append("...");
  out.push_back('"');
  return out;
}

std::string join_choices(const std::vector<std::string_view>& choices) {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out.append(i + 1 == choices.size() ? " or " : ", ");
    out.append(choices[i]);
  }
  return out;
}

namespace {

// Optimal string alignment distance: Levenshtein plus adjacent transpositions, the commonest typo.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1, 0));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

}  // namespace

std::optional<std::string_view> closest_match(std::string_view word,
                                              const std::vector<std::string_view>& candidates) {
  // Keys are lower case, so "Iters" or "NCCL" is a case slip, not an unknown word.
  const std::string lower_word = lowercase(word);
  // Edits allowed grow with length: one slip in a short word, a few in a long one.
  const std::size_t allowed = std::max<std::size_t>(1, std::min<std::size_t>(3, word.size() / 3));
  std::optional<std::string_view> best;
  std::size_t best_distance = allowed + 1;
  for (std::string_view candidate : candidates) {
    const std::string lower_candidate = lowercase(candidate);
    std::size_t distance = edit_distance(lower_word, lower_candidate);
    // "bytes" for "bytes_per_rank": a cut-short name is as good a hint as a typo.
    const bool prefix = lower_word.size() >= 4 && (lower_candidate.starts_with(lower_word) ||
                                                   lower_word.starts_with(lower_candidate));
    if (prefix) distance = std::min(distance, allowed);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates) {
  const auto match = closest_match(word, candidates);
  return match ? "; did you mean \"" + std::string(*match) + "\"?" : std::string();
}

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const auto end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

std::string format_real(double value) {
  std::array<char, 32> buffer{};
  // Shortest round-trip form, so to_yaml -> load_config gives back the same bits.
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return std::string(buffer.data(), result.ptr);
}

std::string exact_size_text(std::uint64_t bytes) {
  static constexpr std::array<std::string_view, 4> kUnits = {"TiB", "GiB", "MiB", "KiB"};
  for (std::size_t i = 0; i < kUnits.size(); ++i) {
    const std::uint64_t unit = 1ull << (10 * (kUnits.size() - i));
    if (bytes >= unit && bytes % unit == 0)
      return std::to_string(bytes / unit) + std::string(kUnits[i]);
  }
  return std::to_string(bytes);
}

}  // namespace shakedown::config_detail
