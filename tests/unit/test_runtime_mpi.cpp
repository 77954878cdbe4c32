// SHAKEDOWN_MPI_THREAD: which MPI thread level shakedown asks for (runtime/mpi.hpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "runtime/mpi.hpp"

using namespace shakedown;

namespace {

// Sets SHAKEDOWN_MPI_THREAD for one test and puts the old value back.
class ThreadVariable {
 public:
  explicit ThreadVariable(const char* value) {
    if (const char* old = std::getenv(kName)) old_ = old;
    if (value != nullptr) {
      setenv(kName, value, 1);
    } else {
      unsetenv(kName);
    }
  }
  ~ThreadVariable() {
    if (old_) {
      setenv(kName, old_->c_str(), 1);
    } else {
      unsetenv(kName);
    }
  }

 private:
  static constexpr const char* kName = "SHAKEDOWN_MPI_THREAD";
  std::optional<std::string> old_;
};

}  // namespace

TEST(MpiThreadLevel, SingleUnlessFunneledIsAskedFor) {
  {
    ThreadVariable unset(nullptr);
    EXPECT_EQ(requested_thread_level(), MPI_THREAD_SINGLE);
  }
  {
    ThreadVariable single("single");
    EXPECT_EQ(requested_thread_level(), MPI_THREAD_SINGLE);
  }
  {
    ThreadVariable funneled("funneled");
    EXPECT_EQ(requested_thread_level(), MPI_THREAD_FUNNELED);
  }
  EXPECT_EQ(thread_level_name(MPI_THREAD_FUNNELED), "MPI_THREAD_FUNNELED");
}

TEST(MpiThreadLevel, AnotherValueIsAUsageErrorNamingTheVariable) {
  ThreadVariable multiple("multiple");
  try {
    requested_thread_level();
    FAIL() << "accepted 'multiple'";
  } catch (const UsageError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("SHAKEDOWN_MPI_THREAD='multiple'"), std::string::npos) << text;
    EXPECT_NE(text.find("single (the default) or funneled"), std::string::npos) << text;
  }
}
