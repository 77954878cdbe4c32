#pragma once
// The MPI tests read a few settings from the environment (ctest sets them per test).
#include <cstdlib>

namespace shakedown::testing_support {

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

}  // namespace shakedown::testing_support
