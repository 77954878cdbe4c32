// Libraries loaded at first use, and probes run in a child so a crashing library cannot harm us.
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/dynamic_library.hpp"

namespace shakedown {
namespace {

using ::testing::HasSubstr;

TEST(DynamicLibrary, LoadsAndFindsASymbol) {
  DynamicLibrary lib = DynamicLibrary::open("libm.so.6");
  ASSERT_TRUE(lib.loaded()) << lib.error();
  auto cosine = lib.function<double (*)(double)>("cos");
  ASSERT_NE(cosine, nullptr);
  EXPECT_DOUBLE_EQ(cosine(0.0), 1.0);
  EXPECT_EQ(lib.function<void (*)()>("no_such_symbol_here"), nullptr);
  EXPECT_THAT(lib.error(), HasSubstr("no_such_symbol_here"));
}

TEST(DynamicLibrary, MissingLibraryIsAnErrorNotACrash) {
  DynamicLibrary lib = DynamicLibrary::open("libshakedown-does-not-exist.so.9");
  EXPECT_FALSE(lib.loaded());
  EXPECT_THAT(lib.error(), HasSubstr("libshakedown-does-not-exist.so.9"));
  EXPECT_EQ(lib.function<void (*)()>("anything"), nullptr);
}

TEST(DynamicLibrary, IfLoadedDoesNotLoad) {
  EXPECT_TRUE(DynamicLibrary::if_loaded("libc.so.6").loaded());
  EXPECT_FALSE(DynamicLibrary::if_loaded("libshakedown-does-not-exist.so.9").loaded());
}

TEST(ProbeInChild, ReturnsTheChildsText) {
  const ChildProbe p =
      probe_in_child([] { return std::string(100000, 'x'); }, std::chrono::seconds(10));
  EXPECT_TRUE(p.ok) << p.text;
  EXPECT_EQ(p.text.size(), 100000u);
}

TEST(ProbeInChild, ACrashIsReported) {
  const ChildProbe p = probe_in_child(
      []() -> std::string {
        std::fputs("*** something broke ***\n", stderr);
        std::abort();
      },
      std::chrono::seconds(10));
  EXPECT_FALSE(p.ok);
  EXPECT_THAT(p.text, HasSubstr("crashed"));
  EXPECT_THAT(p.text, HasSubstr("Abort"));
  EXPECT_THAT(p.text, HasSubstr("*** something broke ***"));
}

TEST(ProbeInChild, AHangIsKilledAfterTheTimeout) {
  const auto started = std::chrono::steady_clock::now();
  const ChildProbe p = probe_in_child(
      [] {
        std::this_thread::sleep_for(std::chrono::seconds(60));
        return std::string("late");
      },
      std::chrono::milliseconds(200));
  EXPECT_FALSE(p.ok);
  EXPECT_THAT(p.text, HasSubstr("did not finish within 200 ms"));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
}

}  // namespace
}  // namespace shakedown
