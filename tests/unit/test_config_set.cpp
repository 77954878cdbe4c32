// --set key.path=value overrides: parsed as YAML, validated like the file, errors name the --set.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/load.hpp"
#include "core/error.hpp"
#include "text_support.hpp"

namespace shakedown {
namespace {

Config with(const std::vector<std::string>& overrides, const std::string& yaml = "") {
  return load_config(yaml, "base.yaml", overrides);
}

std::string set_error(const std::vector<std::string>& overrides, const std::string& yaml = "") {
  try {
    load_config(yaml, "base.yaml", overrides);
  } catch (const UsageError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no UsageError for --set " << overrides.back();
  return {};
}

using testing_support::contains;

TEST(ConfigSet, Scalars) {
  const Config config =
      with({"collectives.iters=10", "gemm.fast_accum=false", "linkscan.bw_fraction=0.5",
            "checkpoint.bytes_per_rank=1G", "collectives.sizes=8:4K"});
  EXPECT_EQ(config.collectives.iters, 10);
  EXPECT_FALSE(config.gemm.fast_accum);
  EXPECT_DOUBLE_EQ(config.linkscan.bw_fraction, 0.5);
  EXPECT_EQ(config.checkpoint.bytes_per_rank, 1ull << 30);
  EXPECT_EQ(config.collectives.sizes.spec, "8:4K");
  EXPECT_EQ(config.collectives.sizes.values.size(), 10u);
}

TEST(ConfigSet, FlowListsAndCommaLists) {
  EXPECT_EQ(with({"collectives.ops=[all_reduce]"}).collectives.ops,
            (std::vector<std::string>{"all_reduce"}));
  EXPECT_EQ(with({"collectives.ops=all_gather,broadcast"}).collectives.ops,
            (std::vector<std::string>{"all_gather", "broadcast"}));
  EXPECT_EQ(with({"phases=[gemm, inventory]"}).phases,
            (std::vector<std::string>{"inventory", "gemm"}));
  EXPECT_EQ(with({"gemm.shapes=[128x128x128, [1, 2, 3]]"}).gemm.shapes.size(), 2u);
}

// Shapes are split into their dimensions; a shape string long enough to live on the heap
// (16+ characters) was once split out of a temporary and read after it was freed.
TEST(ConfigSet, LongShapeStringsParse) {
  EXPECT_EQ(with({"gemm.shapes=16384x16384x16384"}).gemm.shapes,
            (std::vector<GemmShape>{{16384, 16384, 16384}}));
  EXPECT_EQ(with({"gemm.shapes=1x1x000000000001"}).gemm.shapes,
            (std::vector<GemmShape>{{1, 1, 1}}));
  EXPECT_EQ(with({}, "gemm:\n  shapes: [\"  1024 X 1048576 X 000000000000000512  \"]\n")
                .gemm.shapes,
            (std::vector<GemmShape>{{1024, 1048576, 512}}));
}

TEST(ConfigSet, WholeSectionAsAMapping) {
  const Config config = with({"gemm={iters: 10, warmup: 0}"});
  EXPECT_EQ(config.gemm.iters, 10);
  EXPECT_EQ(config.gemm.warmup, 0);
}

TEST(ConfigSet, QuotedAndEmptyValues) {
  EXPECT_EQ(with({"output.dir=\"my results\""}).output.dir, "my results");
  EXPECT_EQ(with({"checks.platform="}, "checks:\n  platform: h100-sxm\n").checks.platform, "");
  EXPECT_EQ(with({" collectives.iters = 12 "}).collectives.iters, 12);
}

TEST(ConfigSet, OverridesWinOverTheFileAndLaterOverridesWin) {
  const std::string yaml = "collectives:\n  iters: 3\n";
  EXPECT_EQ(with({"collectives.iters=4"}, yaml).collectives.iters, 4);
  EXPECT_EQ(with({"collectives.iters=4", "collectives.iters=5"}, yaml).collectives.iters, 5);
}

TEST(ConfigSet, BadValueNamesTheSet) {
  EXPECT_EQ(set_error({"collectives.iters=ten"}),
            "--set \"collectives.iters=ten\": collectives.iters: must be an integer in [1, "
            "1000000], got \"ten\"");
}

TEST(ConfigSet, UnknownKeysSuggest) {
  const std::string key = set_error({"collectives.iterz=5"});
  EXPECT_TRUE(contains(key,
                       "--set \"collectives.iterz=5\": collectives.iterz: unknown key; did "
                       "you mean \"iters\"?"))
      << key;
  const std::string section = set_error({"colectives.iters=5"});
  EXPECT_TRUE(contains(section, "colectives: unknown key; did you mean \"collectives\"?"))
      << section;
  const std::string top = set_error({"phase=[gemm]"});
  EXPECT_TRUE(contains(top, "phase: unknown key; did you mean \"phases\"?")) << top;
  const std::string phase = set_error({"phases=[gemm, trian]"});
  EXPECT_TRUE(contains(phase, "phases[1]: unknown phase \"trian\"; did you mean \"train\"?"))
      << phase;
}

TEST(ConfigSet, Malformed) {
  EXPECT_TRUE(contains(set_error({"collectives.iters"}),
                       "--set \"collectives.iters\": no '='; expected KEY.PATH=VALUE"));
  EXPECT_TRUE(contains(set_error({"=5"}), "nothing before '='"));
  EXPECT_TRUE(contains(set_error({"collectives..iters=5"}), "empty part in the key path"));
  EXPECT_TRUE(contains(set_error({"collectives.iters.max=5"}), "too many levels"));
  EXPECT_TRUE(contains(set_error({"phases.gemm=true"}), "phases has no keys under it"));
  EXPECT_TRUE(contains(set_error({"collectives.ops=[all_reduce"}),
                       "collectives.ops: the value is not valid YAML"));
  EXPECT_TRUE(contains(set_error({std::string("output.dir=a\x01", 13)}), "control character"));
}

TEST(ConfigSet, SectionMustBeAMapping) {
  EXPECT_TRUE(contains(set_error({"gemm=fast"}), "gemm: must be a mapping of keys"));
}

TEST(ConfigSet, CrossKeyRuleBrokenByAnOverrideIsReportedThere) {
  const std::string message = set_error({"train.heads=12"}, "train:\n  hidden: 1000\n  heads: 8\n");
  EXPECT_TRUE(contains(message,
                       "--set \"train.heads=12\": train.heads: train.hidden = 1000 is not "
                       "divisible by train.heads = 12"))
      << message;
  EXPECT_TRUE(contains(message, "(train.hidden set at base.yaml:2)")) << message;
}

TEST(ConfigSet, DuplicateKeysInsideAnOverride) {
  EXPECT_TRUE(contains(set_error({"gemm={iters: 1, iters: 2}"}), "gemm.iters: duplicate key"));
}

TEST(ConfigSet, FileErrorsComeFirst) {
  EXPECT_TRUE(contains(set_error({"gemm.iters=3"}, "gemm:\n  iters: 0\n"), "base.yaml:2:"));
}

TEST(ConfigSet, OverridesOnTheBuiltInDefaults) {
  const Config config = default_config({"phases=[inventory,collectives]"});
  EXPECT_EQ(config.phases, (std::vector<std::string>{"inventory", "collectives"}));
  Config expected = default_config();
  expected.phases = config.phases;
  EXPECT_EQ(config, expected);
  try {
    default_config({"train.heads=7"});
    FAIL() << "no error";
  } catch (const UsageError& error) {
    EXPECT_TRUE(contains(error.what(), "--set \"train.heads=7\": train.heads:")) << error.what();
  }
}

}  // namespace
}  // namespace shakedown
