#pragma once
// What every fuzz target accepts as a clean outcome: the parser's own error for bad input
// (UsageError, RuntimeFault, or std::invalid_argument where the API documents it). Anything else
// escaping (InternalError, std::out_of_range, std::bad_alloc, ...) is a finding: it aborts, so
// libFuzzer reports it and keeps the input.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "core/error.hpp"

namespace shakedown::fuzz {

template <class Fn>
void expect_clean(Fn&& fn) {
  try {
    fn();
  } catch (const UsageError&) {
  } catch (const RuntimeFault&) {
  } catch (const AgreedError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: unexpected exception: %s\n", e.what());
    std::abort();
  }
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace shakedown::fuzz
