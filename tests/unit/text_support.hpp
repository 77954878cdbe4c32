#pragma once
// Small text helpers the unit tests share.
#include <string_view>

namespace shakedown::testing_support {

inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace shakedown::testing_support
