#pragma once
// Internals of the config module shared by its .cpp files; nothing outside src/config/ includes
// this. Public API: config/load.hpp.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/strings.hpp"

namespace shakedown::config_detail {

// Where a value was written, so every message can point at it: "smoke.yaml:12", or
// `--set "collectives.iters=ten"` (a command-line override has no lines).
struct Origin {
  std::string source;
  int line = 0;  // 1-based; 0 = the source has no lines

  std::string str() const;
};

// Throws UsageError "<at>: <key_path>: <problem>" (no key path for whole-document problems).
[[noreturn]] void fail(const Origin& at, std::string_view key_path, std::string_view problem);

// `"ten"` for messages: quoted, control bytes escaped, long text cut short.
std::string in_quotes(std::string_view text);

// Shortest text that reads back as exactly `value` ("0.93", "60", "1e-05").
std::string format_real(double value);

// Exact, unit-bearing size text that parse_size reads back unchanged: "64MiB", "1000", "1536".
std::string exact_size_text(std::uint64_t bytes);

}  // namespace shakedown::config_detail
