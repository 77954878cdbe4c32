#include "runtime/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "runtime/clock.hpp"

namespace shakedown {

Progress::Progress(std::string title, long total, bool enabled)
    : title_(std::move(title)), total_(total), enabled_(enabled && total > 0) {
  start_us_ = now_us();
}

Progress::~Progress() {
  if (enabled_ && drawn_ && terminal()) std::fprintf(stderr, "\r\033[K");  // a clean line
}

bool Progress::terminal() {
  return isatty(STDERR_FILENO) == 1;
}

std::string Progress::format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  return std::to_string(s / 3600) + " h " + std::to_string(s / 60 % 60) + " min";
}

void Progress::plan(std::vector<double> step_s) {
  plan_s_ = std::move(step_s);
}

double Progress::estimate_left(long done, double elapsed_s) const {
  const bool planned = static_cast<long>(plan_s_.size()) == total_ &&
                       std::all_of(plan_s_.begin(), plan_s_.end(),
                                   [](double s) { return std::isfinite(s) && s >= 0; });
  if (!planned) {
    return done > 0 ? elapsed_s / static_cast<double>(done) * static_cast<double>(total_ - done)
                    : std::nan("");
  }
  const auto split = plan_s_.begin() + std::clamp(done, 0L, total_);
  const double planned_done = std::accumulate(plan_s_.begin(), split, 0.0);
  const double planned_left = std::accumulate(split, plan_s_.end(), 0.0);
  const double scale = done > 0 && planned_done > 0 ? elapsed_s / planned_done : 1.0;
  return planned_left * scale;
}

void Progress::update(long done, const std::string& what) {
  if (!enabled_) return;
  const double now = now_us();
  if (drawn_ && now - last_draw_us_ < 250e3) return;
  last_draw_us_ = now;
  drawn_ = true;
  const double elapsed_s = (now - start_us_) * 1e-6;
  const double eta = estimate_left(done, elapsed_s);
  // On a terminal the line is redrawn in place; elsewhere (--progress under mpirun, a log) each
  // update is a line of its own, so a message printed after it never shares its line.
  const bool tty = terminal();
  std::fprintf(stderr, "%s%s %ld/%ld (%.0f%%) %s, ETA %s%s", tty ? "\r\033[K" : "", title_.c_str(),
               done, total_, 100.0 * static_cast<double>(done) / static_cast<double>(total_),
               what.c_str(), format_eta(eta).c_str(), tty ? "" : "\n");
  std::fflush(stderr);
}

}  // namespace shakedown
