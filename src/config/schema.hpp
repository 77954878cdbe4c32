#pragma once
// The config schema as one table: every key, the rule that reads and checks it, and how it is
// written back. Loading (load.cpp) walks documents against this table; to_yaml writes from it.
#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/detail.hpp"

namespace shakedown::config_detail {

// One value from a document or a --set, with what a message needs to point at it.
struct Value {
  YAML::Node node;
  std::string path;  // "collectives.iters"; list elements "phases[2]"
  Origin at;

  [[noreturn]] void fail(std::string_view problem) const { config_detail::fail(at, path, problem); }

  // An element of this list value: its own path and, in a file, its own line.
  Value element(const YAML::Node& item, std::size_t index) const;
};

// "got a list", "got \"ten\"": the second half of a type error.
std::string got(const YAML::Node& node);

struct KeySpec {
  std::string_view name;
  std::function<void(Config&, const Value&)> read;  // throws UsageError naming the value
  std::function<void(const Config&, YAML::Emitter&)> write;
};

struct SectionSpec {
  std::string_view name;
  std::vector<KeySpec> keys;
};

// The one top-level key that is not a section.
const KeySpec& phases_key();

// Sections in document order (the order of Config's members).
const std::vector<SectionSpec>& sections();

}  // namespace shakedown::config_detail
