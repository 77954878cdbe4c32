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
// A count or a reading shown whole ("3", "540"; "-" for NaN).
inline std::string whole_text(double v) {
  return fixed_text(v, 0);
}

// printf %.<digits>g, or "-" for NaN.
inline std::string general_text(double v, int digits) {
  if (std::isnan(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

// "12.3 GB/s", or "- GB/s" for NaN.
inline std::string gbps_text(double v) {
  return general_text(v, 3) + " GB/s";
}

// A test's p-value: "p = 0.012", or "p < 1e-4" below 10^floor_exponent (the smallest the test
// resolves).
inline std::string p_text(double p, int floor_exponent = -4) {
  if (p < std::pow(10.0, floor_exponent)) return "p < 1e" + std::to_string(floor_exponent);
  return "p = " + general_text(p, 2);
}

}  // namespace shakedown
