#pragma once
// The devices phase's pair schedule inside one node of G devices (docs/devices.md): which copies
// run at the same time, step by step. A copy (src, dst) is done by dst, reading src's buffer
// (nvbandwidth's "read" copies), so each copy is timed by the rank that issues it.
//  - unidirectional: every ordered pair alone, one at a time (nvbandwidth's rule);
//  - bidirectional: both directions of one unordered pair at once, each timed on its own side;
//  - concurrent: every device reads from the one `shift` places on (shift 1 .. G-1), all at
//    once: the load training puts on NVSwitch or the memory system.
// `pairs` none: no steps; ring: only the pairs of neighbours (d, d+1 mod G); all: every pair.
#include <string>
#include <utility>
#include <vector>

namespace shakedown::devices {

enum class PairMode { kUnidirectional = 0, kBidirectional = 1, kConcurrent = 2 };
inline constexpr int kPairModes = 3;
// "unidirectional", "bidirectional", "concurrent"
const char* pair_mode_name(PairMode mode);

struct PairCopy {
  int src = 0, dst = 0;  // local ranks (device slots) in the node
  friend bool operator==(const PairCopy&, const PairCopy&) = default;
};

struct PairStep {
  PairMode mode = PairMode::kUnidirectional;
  std::vector<PairCopy> copies;  // run at the same time
};

std::vector<PairStep> pair_schedule(int devices, const std::string& pairs);

// The copy `local` issues in `step`, or nullptr when it only waits.
const PairCopy* copy_of(const PairStep& step, int local);

// How long each step of the phase should take, for the ETA under --progress: a model, fed with
// one run of each memory test and one pair copy alone as the phase probed them (NaN: not known;
// the ETA then counts steps). The memory tests run warmup + trials times per device in turn
// (a node barrier per turn), then at once (a barrier per run); each pair step's copies run at
// once (a barrier per run). `shared`: the node's devices share one memory (the CPU path), so
// runs and copies at once divide its bandwidth; GPUs each have their own. `per_trial_s`: one
// node barrier. One entry per memory test, then one per pair mode, in the phase's order.
struct StepModel {
  std::vector<double> test_run_s;  // per memory test, one run alone
  double pair_copy_s = 0;          // one pair copy alone
  int devices = 1;                 // in the node (its ranks)
  std::string pairs = "all";       // devices.pairs
  int warmup = 0, trials = 1;      // devices.warmup, devices.trials
  bool shared = false;             // one memory for the node's devices
  double per_trial_s = 1e-4;       // a trial's barrier
};
std::vector<double> estimate_steps(const StepModel& model);

}  // namespace shakedown::devices
