#pragma once
// A one-line progress report with an ETA on stderr, for rank 0 on a terminal only (progress goes
// to stderr, and only on a terminal). Elsewhere it stays silent, so logs and CI
// output carry only results.
#include <string>
#include <vector>

namespace shakedown {

class Progress {
 public:
  // `enabled` is usually is_root && stderr is a terminal (see for_rank).
  Progress(std::string title, long total, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  static bool terminal();  // stderr is a terminal
  // Step `done` of `total` is starting; redraws at most a few times per second.
  void update(long done, const std::string& what);
  // What each of the `total` steps should take, from the phase's own probe: the ETA is then the
  // steps left by their estimates, scaled by how long the finished ones took against theirs
  // (before the first: the estimate as it stands). Any NaN, or a plan of another length: the
  // ETA counts steps. A phase may plan again when it learns more.
  void plan(std::vector<double> step_s);

  // "12 s", "3 min 5 s", "1 h 2 min".
  static std::string format_eta(double seconds);
  // The seconds left once `done` steps are over, `elapsed_s` after the start (NaN: not known).
  double estimate_left(long done, double elapsed_s) const;

 private:
  std::string title_;
  long total_;
  bool enabled_;
  double start_us_ = 0;
  double last_draw_us_ = 0;
  bool drawn_ = false;
  std::vector<double> plan_s_;
};

}  // namespace shakedown
