#pragma once
// The scripts the HTML report inlines, embedded into the binary at build time (CMakeLists.txt):
// Chart.js from Debian's libjs-chart.js and the report's own src/analysis/reporters/report.js.
#include <string_view>

namespace shakedown {

std::string_view chartjs_source();
std::string_view report_script();

}  // namespace shakedown
