// Byte sizes and size lists as users write them: "64K", "1.5MiB", "2GB", "8:1G:x4", "8,64,1K".
#include <array>
#include <cstdio>
#include <set>
#include <string>

#include "config/detail.hpp"
#include "config/load.hpp"
#include "core/error.hpp"

namespace shakedown {

namespace {

using config_detail::in_quotes;

// No buffer, file or message shakedown makes needs more than this per rank; beyond it a value is
// far more likely a typo ("1P", an extra zero) than a wish to allocate the node away.
constexpr std::uint64_t kMaxSize = 1ull << 40;
// Every size is a row in every collective's tables and a line in the report: more is unreadable
// and would take hours.
constexpr std::size_t kMaxListEntries = 64;
constexpr std::size_t kMaxDecimals = 6;
constexpr std::uint64_t kMinFactor = 2;
constexpr std::uint64_t kMaxFactor = 1024;

struct Unit {
  std::string_view suffix;  // lower case; the match is case-insensitive
  std::uint64_t bytes;
};

// K, M, G, T are binary, as every tool in this field (nccl-tests, ior) reads them; KB, MB ... are
// the decimal units of disk and network datasheets.
constexpr std::array<Unit, 14> kUnits = {{{"", 1},
                                          {"b", 1},
                                          {"k", 1ull << 10},
                                          {"kib", 1ull << 10},
                                          {"kb", 1000ull},
                                          {"m", 1ull << 20},
                                          {"mib", 1ull << 20},
                                          {"mb", 1000ull * 1000},
                                          {"g", 1ull << 30},
                                          {"gib", 1ull << 30},
                                          {"gb", 1000ull * 1000 * 1000},
                                          {"t", 1ull << 40},
                                          {"tib", 1ull << 40},
                                          {"tb", 1000ull * 1000 * 1000 * 1000}}};

constexpr std::string_view kSizeHelp =
    "a size is a whole number of bytes with an optional unit: K/KiB, M/MiB, G/GiB, T/TiB "
    "(powers of 1024) or KB, MB, GB, TB (powers of 1000), at most 1 TiB; e.g. 4096, 64K, 1.5MiB, "
    "2GB";

constexpr std::string_view kListHelp =
    "a size list is a range MIN:MAX (doubling), MIN:MAX:xF (times F each step), or a comma list; "
    "e.g. \"8:1G\", \"8:1G:x4\", \"8,64,1K\"";

std::string prefix(const std::string& where) {
  return where.empty() ? "" : where + ": ";
}

[[noreturn]] void bad_size(const std::string& where, std::string_view text, std::string_view why) {
  throw UsageError(prefix(where) + "bad size " + in_quotes(text) + ": " + std::string(why) + " (" +
                   std::string(kSizeHelp) + ")");
}

[[noreturn]] void bad_list(const std::string& where, std::string_view text, std::string_view why) {
  throw UsageError(prefix(where) + "bad size list " + in_quotes(text) + ": " + std::string(why) +
                   " (" + std::string(kListHelp) + ")");
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

const Unit* find_unit(std::string_view suffix) {
  const std::string lower = lowercase(suffix);
  for (const Unit& unit : kUnits) {
    if (unit.suffix == lower) return &unit;
  }
  return nullptr;
}

std::uint64_t parse_factor(std::string_view text, const std::string& where, std::string_view list) {
  const std::string_view factor = trim(text);
  std::uint64_t value = 0;
  bool ok = factor.size() >= 2 && (factor[0] == 'x' || factor[0] == 'X');
  for (std::size_t i = 1; ok && i < factor.size(); ++i) {
    ok = is_digit(factor[i]) && value <= kMaxFactor;
    value = value * 10 + static_cast<std::uint64_t>(factor[i] - '0');
  }
  if (!ok || value < kMinFactor || value > kMaxFactor) {
    bad_list(
        where, list,
        "the step " + in_quotes(factor) + " must be written xF with F from 2 to 1024, e.g. x4");
  }
  return value;
}

void add_value(std::set<std::uint64_t>& values, std::uint64_t value, const std::string& where,
               std::string_view list) {
  values.insert(value);
  if (values.size() > kMaxListEntries) {
    bad_list(where, list,
             "it expands to more than 64 sizes; use a larger step (e.g. :x4) or a narrower range");
  }
}

}  // namespace

std::uint64_t parse_size(std::string_view text, const std::string& where) {
  const std::string_view size = trim(text);
  if (size.empty()) bad_size(where, text, "it is empty");
  if (size[0] == '-') bad_size(where, text, "sizes cannot be negative");

  std::size_t number_end = 0;
  while (number_end < size.size() && (is_digit(size[number_end]) || size[number_end] == '.')) {
    ++number_end;
  }
  const std::string_view number = size.substr(0, number_end);
  const std::string_view suffix = trim(size.substr(number_end));
  const auto point = number.find('.');
  const std::string_view whole = number.substr(0, point);
  const std::string_view fraction =
      point == std::string_view::npos ? std::string_view() : number.substr(point + 1);
  if (number.empty()) bad_size(where, text, "it does not start with a number");
  if (fraction.find('.') != std::string_view::npos) {
    bad_size(where, text, "the number has more than one decimal point");
  }
  if (point != std::string_view::npos && fraction.empty()) {
    bad_size(where, text, "there is no digit after the decimal point");
  }
  if (fraction.size() > kMaxDecimals) bad_size(where, text, "more than 6 decimal places");
  const Unit* unit = find_unit(suffix);
  if (unit == nullptr) bad_size(where, text, "unknown unit " + in_quotes(suffix));

  const std::string too_large =
      "it is larger than 1 TiB, the most shakedown allows for one size "
      "(a guard against typos such as an extra zero)";
  std::uint64_t value = 0;
  for (char digit : whole) {
    value = value * 10 + static_cast<std::uint64_t>(digit - '0');
    // Checked every digit, so the multiplication above can never wrap.
    if (value > kMaxSize) bad_size(where, text, too_large);
  }
  if (value > kMaxSize / unit->bytes) bad_size(where, text, too_large);
  std::uint64_t bytes = value * unit->bytes;

  if (!fraction.empty()) {
    std::uint64_t digits = 0;
    std::uint64_t scale = 1;
    for (char digit : fraction) {
      digits = digits * 10 + static_cast<std::uint64_t>(digit - '0');
      scale *= 10;
    }
    // At most 10^6 * 10^12 (TB): no overflow.
    const std::uint64_t scaled = digits * unit->bytes;
    if (scaled % scale != 0) bad_size(where, text, "it is not a whole number of bytes");
    bytes += scaled / scale;
    if (bytes > kMaxSize) bad_size(where, text, too_large);
  }
  return bytes;
}

SizeList parse_size_list(std::string_view text, const std::string& where) {
  const std::string_view spec = trim(text);
  if (spec.empty()) bad_list(where, text, "it is empty");

  std::set<std::uint64_t> values;
  for (std::string_view raw_item : split(spec, ',')) {
    const std::string_view item = trim(raw_item);
    if (item.empty()) bad_list(where, spec, "an entry is empty (two commas in a row?)");
    const std::vector<std::string_view> parts = split(item, ':');
    if (parts.size() > 3) {
      bad_list(where, spec, "the range " + in_quotes(item) + " has more than two ':'");
    }
    const std::uint64_t low = parse_size(parts[0], where);
    const std::uint64_t high = parts.size() > 1 ? parse_size(parts[1], where) : low;
    if (low == 0) bad_list(where, spec, "every size must be at least 1 byte");
    if (low > high) {
      bad_list(
          where, spec,
          "the range " + in_quotes(item) + " starts above its end (write MIN:MAX, MIN <= MAX)");
    }
    const std::uint64_t factor = parts.size() == 3 ? parse_factor(parts[2], where, spec) : 2;
    for (std::uint64_t value = low;; value *= factor) {
      add_value(values, value, where, spec);
      // Stop before the next step passes the end (or would overflow).
      if (value > high / factor) break;
    }
  }
  return SizeList{{values.begin(), values.end()}, std::string(spec)};
}

std::string format_size(std::uint64_t bytes) {
  static constexpr std::array<std::string_view, 6> kNames = {"KiB", "MiB", "GiB",
                                                             "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  std::size_t index = 0;
  while (index + 1 < kNames.size() && bytes >= (1ull << (10 * (index + 2)))) ++index;
  const std::uint64_t unit = 1ull << (10 * (index + 1));
  if (bytes % unit == 0) return std::to_string(bytes / unit) + " " + std::string(kNames[index]);
  std::array<char, 32> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.2f",
                static_cast<double>(bytes) / static_cast<double>(unit));
  std::string number(buffer.data());
  // "1.50" -> "1.5": printing, not a table column.
  while (number.back() == '0') number.pop_back();
  if (number.back() == '.') number.pop_back();
  return number + " " + std::string(kNames[index]);
}

}  // namespace shakedown
