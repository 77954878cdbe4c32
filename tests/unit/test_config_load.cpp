// Loading YAML text: values that are accepted, and the exact shape of the messages for those that
// are not (source, line, key path, what is accepted).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/load.hpp"
#include "core/error.hpp"
#include "text_support.hpp"

namespace shakedown {
namespace {

Config load(const std::string& yaml) {
  return load_config(yaml, "test.yaml");
}

std::string load_error(const std::string& yaml) {
  try {
    load_config(yaml, "test.yaml");
  } catch (const UsageError& error) {
    EXPECT_EQ(error.code(), ExitCode::kUsage);
    return error.what();
  }
  ADD_FAILURE() << "no UsageError for:\n" << yaml;
  return {};
}

using testing_support::contains;

TEST(ConfigLoad, EmptyTextIsAllDefaults) {
  EXPECT_EQ(load(""), Config{});
  EXPECT_EQ(load("# nothing here\n\n"), Config{});
  EXPECT_EQ(load("~\n"), Config{});
  EXPECT_EQ(load("---\n"), Config{});
}

TEST(ConfigLoad, MissingKeysKeepDefaults) {
  const Config config = load("collectives:\n  iters: 7\n");
  Config expected;
  expected.collectives.iters = 7;
  EXPECT_EQ(config, expected);
}

TEST(ConfigLoad, ExampleMessageFormat) {
  EXPECT_EQ(load_error("phases: [collectives]\ncollectives:\n  iters: ten\n"),
            "test.yaml:3: collectives.iters: must be an integer in [1, 1000000], got \"ten\"");
}

TEST(ConfigLoad, PhasesRunInPipelineOrder) {
  EXPECT_EQ(load("phases: [checkpoint, gemm, inventory]\n").phases,
            (std::vector<std::string>{"inventory", "gemm", "checkpoint"}));
  EXPECT_EQ(load("phases: train, linkscan\n").phases,
            (std::vector<std::string>{"linkscan", "train"}));
  EXPECT_EQ(load("phases: gemm\n").phases, (std::vector<std::string>{"gemm"}));
}

TEST(ConfigLoad, EveryKindOfValue) {
  const Config config = load(R"(
topology:
  virtual_nodes: 4
  allow_oversubscribe: true
  blocks: blocks.txt
collectives:
  backend: mpi
  ops: [all_reduce, send_recv]
  dtypes: [bfloat16, fp8_e4m3]
  reduce_ops: [max, sum]
  sizes: "8:1K:x4"
  nccl_sizes: "1M,2M"
  iter_bytes_budget: 1G
  in_place: "no"
  seed: 18446744073709551615
gemm:
  shapes: ["64x32x16", [8, 8, 8]]
  fast_accum: false
linkscan:
  lat_factor: 1.5
  bw_fraction: 1e-1
timeouts:
  init_s: +10
  phase_s: 2.5
)");
  EXPECT_EQ(config.topology.virtual_nodes, 4);
  EXPECT_TRUE(config.topology.allow_oversubscribe);
  EXPECT_EQ(config.topology.blocks, "blocks.txt");
  EXPECT_EQ(config.collectives.backend, "mpi");
  EXPECT_EQ(config.collectives.ops, (std::vector<std::string>{"all_reduce", "send_recv"}));
  EXPECT_EQ(config.collectives.dtypes, (std::vector<std::string>{"bfloat16", "fp8_e4m3"}));
  EXPECT_EQ(config.collectives.reduce_ops, (std::vector<std::string>{"max", "sum"}));
  EXPECT_EQ(config.collectives.sizes.values, (std::vector<std::uint64_t>{8, 32, 128, 512}));
  EXPECT_EQ(config.collectives.sizes.spec, "8:1K:x4");
  EXPECT_EQ(config.collectives.nccl_sizes.values, (std::vector<std::uint64_t>{1u << 20, 2u << 20}));
  EXPECT_EQ(config.collectives.iter_bytes_budget, 1ull << 30);
  EXPECT_EQ(config.collectives.in_place, "no");
  EXPECT_EQ(config.collectives.seed, 18446744073709551615ull);
  ASSERT_EQ(config.gemm.shapes.size(), 2u);
  EXPECT_EQ(config.gemm.shapes[0], (GemmShape{64, 32, 16}));
  EXPECT_EQ(config.gemm.shapes[1], (GemmShape{8, 8, 8}));
  EXPECT_FALSE(config.gemm.fast_accum);
  EXPECT_DOUBLE_EQ(config.linkscan.lat_factor, 1.5);
  EXPECT_DOUBLE_EQ(config.linkscan.bw_fraction, 0.1);
  EXPECT_DOUBLE_EQ(config.timeouts.init_s, 10);
  EXPECT_DOUBLE_EQ(config.timeouts.phase_s, 2.5);
}

TEST(ConfigLoad, YamlBooleanSpellings) {
  for (const char* yes : {"true", "True", "yes", "YES", "on"}) {
    EXPECT_TRUE(load(std::string("gemm:\n  fast_accum: ") + yes + "\n").gemm.fast_accum) << yes;
  }
  for (const char* no : {"false", "FALSE", "no", "Off"}) {
    EXPECT_FALSE(load(std::string("gemm:\n  fast_accum: ") + no + "\n").gemm.fast_accum) << no;
  }
}

TEST(ConfigLoad, EmptyStringValuesMeanUnset) {
  const Config config = load("checkpoint:\n  dir:\nchecks:\n  platform: ''\n");
  EXPECT_EQ(config.checkpoint.dir, "");
  EXPECT_EQ(config.checks.platform, "");
}

TEST(ConfigLoad, EmptySectionKeepsDefaults) {
  EXPECT_EQ(load("gemm:\ntrain:\n"), Config{});
  EXPECT_EQ(load("gemm: {}\n"), Config{});
}

TEST(ConfigLoad, NotAMapping) {
  const std::string scalar = load_error("hello\n");
  EXPECT_TRUE(contains(scalar, "test.yaml:1: is not a mapping")) << scalar;
  EXPECT_TRUE(contains(scalar, "got \"hello\"")) << scalar;
  const std::string list = load_error("\n- a\n- b\n");
  EXPECT_TRUE(contains(list, "test.yaml:2: is not a mapping")) << list;
  EXPECT_TRUE(contains(list, "got a list")) << list;
}

TEST(ConfigLoad, TabsAreNamedWithTheirLine) {
  const std::string message = load_error("collectives:\n  iters: 5\n\twarmup: 1\n");
  EXPECT_TRUE(contains(message, "test.yaml:3: tab character in the indentation")) << message;
  EXPECT_TRUE(contains(load_error("gemm:\n\t# note\n"), "test.yaml:2: tab character"));
  EXPECT_TRUE(contains(load_error("gemm:\n  iters: 2\n\t\n"), "test.yaml:3: tab character"));
  // A tab after the key is ordinary YAML separation.
  EXPECT_EQ(load("collectives:\n  iters:\t5\n").collectives.iters, 5);
}

TEST(ConfigLoad, UnknownKeysSuggestAtEveryLevel) {
  const std::string top = load_error("timeout:\n  run_s: 10\n");
  EXPECT_TRUE(contains(top, "test.yaml:1: timeout: unknown key; did you mean \"timeouts\"?"))
      << top;
  EXPECT_TRUE(contains(top, "accepted top-level keys: phases, topology")) << top;

  const std::string nested = load_error("linkscan:\n  rep: 3\n");
  EXPECT_TRUE(contains(nested, "test.yaml:2: linkscan.rep: unknown key; did you mean \"reps\"?"))
      << nested;
  EXPECT_TRUE(contains(nested, "accepted keys in linkscan: transport")) << nested;

  const std::string far = load_error("gemm:\n  zzzzzzzz: 1\n");
  EXPECT_TRUE(contains(far, "gemm.zzzzzzzz: unknown key (accepted keys in gemm:")) << far;
}

TEST(ConfigLoad, KeyInTheWrongSectionSaysWhereItBelongs) {
  const std::string message = load_error("output:\n  iters: 5\n");
  EXPECT_TRUE(contains(message,
                       "output.iters: unknown key; \"iters\" belongs in collectives, "
                       "gemm or checkpoint, not in output"))
      << message;
}

TEST(ConfigLoad, DuplicateKeysAreRejected) {
  const std::string message = load_error("gemm:\n  iters: 1\n  iters: 2\n");
  EXPECT_TRUE(contains(message, "test.yaml:3: gemm.iters: duplicate key (first at line 2)"))
      << message;
  const std::string top = load_error("phases: [gemm]\nphases: [train]\n");
  EXPECT_TRUE(contains(top, "test.yaml:2: phases: duplicate key (first at line 1)")) << top;
}

TEST(ConfigLoad, EnumMessagesListAcceptedValues) {
  const std::string message = load_error("collectives:\n  backend: NCCL\n");
  EXPECT_TRUE(contains(message,
                       "collectives.backend: unknown value \"NCCL\"; did you mean "
                       "\"nccl\"? (accepted: auto, mpi or nccl)"))
      << message;
}

TEST(ConfigLoad, ListElementsReportTheirOwnLine) {
  const std::string message = load_error("phases:\n  - inventory\n  - gemm\n  - trian\n");
  EXPECT_TRUE(
      contains(message, "test.yaml:4: phases[2]: unknown phase \"trian\"; did you mean \"train\"?"))
      << message;
}

TEST(ConfigLoad, CrossKeyRulesPointAtTheLastKeySet) {
  const std::string message = load_error("train:\n  hidden: 1000\n  heads: 16\n");
  EXPECT_TRUE(contains(message,
                       "test.yaml:3: train.heads: train.hidden = 1000 is not divisible "
                       "by train.heads = 16"))
      << message;
  EXPECT_TRUE(contains(message, "(train.hidden set at test.yaml:2)")) << message;

  const std::string defaults = load_error("train:\n  heads: 7\n");
  EXPECT_TRUE(contains(defaults, "test.yaml:2: train.heads:")) << defaults;
  EXPECT_TRUE(contains(defaults, "(train.hidden is the default)")) << defaults;
}

TEST(ConfigLoad, TimeoutRules) {
  EXPECT_TRUE(contains(load_error("timeouts:\n  phase_s: 4000\n"),
                       "test.yaml:2: timeouts.phase_s: timeouts.phase_s = 4000 is longer than "
                       "timeouts.run_s = 3600"));
  EXPECT_TRUE(contains(load_error("timeouts:\n  run_s: 30\n  phase_s: 30\n"),
                       "timeouts.init_s = 60 is longer than timeouts.run_s = 30"));
  EXPECT_DOUBLE_EQ(load("timeouts:\n  run_s: 300\n  phase_s: 300\n").timeouts.run_s, 300);
}

TEST(ConfigLoad, CheckpointBlockRule) {
  EXPECT_TRUE(contains(load_error("checkpoint:\n  block_size: 128M\n"),
                       "checkpoint.block_size = 128 MiB is larger than "
                       "checkpoint.bytes_per_rank = 64 MiB"));
}

TEST(ConfigLoad, MultipleDocumentsAreRejected) {
  EXPECT_TRUE(contains(load_error("phases: [gemm]\n---\nphases: [train]\n"),
                       "test.yaml:2: holds more than one YAML document"));
}

TEST(ConfigLoad, SyntaxErrorsHaveLines) {
  const std::string message = load_error("phases: [gemm]\noutput:\n  dir: a: b\n");
  EXPECT_TRUE(contains(message, "test.yaml:3: YAML syntax error at column")) << message;
}

TEST(ConfigLoad, DeepNestingIsAnErrorNotACrash) {
  const std::string message = load_error("phases: " + std::string(100000, '[') + "\n");
  EXPECT_TRUE(contains(message, "levels deep")) << message;
}

TEST(ConfigLoad, BinaryInputIsAnErrorNotACrash) {
  const std::string garbage(
      "\x7f"
      "ELF\x02\x01\x01\x00\x00\xff\xfe",
      11);
  const std::string message = load_error(garbage);
  EXPECT_TRUE(contains(message, "test.yaml:1: control character 0x7f at column 1")) << message;
  EXPECT_TRUE(contains(message, "binary file")) << message;
  // Overlong encoding of '/', a lone surrogate, and a truncated sequence are all invalid UTF-8.
  EXPECT_TRUE(contains(load_error("output:\n  dir: \xc0\xaf\n"), "test.yaml:2: byte 0xc0"));
  EXPECT_TRUE(contains(load_error("output:\n  dir: \xed\xa0\x80\n"), "byte 0xed"));
  EXPECT_TRUE(contains(load_error("output:\n  dir: \xe2\x82"), "byte 0xe2"));
}

TEST(ConfigLoad, ValidUnicodeIsFine) {
  EXPECT_EQ(load("output:\n  dir: \"r\xc3\xa9sultats \xf0\x9f\x9a\x80\"\n").output.dir,
            "r\xc3\xa9sultats \xf0\x9f\x9a\x80");
}

TEST(ConfigLoad, AnchorsAndAliases) {
  const Config config = load("gemm:\n  iters: &n 9\ntrain:\n  steps: *n\n");
  EXPECT_EQ(config.gemm.iters, 9);
  EXPECT_EQ(config.train.steps, 9);
}

TEST(ConfigLoad, TooLargeTextIsRejected) {
  const std::string huge = "# " + std::string(2u << 20, 'x') + "\n";
  EXPECT_TRUE(contains(load_error(huge), "a config is at most 1 MiB"));
}

class ConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("shakedown_config_test_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  std::filesystem::path dir_;
};

TEST_F(ConfigFile, LoadsAndNamesThePathInErrors) {
  const std::string good = write("good.yaml", "gemm:\n  iters: 3\n");
  EXPECT_EQ(load_config_file(good).gemm.iters, 3);
  const std::string bad = write("bad.yaml", "gemm:\n  iters: 0\n");
  try {
    load_config_file(bad);
    FAIL() << "no error";
  } catch (const UsageError& error) {
    EXPECT_EQ(std::string(error.what()).rfind(bad + ":2: gemm.iters:", 0), 0u) << error.what();
  }
}

TEST_F(ConfigFile, MissingFileAndDirectory) {
  const std::string missing = (dir_ / "nope.yaml").string();
  try {
    load_config_file(missing);
    FAIL() << "no error";
  } catch (const UsageError& error) {
    EXPECT_TRUE(
        contains(error.what(), missing + ": cannot read the config file: it does not exist"))
        << error.what();
  }
  try {
    load_config_file(dir_.string());
    FAIL() << "no error";
  } catch (const UsageError& error) {
    EXPECT_TRUE(contains(error.what(), "it is a directory")) << error.what();
  }
}

TEST_F(ConfigFile, TooLargeFile) {
  const std::string big = write("big.yaml", "# " + std::string(3u << 20, 'x') + "\n");
  try {
    load_config_file(big);
    FAIL() << "no error";
  } catch (const UsageError& error) {
    EXPECT_TRUE(contains(error.what(), big + ": is ")) << error.what();
    EXPECT_TRUE(contains(error.what(), "at most 1 MiB")) << error.what();
  }
}

TEST_F(ConfigFile, OverridesApplyAfterTheFile) {
  const std::string path = write("c.yaml", "gemm:\n  iters: 3\n");
  EXPECT_EQ(load_config_file(path, {"gemm.iters=4"}).gemm.iters, 4);
}

}  // namespace
}  // namespace shakedown
