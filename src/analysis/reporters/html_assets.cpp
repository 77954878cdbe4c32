// The HTML report's scripts, assembled into read-only data with .incbin (the paths come from
// CMakeLists.txt, which also rebuilds this file when either script changes): the report needs
// no file at run time and no network.
#include "analysis/reporters/html_assets.hpp"

#ifndef SHAKEDOWN_CHARTJS_PATH
#error "SHAKEDOWN_CHARTJS_PATH: set by CMakeLists.txt (libjs-chart.js's chart.min.js)"
#endif
#ifndef SHAKEDOWN_REPORTJS_PATH
#error "SHAKEDOWN_REPORTJS_PATH: set by CMakeLists.txt (src/analysis/reporters/report.js)"
#endif

// Hidden global labels: visible to the declarations below, never exported.
#define SHAKEDOWN_LABEL(name) ".globl " #name "\n.hidden " #name "\n" #name ":\n"
__asm__(".pushsection .rodata\n"
        ".balign 16\n" SHAKEDOWN_LABEL(shakedown_chartjs_begin)
        ".incbin \"" SHAKEDOWN_CHARTJS_PATH "\"\n" SHAKEDOWN_LABEL(shakedown_chartjs_end)
        ".balign 16\n" SHAKEDOWN_LABEL(shakedown_reportjs_begin)
        ".incbin \"" SHAKEDOWN_REPORTJS_PATH "\"\n" SHAKEDOWN_LABEL(shakedown_reportjs_end)
        ".popsection\n");
#undef SHAKEDOWN_LABEL

extern "C" {
extern const char shakedown_chartjs_begin[], shakedown_chartjs_end[];
extern const char shakedown_reportjs_begin[], shakedown_reportjs_end[];
}

namespace shakedown {

std::string_view chartjs_source() {
  return {shakedown_chartjs_begin,
          static_cast<std::size_t>(shakedown_chartjs_end - shakedown_chartjs_begin)};
}

std::string_view report_script() {
  return {shakedown_reportjs_begin,
          static_cast<std::size_t>(shakedown_reportjs_end - shakedown_reportjs_begin)};
}

}  // namespace shakedown
