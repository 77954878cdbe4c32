// Libraries loaded at first use, and probes run in a child so a crashing library cannot harm us.
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <variant>

#include "core/dynamic_library.hpp"
#include "core/error.hpp"
#include "core/gpu_libraries.hpp"

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

TEST(DynamicLibrary, OpenFirstTakesTheFirstThatLoadsAndNamesEveryFailure) {
  DynamicLibrary lib =
      DynamicLibrary::open_first({"libshakedown-does-not-exist.so.9", "libm.so.6", "libc.so.6"});
  ASSERT_TRUE(lib.loaded()) << lib.error();
  EXPECT_EQ(lib.name(), "libm.so.6");
  DynamicLibrary none =
      DynamicLibrary::open_first({"libshakedown-nope.so.1", "/nowhere/libshakedown-nope.so.1"});
  EXPECT_FALSE(none.loaded());
  EXPECT_THAT(none.error(), HasSubstr("libshakedown-nope.so.1"));
  EXPECT_THAT(none.error(), HasSubstr("/nowhere/libshakedown-nope.so.1"));
}

#if SHAKEDOWN_HAVE_CUDA
// The loaders need the libraries, not a GPU: every function resolves, and the version the loaded
// library reports has the headers' major version. Not loaded before the first use.
TEST(GpuLibraries, NcclLoadsAtFirstUseWithEveryFunction) {
  const bool before = DynamicLibrary::if_loaded(nccl_soname()).loaded();
  const NcclLibrary* lib = nullptr;
  try {
    lib = &nccl_api();
  } catch (const Error& e) {
    GTEST_SKIP() << "NCCL is not installed here: " << e.what();
  }
  if (!before) {
    EXPECT_TRUE(DynamicLibrary::if_loaded(nccl_soname()).loaded());
  }
#define SD_EXPECT_RESOLVED(name) EXPECT_NE(lib->name, nullptr) << #name;
  SD_NCCL_FUNCTIONS(SD_EXPECT_RESOLVED)
  int code = 0;
  ASSERT_EQ(lib->GetVersion(&code), ncclSuccess);
  EXPECT_EQ(code >= 10000 ? code / 10000 : code / 1000, NCCL_MAJOR);
  EXPECT_EQ(&nccl_api(), lib) << "loaded once per process";
}

TEST(GpuLibraries, CublasLtLoadsAtFirstUseWithEveryFunction) {
  const CublasLtLibrary* lib = nullptr;
  try {
    lib = &cublaslt_api();
  } catch (const Error& e) {
    GTEST_SKIP() << "cuBLASLt is not installed here: " << e.what();
  }
  SD_CUBLASLT_FUNCTIONS(SD_EXPECT_RESOLVED)
#undef SD_EXPECT_RESOLVED
  EXPECT_EQ(lib->GetVersion() / 10000, static_cast<std::size_t>(CUBLAS_VER_MAJOR));
  EXPECT_THAT(lib->handle.name(), HasSubstr(cublaslt_soname()));
}

// What a user on a node without the library (or with one older than the headers) reads.
TEST(GpuLibraries, AMissingLibraryNamesEveryPlaceTriedAndTheSettingToUse) {
  const auto nccl = load_nccl("libshakedown-no-nccl.so.2", "/nowhere/lib");
  ASSERT_TRUE(std::holds_alternative<std::string>(nccl));
  const std::string& why = std::get<std::string>(nccl);
  EXPECT_THAT(why, HasSubstr("cannot load NCCL ("));
  EXPECT_THAT(why, HasSubstr("libshakedown-no-nccl.so.2"));
  EXPECT_THAT(why, HasSubstr("/nowhere/lib/libshakedown-no-nccl.so.2"));
  EXPECT_THAT(why, HasSubstr("or set collectives.backend: mpi"));
  const auto lt = load_cublaslt("libshakedown-no-cublaslt.so.13", "");
  ASSERT_TRUE(std::holds_alternative<std::string>(lt));
  EXPECT_THAT(std::get<std::string>(lt), HasSubstr("cannot load cuBLASLt ("));
  EXPECT_THAT(std::get<std::string>(lt), HasSubstr("or set gemm.engine: cpu"));
}

TEST(GpuLibraries, ALibraryWithoutTheFunctionsNamesTheFirstMissingOne) {
  // libm loads but has none of NCCL's functions: the first of the table is named.
  const auto nccl = load_nccl("libm.so.6", "");
  ASSERT_TRUE(std::holds_alternative<std::string>(nccl));
  EXPECT_THAT(std::get<std::string>(nccl),
              HasSubstr("NCCL (libm.so.6) lacks ncclAllGather: it is older than the headers"));
  const auto lt = load_cublaslt("libm.so.6", "");
  ASSERT_TRUE(std::holds_alternative<std::string>(lt));
  EXPECT_THAT(std::get<std::string>(lt), HasSubstr("cuBLASLt (libm.so.6) lacks cublasLtCreate"));
}
#endif

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
