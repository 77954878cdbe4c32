// The shipped configs (smoke.yaml is the built-in default; full.yaml and README.md list every key
// with its real default) and the to_yaml round trip that the HDF5 file relies on.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/load.hpp"
#include "core/error.hpp"

namespace shakedown {
namespace {

const std::string kConfigs = std::string(SHAKEDOWN_SOURCE_DIR) + "/configs/";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every "section.key" (and "phases") that to_yaml writes: the complete list of keys.
std::vector<std::string> all_key_paths() {
  std::vector<std::string> paths;
  const YAML::Node root = YAML::Load(to_yaml(Config{}));
  for (const auto& entry : root) {
    const std::string section = entry.first.Scalar();
    if (!entry.second.IsMap()) {
      paths.push_back(section);
      continue;
    }
    for (const auto& key : entry.second) paths.push_back(section + "." + key.first.Scalar());
  }
  return paths;
}

// load_config(to_yaml(c)) == c, and writing it again gives the same text.
void expect_round_trip(const Config& config) {
  const std::string yaml = to_yaml(config);
  const Config back = load_config(yaml, "<to_yaml>");
  EXPECT_EQ(back, config) << yaml;
  EXPECT_EQ(to_yaml(back), yaml);
}

TEST(ConfigFiles, SmokeYamlIsTheBuiltInDefault) {
  const Config smoke = load_config_file(kConfigs + "smoke.yaml");
  EXPECT_EQ(to_yaml(smoke), to_yaml(default_config()));
  EXPECT_EQ(smoke, default_config());
  EXPECT_EQ(smoke.phases, (std::vector<std::string>{"inventory", "devices", "collectives", "gemm",
                                                   "train", "checkpoint"}));
  EXPECT_EQ(smoke.collectives.sizes.spec, "8:1M");
  EXPECT_DOUBLE_EQ(smoke.timeouts.phase_s, 60);
  EXPECT_DOUBLE_EQ(smoke.timeouts.run_s, 600);
}

TEST(ConfigFiles, FullYamlLoadsAndShowsTheRealDefaults) {
  const Config full = load_config_file(kConfigs + "full.yaml");
  Config expected;
  // The phases this version implements (phases/phase.cpp); e2e.readme runs full.yaml, so a
  // phase listed there that does not run fails that test.
  expected.phases = {"inventory", "devices",    "linkscan",  "collectives",
                     "gemm",      "train",      "checkpoint"};
  EXPECT_EQ(to_yaml(full), to_yaml(expected));
  EXPECT_EQ(full, expected);
}

TEST(ConfigFiles, FullYamlSpellsOutEveryKey) {
  const YAML::Node full = YAML::LoadFile(kConfigs + "full.yaml");
  for (const std::string& path : all_key_paths()) {
    const auto dot = path.find('.');
    const bool present = dot == std::string::npos
                             ? static_cast<bool>(full[path])
                             : static_cast<bool>(full[path.substr(0, dot)][path.substr(dot + 1)]);
    EXPECT_TRUE(present) << path << " is missing from configs/full.yaml";
  }
}

TEST(ConfigFiles, ReadmeDocumentsEveryKey) {
  const std::string readme = read_text(kConfigs + "README.md");
  for (const std::string& path : all_key_paths()) {
    EXPECT_NE(readme.find("| `" + path + "` |"), std::string::npos)
        << path << " has no row in configs/README.md";
  }
}

TEST(ConfigFiles, ToYamlWritesEveryKey) {
  const std::vector<std::string> paths = all_key_paths();
  // 1 top-level key + the sum of the sections' keys in config.hpp (devices: 12, linkscan: 17,
  // telemetry: 4, checks: 6, audit: 7, cost: 1).
  EXPECT_EQ(paths.size(), 1u + 4 + 16 + 11 + 24 + 15 + 12 + 17 + 4 + 6 + 7 + 1 + 3 + 3);
  EXPECT_EQ(std::set<std::string>(paths.begin(), paths.end()).size(), paths.size());
}

TEST(ConfigRoundTrip, Defaults) {
  expect_round_trip(Config{});
  expect_round_trip(default_config());
  expect_round_trip(load_config_file(kConfigs + "full.yaml"));
}

TEST(ConfigRoundTrip, AwkwardValues) {
  Config config;
  config.phases = {"linkscan", "train"};
  config.topology.blocks = "~";
  config.checkpoint.dir = "yes";
  config.output.dir = "a: b # not a comment";
  config.output.file = "null";
  config.checks.platform = "h200-sxm";
  config.collectives.ops = {"send_recv", "all_reduce"};
  config.collectives.in_place = "no";
  config.collectives.seed = std::numeric_limits<std::uint64_t>::max();
  config.collectives.sizes = parse_size_list("8:1G:x4,3", "test");
  config.collectives.iter_bytes_budget = 1536;
  config.gemm.shapes = {{1, 2, 3}, {4096, 4096, 4096}};
  config.checkpoint.bytes_per_rank = 3ull << 30;
  config.checkpoint.block_size = 1000;
  config.linkscan.bw_fraction = 0.1 + 0.2;  // 0.30000000000000004: needs all 17 digits
  config.checks.straggler_z = 1e-300;
  config.timeouts.phase_s = 1.0 / 3.0;
  expect_round_trip(config);
}

TEST(ConfigRoundTrip, SizeListWithoutSpecIsWrittenExactly) {
  Config config;
  config.collectives.nccl_sizes = SizeList{{8, 1536, 3ull << 30}, ""};
  const Config back = load_config(to_yaml(config), "<to_yaml>");
  EXPECT_EQ(back.collectives.nccl_sizes.values, config.collectives.nccl_sizes.values);
  EXPECT_EQ(back.collectives.nccl_sizes.spec, "8,1536,3GiB");
}

TEST(ConfigRoundTrip, EveryOverrideOfEveryKeyRoundTrips) {
  // Writing a config and setting each key from its own written value must change nothing: the
  // text to_yaml writes for a key is accepted by --set for that key.
  const Config config = load_config_file(kConfigs + "full.yaml");
  const YAML::Node written = YAML::Load(to_yaml(config));
  for (const std::string& path : all_key_paths()) {
    const auto dot = path.find('.');
    const YAML::Node value = dot == std::string::npos
                                 ? written[path]
                                 : written[path.substr(0, dot)][path.substr(dot + 1)];
    YAML::Emitter flow;
    flow << YAML::Flow << value;
    const Config again = load_config_file(kConfigs + "full.yaml", {path + "=" + flow.c_str()});
    EXPECT_EQ(again, config) << "--set " << path << "=" << flow.c_str();
  }
}

}  // namespace
}  // namespace shakedown
