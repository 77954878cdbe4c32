// String helpers: trim/split return views, so a temporary string must not be accepted.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/strings.hpp"

namespace shakedown {
namespace {

template <class T>
concept SplitAccepts = requires(T&& text) {
  split(std::forward<T>(text), 'x');
};
template <class T>
concept TrimAccepts = requires(T&& text) {
  trim(std::forward<T>(text));
};

// The views would point into a string that dies at the end of the full expression.
static_assert(!SplitAccepts<std::string>);
static_assert(!TrimAccepts<std::string>);
static_assert(SplitAccepts<std::string_view>);
static_assert(SplitAccepts<const std::string&>);
static_assert(TrimAccepts<std::string_view>);
static_assert(TrimAccepts<std::string&>);

TEST(Strings, SplitKeepsEmptyParts) {
  EXPECT_EQ(split("a,,b,", ','), (std::vector<std::string_view>{"a", "", "b", ""}));
  EXPECT_EQ(split("", ','), (std::vector<std::string_view>{""}));
}

TEST(Strings, SplitAndTrimALongOwnedString) {
  const std::string text = lowercase("  16384X16384x16384  ");
  std::vector<std::string> parts;
  for (std::string_view part : split(text, 'x')) parts.emplace_back(trim(part));
  EXPECT_EQ(parts, (std::vector<std::string>{"16384", "16384", "16384"}));
}

}  // namespace
}  // namespace shakedown

namespace shakedown {
namespace {

TEST(Strings, ShellQuoteOnlyWhatNeedsIt) {
  EXPECT_EQ(shell_quote("build/shakedown"), "build/shakedown");
  EXPECT_EQ(shell_quote("--set=collectives.sizes=8:1G"), "--set=collectives.sizes=8:1G");
  EXPECT_EQ(shell_quote("phases=[inventory,gemm]"), "'phases=[inventory,gemm]'");
  EXPECT_EQ(shell_quote("output.dir=my results"), "'output.dir=my results'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

}  // namespace
}  // namespace shakedown

TEST(Strings, ValidUtf8KeepsWellFormedTextAndReplacesTheRest) {
  using shakedown::valid_utf8;
  EXPECT_EQ(valid_utf8("gpu-14 node"), "gpu-14 node");
  EXPECT_EQ(valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5");
  EXPECT_EQ(valid_utf8("a\xFFz"), "a?z");                                 // never a UTF-8 byte
  EXPECT_EQ(valid_utf8("a\xC3"), "a?");                                   // truncated at the end
  EXPECT_EQ(valid_utf8("\xC0\xAF"), "??");                                // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "???");                           // a surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), "????");                      // above U+10FFFF
  EXPECT_EQ(valid_utf8(std::string("n\0l", 3)), std::string("n\0l", 3));  // NUL is UTF-8
}

TEST(Strings, PluralCountsAndNames) {
  using shakedown::plural;
  EXPECT_EQ(plural(1, "node"), "1 node");
  EXPECT_EQ(plural(0, "node"), "0 nodes");
  EXPECT_EQ(plural(3, "leaf switch", "leaf switches"), "3 leaf switches");
  EXPECT_EQ(plural(1, "leaf switch", "leaf switches"), "1 leaf switch");
}

TEST(Strings, JoinLimitedCutsLongListsAndSaysHowManyMore) {
  using shakedown::join_limited;
  EXPECT_EQ(join_limited({}, ", "), "");
  EXPECT_EQ(join_limited({"a"}, ", "), "a");
  EXPECT_EQ(join_limited({"a", "b", "c"}, "; ", 3), "a; b; c");
  EXPECT_EQ(join_limited({"a", "b", "c", "d", "e"}, "; ", 3), "a; b; c; and 2 more");
  std::vector<std::string> many;
  for (int i = 0; i < 1000; ++i) many.push_back("n" + std::to_string(i));
  EXPECT_EQ(join_limited(many, ", "), "n0, n1, n2, n3, n4, n5, n6, n7, and 992 more");
}
