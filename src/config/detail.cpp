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
