#pragma once
// Numbers as report text, shared by the reporters: "-" where a value was not measured (NaN).
#include <cmath>
#include <cstdio>
#include <string>

namespace shakedown {

// printf %.<decimals>f, or "-" for NaN.
inline std::string fixed_text(double v, int decimals) {
  if (std::isnan(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// printf %.<digits>g, or "-" for NaN.
inline std::string general_text(double v, int digits) {
  if (std::isnan(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

}  // namespace shakedown
