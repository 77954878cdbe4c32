// Size and size-list parsing: the spellings users type, and every way they can be wrong.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/load.hpp"
#include "core/error.hpp"

namespace shakedown {
namespace {

constexpr std::uint64_t kKi = 1024;
constexpr std::uint64_t kMi = kKi * kKi;
constexpr std::uint64_t kGi = kMi * kKi;
constexpr std::uint64_t kTi = kGi * kKi;

std::string size_error(const std::string& text) {
  try {
    parse_size(text, "here");
  } catch (const UsageError& error) {
    return error.what();
  }
  ADD_FAILURE() << "parse_size(\"" << text << "\") did not throw";
  return {};
}

std::string list_error(const std::string& text) {
  try {
    parse_size_list(text, "here");
  } catch (const UsageError& error) {
    return error.what();
  }
  ADD_FAILURE() << "parse_size_list(\"" << text << "\") did not throw";
  return {};
}

TEST(ConfigSizes, PlainAndBinaryUnits) {
  EXPECT_EQ(parse_size("8", "x"), 8u);
  EXPECT_EQ(parse_size("0", "x"), 0u);
  EXPECT_EQ(parse_size("8B", "x"), 8u);
  EXPECT_EQ(parse_size("4K", "x"), 4 * kKi);
  EXPECT_EQ(parse_size("4k", "x"), 4 * kKi);
  EXPECT_EQ(parse_size("1M", "x"), kMi);
  EXPECT_EQ(parse_size("2G", "x"), 2 * kGi);
  EXPECT_EQ(parse_size("1T", "x"), kTi);
  EXPECT_EQ(parse_size("1KiB", "x"), kKi);
  EXPECT_EQ(parse_size("1MiB", "x"), kMi);
  EXPECT_EQ(parse_size("1GiB", "x"), kGi);
  EXPECT_EQ(parse_size("1TiB", "x"), kTi);
  EXPECT_EQ(parse_size("64mib", "x"), 64 * kMi);
}

TEST(ConfigSizes, DecimalUnits) {
  EXPECT_EQ(parse_size("1KB", "x"), 1000u);
  EXPECT_EQ(parse_size("1MB", "x"), 1000u * 1000);
  EXPECT_EQ(parse_size("2GB", "x"), 2000u * 1000 * 1000);
  EXPECT_EQ(parse_size("1TB", "x"), 1000ull * 1000 * 1000 * 1000);
  EXPECT_EQ(parse_size("3kb", "x"), 3000u);
}

TEST(ConfigSizes, SpacesAndFractions) {
  EXPECT_EQ(parse_size("64 MiB", "x"), 64 * kMi);
  EXPECT_EQ(parse_size("  8  ", "x"), 8u);
  EXPECT_EQ(parse_size("1.5K", "x"), 1536u);
  EXPECT_EQ(parse_size("0.5MiB", "x"), 512 * kKi);
  EXPECT_EQ(parse_size(".25K", "x"), 256u);
  EXPECT_EQ(parse_size("1.5 GB", "x"), 1500u * 1000 * 1000);
}

TEST(ConfigSizes, LimitIsOneTebibyte) {
  EXPECT_EQ(parse_size("1099511627776", "x"), kTi);
  EXPECT_NE(size_error("1099511627777").find("larger than 1 TiB"), std::string::npos);
  EXPECT_NE(size_error("2T").find("larger than 1 TiB"), std::string::npos);
  EXPECT_NE(size_error("1025G").find("larger than 1 TiB"), std::string::npos);
  EXPECT_NE(size_error("1.5T").find("larger than 1 TiB"), std::string::npos);
  EXPECT_NE(size_error("99999999999999999999999999").find("larger than 1 TiB"), std::string::npos);
  EXPECT_NE(size_error("18446744073709551616").find("larger than 1 TiB"), std::string::npos);
}

TEST(ConfigSizes, Rejections) {
  EXPECT_NE(size_error("").find("it is empty"), std::string::npos);
  EXPECT_NE(size_error("   ").find("it is empty"), std::string::npos);
  EXPECT_NE(size_error("64Q").find("unknown unit \"Q\""), std::string::npos);
  EXPECT_NE(size_error("1.5.3M").find("more than one decimal point"), std::string::npos);
  EXPECT_NE(size_error("-4K").find("cannot be negative"), std::string::npos);
  EXPECT_NE(size_error("0.1K").find("not a whole number of bytes"), std::string::npos);
  EXPECT_NE(size_error("1.").find("no digit after the decimal point"), std::string::npos);
  EXPECT_NE(size_error("1.1234567K").find("more than 6 decimal places"), std::string::npos);
  EXPECT_NE(size_error("K").find("does not start with a number"), std::string::npos);
  EXPECT_NE(size_error("0x10").find("unknown unit"), std::string::npos);
  EXPECT_NE(size_error("1 K B").find("unknown unit"), std::string::npos);
  EXPECT_NE(size_error("1e6").find("unknown unit"), std::string::npos);
  EXPECT_NE(size_error("+4K").find("does not start with a number"), std::string::npos);
}

TEST(ConfigSizes, MessageNamesWhereAndWhatIsAccepted) {
  const std::string message = size_error("64Q");
  EXPECT_EQ(message.rfind("here: bad size \"64Q\"", 0), 0u) << message;
  EXPECT_NE(message.find("KiB"), std::string::npos) << message;
  EXPECT_NE(message.find("powers of 1000"), std::string::npos) << message;
}

TEST(ConfigSizeLists, RangeDoubles) {
  const SizeList list = parse_size_list("8:64", "x");
  EXPECT_EQ(list.values, (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(list.spec, "8:64");
}

TEST(ConfigSizeLists, RangeStopsAtOrBelowEnd) {
  EXPECT_EQ(parse_size_list("8:100", "x").values, (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(parse_size_list("1K:1K", "x").values, (std::vector<std::uint64_t>{1024}));
}

TEST(ConfigSizeLists, RangeWithFactor) {
  EXPECT_EQ(parse_size_list("8:1K:x4", "x").values, (std::vector<std::uint64_t>{8, 32, 128, 512}));
  EXPECT_EQ(parse_size_list("1K:1G:X1024", "x").values,
            (std::vector<std::uint64_t>{kKi, kMi, kGi}));
  EXPECT_EQ(parse_size_list("8:1G:x4", "x").values.back(), 512 * kMi);
}

TEST(ConfigSizeLists, CommaListIsSortedAndUnique) {
  EXPECT_EQ(parse_size_list("8,64,1K", "x").values, (std::vector<std::uint64_t>{8, 64, 1024}));
  EXPECT_EQ(parse_size_list("1K, 64 ,8,8,1KiB", "x").values,
            (std::vector<std::uint64_t>{8, 64, 1024}));
  EXPECT_EQ(parse_size_list("8:32,4M,16", "x").values,
            (std::vector<std::uint64_t>{8, 16, 32, 4 * kMi}));
  EXPECT_EQ(parse_size_list("4K", "x").values, (std::vector<std::uint64_t>{4096}));
}

TEST(ConfigSizeLists, SpecIsWhatWasWrittenTrimmed) {
  EXPECT_EQ(parse_size_list("  8:1G:x4 ", "x").spec, "8:1G:x4");
}

TEST(ConfigSizeLists, WidestRangeFits) {
  // 2^0 .. 2^40: 41 sizes, under the cap of 64.
  EXPECT_EQ(parse_size_list("1:1T", "x").values.size(), 41u);
}

TEST(ConfigSizeLists, Rejections) {
  EXPECT_NE(list_error("").find("it is empty"), std::string::npos);
  EXPECT_NE(list_error("1G:8").find("starts above its end"), std::string::npos);
  EXPECT_NE(list_error("0:8").find("at least 1 byte"), std::string::npos);
  EXPECT_NE(list_error("0").find("at least 1 byte"), std::string::npos);
  EXPECT_NE(list_error("8:1G:x1").find("must be written xF"), std::string::npos);
  EXPECT_NE(list_error("8:1G:x2000").find("must be written xF"), std::string::npos);
  EXPECT_NE(list_error("8:1G:y4").find("must be written xF"), std::string::npos);
  EXPECT_NE(list_error("8:1G:x").find("must be written xF"), std::string::npos);
  EXPECT_NE(list_error("8:1G:x99999999999999999999").find("must be written xF"), std::string::npos);
  EXPECT_NE(list_error("1:2:x2:4").find("more than two ':'"), std::string::npos);
  EXPECT_NE(list_error("8,,16").find("an entry is empty"), std::string::npos);
  EXPECT_NE(list_error("8,").find("an entry is empty"), std::string::npos);
  EXPECT_NE(list_error("-8:64").find("cannot be negative"), std::string::npos);
  EXPECT_NE(list_error("8:64Q").find("unknown unit"), std::string::npos);
  EXPECT_NE(list_error("8:2T").find("larger than 1 TiB"), std::string::npos);
}

TEST(ConfigSizeLists, CappedAtSixtyFourSizes) {
  std::string sixty_four;
  for (int i = 1; i <= 64; ++i) sixty_four += (i > 1 ? "," : "") + std::to_string(i);
  EXPECT_EQ(parse_size_list(sixty_four, "x").values.size(), 64u);
  const std::string message = list_error(sixty_four + ",65");
  EXPECT_NE(message.find("more than 64 sizes"), std::string::npos) << message;
  EXPECT_NE(list_error("1:1T:x2,3:1T:x2").find("more than 64 sizes"), std::string::npos);
}

TEST(ConfigSizeLists, BuiltInDefaultsMatchTheirSpec) {
  const Config config;
  EXPECT_EQ(config.collectives.sizes, parse_size_list("8:64M", "x"));
  EXPECT_EQ(config.collectives.nccl_sizes, parse_size_list("8:8G", "x"));
}

TEST(ConfigFormatSize, Prints) {
  EXPECT_EQ(format_size(0), "0 B");
  EXPECT_EQ(format_size(512), "512 B");
  EXPECT_EQ(format_size(1023), "1023 B");
  EXPECT_EQ(format_size(kKi), "1 KiB");
  EXPECT_EQ(format_size(1536), "1.5 KiB");
  EXPECT_EQ(format_size(64 * kMi), "64 MiB");
  EXPECT_EQ(format_size(8 * kGi), "8 GiB");
  EXPECT_EQ(format_size(kTi), "1 TiB");
  EXPECT_EQ(format_size(1000 * 1000), "976.56 KiB");
  EXPECT_EQ(format_size(1024 * kTi), "1 PiB");
  EXPECT_EQ(format_size(std::numeric_limits<std::uint64_t>::max()), "16 EiB");
}

TEST(ConfigFormatSize, ExactValuesParseBack) {
  for (std::uint64_t bytes : {std::uint64_t{1}, kKi, 3 * kKi, 64 * kMi, 8 * kGi, kTi}) {
    EXPECT_EQ(parse_size(format_size(bytes), "x"), bytes) << format_size(bytes);
  }
}

}  // namespace
}  // namespace shakedown
