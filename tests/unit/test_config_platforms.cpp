// The built-in platforms (configs/platforms/*.yaml): every file parses with figures that make
// sense, `checks.platform` accepts exactly their names (and auto, ""), and auto matches GPUs.
#include <gtest/gtest.h>

#include "config/load.hpp"
#include "config/platforms.hpp"
#include "core/error.hpp"

namespace shakedown {
namespace {

TEST(Platforms, EveryBuiltInParsesWithSaneFigures) {
  const auto platforms = builtin_platforms();
  ASSERT_GE(platforms.size(), 4u);
  for (const Platform& p : platforms) {
    SCOPED_TRACE(p.name);
    EXPECT_FALSE(p.description.empty());
    EXPECT_FALSE(p.busbw_GBps.empty()) << "a platform without busbw figures checks nothing";
    EXPECT_GT(p.min_bytes, 0u);
    for (const auto& [scope, ops] : p.busbw_GBps) {
      for (const auto& [op, gbps] : ops) {
        EXPECT_GT(gbps, 0) << scope << " " << op;
        EXPECT_LT(gbps, 2000) << scope << " " << op << ": above any NVLink or NIC rate";
      }
    }
    EXPECT_GT(p.fp8_tflops, 0);
    EXPECT_LT(p.fp8_tflops, 4000);
  }
}

TEST(Platforms, TheNamedOnesExist) {
  for (const char* name : {"cpu-local", "h100-nvl", "h100-sxm", "h200-sxm"}) {
    EXPECT_TRUE(find_platform(name).has_value()) << name;
  }
  EXPECT_FALSE(find_platform("h100").has_value());
  const auto h100 = find_platform("h100-sxm");
  EXPECT_EQ(h100->min_bytes, 1ull << 30);
  EXPECT_DOUBLE_EQ(h100->busbw_GBps.at("intra_node").at("all_reduce"), 360);
  EXPECT_DOUBLE_EQ(h100->fp8_tflops, 1300);
}

TEST(Platforms, AutoMatchesTheGpuModelOnEveryNode) {
  EXPECT_EQ(match_platform({"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"})->name, "h100-sxm");
  EXPECT_EQ(match_platform({"NVIDIA H200"})->name, "h200-sxm");
  EXPECT_EQ(match_platform({"NVIDIA H100 NVL"})->name, "h100-nvl");
  // Mixed nodes, unknown GPUs and no GPUs match nothing (the CPU case is decided by the caller).
  EXPECT_FALSE(match_platform({"NVIDIA H100 80GB HBM3", "NVIDIA H200"}).has_value());
  EXPECT_FALSE(match_platform({"NVIDIA A100-SXM4-80GB"}).has_value());
  EXPECT_FALSE(match_platform({}).has_value());
}

TEST(Platforms, ConfigAcceptsKnownNamesAutoAndNone) {
  EXPECT_EQ(default_config({"checks.platform=h200-sxm"}).checks.platform, "h200-sxm");
  EXPECT_EQ(default_config({"checks.platform=auto"}).checks.platform, "auto");
  EXPECT_EQ(default_config({"checks.platform="}).checks.platform, "");
  EXPECT_EQ(Config{}.checks.platform, "auto");
  try {
    default_config({"checks.platform=h100"});
    FAIL() << "an unknown platform was accepted";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("checks.platform: unknown platform \"h100\""), std::string::npos) << what;
    EXPECT_NE(what.find("cpu-local, h100-nvl, h100-sxm, h200-sxm"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace shakedown
