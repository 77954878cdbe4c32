#pragma once
// YAML -> Config, with validation. Every error is a UsageError (exit 2) whose message names the
// source (file or "--set"), the line, and the key path, and says what would be accepted.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace shakedown {

// Parses and validates `yaml_text` (named `source_name` in messages, e.g. the file path or
// "<built-in defaults>"), then applies `overrides` ("key.path=value", each validated exactly like
// the file: the value is parsed as YAML). Missing keys take their defaults.
Config load_config(std::string_view yaml_text, const std::string& source_name,
                   const std::vector<std::string>& overrides = {});

// Reads the file (errors name the path) and calls load_config.
Config load_config_file(const std::string& path, const std::vector<std::string>& overrides = {});

// The built-in defaults, used when no config file is given: identical to configs/smoke.yaml, which
// starts from the struct defaults in config.hpp and shrinks a few to CI size. `overrides` are
// applied and validated as in load_config.
Config default_config(const std::vector<std::string>& overrides = {});

// The effective configuration as YAML; load_config(to_yaml(c)) == c.
std::string to_yaml(const Config& config);

// "8", "4K", "1M", "2G", "1GiB", "1KB" (1000) ... -> bytes. Throws UsageError naming `where`.
std::uint64_t parse_size(std::string_view text, const std::string& where);

// "8:1G" (factor 2), "8:1G:x4", "4K" (single), or a comma list "8,64,1K".
SizeList parse_size_list(std::string_view text, const std::string& where);

// "1 KiB", "64 MiB" ... for printing.
std::string format_size(std::uint64_t bytes);

}  // namespace shakedown
