#include "analysis/train_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "analysis/checks.hpp"
#include "analysis/number_text.hpp"
#include "analysis/stragglers.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"

namespace shakedown {

namespace {

namespace t = schema::training;

// A gradient buffer with more than this share of exact zeros lost a layer to FP8 underflow.
constexpr double kMaxZeroGradShare = 0.01;

// /train as recorded.
struct TrainData {
  std::size_t steps = 0, world = 0, buckets = 0;
  std::vector<double> step, fwd, bwd, tp, exposed, span, optim, arrival, zero_share;  // [S, W]
  std::vector<std::uint64_t> hash;                                                    // [S, W]
  std::vector<std::int64_t> tp_rank, dp_rank, finite;  // [W]; finite empty: the phase stopped
  std::int64_t steps_planned = 0;                      // 0: a file from before the attribute
  std::string model, engine, mlp;
  std::string communication = "mpi";  // absent in files before the device-resident step
  std::int64_t layers = 0, hidden = 0, tp_size = 1, dp_size = 1, zero = 0;
  bool overlap = true, sp = false;
  double rank_flop = 0, memory_bytes = 0, memory_device_bytes = 0;
  std::string memory_device;
  std::int64_t tokens = 0;

  double at(const std::vector<double>& v, std::size_t s, std::size_t r) const {
    return v[s * world + r];
  }
  // One rank's values over the steps.
  std::vector<double> column(const std::vector<double>& v, std::size_t r) const {
    std::vector<double> out(steps);
    for (std::size_t s = 0; s < steps; ++s) out[s] = at(v, s, r);
    return out;
  }
};

TrainData read_train(const RunFile& f) {
  TrainData d;
  const std::string g = schema::kTrainGroup;
  std::vector<std::uint64_t> dims;
  d.step = f.read(g, t::kStepMs, &dims);
  if (dims.size() != 2 || dims[1] == 0) {
    throw RuntimeFault("/train/step_ms: not [steps, world] (a damaged file)");
  }
  d.steps = dims[0];
  d.world = dims[1];
  d.fwd = f.read(g, t::kFwdMs);
  d.bwd = f.read(g, t::kBwdMs);
  d.tp = f.read(g, t::kTpCommMs);
  d.exposed = f.read(g, t::kDpExposedMs);
  d.span = f.read(g, t::kDpSpanMs);
  d.optim = f.read(g, t::kOptimMs);
  d.arrival = f.read(g, t::kDpArrivalUs);
  d.zero_share = f.read(g, t::kZeroGradShare);
  d.hash = f.read(g, t::kParamHash);
  d.tp_rank = f.read(g, t::kTpRank);
  d.dp_rank = f.read(g, t::kDpRank);
  // Written when the phase ends: a run stopped mid-phase has its steps but not this.
  if (f.has(g, t::kScalesFinite)) d.finite = f.read(g, t::kScalesFinite);
  if (f.has_attr(g, t::kAttrStepsPlanned)) d.steps_planned = f.attr_int64(g, t::kAttrStepsPlanned);
  d.buckets = f.read(g, t::kBucketBytes).size();
  for (const auto* v :
       {&d.fwd, &d.bwd, &d.tp, &d.exposed, &d.span, &d.optim, &d.arrival, &d.zero_share}) {
    if (v->size() != d.steps * d.world) {
      throw RuntimeFault("/train: datasets of different shapes (a damaged file)");
    }
  }
  if (d.hash.size() != d.steps * d.world || d.tp_rank.size() != d.world ||
      d.dp_rank.size() != d.world || (!d.finite.empty() && d.finite.size() != d.world)) {
    throw RuntimeFault("/train: datasets of different shapes (a damaged file)");
  }
  d.model = f.attr_string(g, t::kAttrModel);
  d.engine = f.attr_string(g, t::kAttrEngine);
  if (f.has_attr(g, t::kAttrCommunication))
    d.communication = f.attr_string(g, t::kAttrCommunication);
  d.mlp = f.attr_string(g, t::kAttrMlp);
  d.layers = f.attr_int64(g, t::kAttrLayers);
  d.hidden = f.attr_int64(g, t::kAttrHidden);
  d.tp_size = f.attr_int64(g, t::kAttrTp);
  d.dp_size = f.attr_int64(g, t::kAttrDp);
  d.zero = f.attr_int64(g, t::kAttrZero);
  d.overlap = f.attr_int64(g, t::kAttrOverlap) != 0;
  d.sp = f.attr_int64(g, t::kAttrSequenceParallel) != 0;
  d.rank_flop = f.attr_double(g, t::kAttrRankFlop);
  d.tokens = f.attr_int64(g, t::kAttrTokensPerStep);
  d.memory_bytes = f.attr_double(g, t::kAttrMemoryBytes);
  d.memory_device_bytes = f.attr_double(g, t::kAttrMemoryDeviceBytes);
  d.memory_device = f.attr_string(g, t::kAttrMemoryDevice);
  return d;
}

std::string ms_text(double ms) {
  if (std::isnan(ms)) return "-";
  return fixed_text(ms, std::fabs(ms) >= 100 ? 0 : (std::fabs(ms) >= 1 ? 1 : 3)) + " ms";
}

// The ranks of each TP group, keyed by the group's index: the phase numbers a DP group by TP
// group, so the ranks of one TP group share their dp_rank (whatever the rank numbering across
// nodes). The ranks of one DP group share a tp_rank.
std::map<std::int64_t, std::vector<int>> tp_groups(const TrainData& d) {
  std::map<std::int64_t, std::vector<int>> groups;
  for (std::size_t r = 0; r < d.world; ++r) groups[d.dp_rank[r]].push_back(static_cast<int>(r));
  return groups;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::vector<std::string> names;
  for (int r : ranks) names.push_back(std::to_string(r));
  return (ranks.size() == 1 ? "rank " : "ranks ") + join(names, ",");
}

// "from measured step 3 on", "in measured step 3", "in measured steps 3-5" (0-based in).
std::string steps_text(std::size_t first, std::size_t last, std::size_t steps) {
  const std::string a = std::to_string(first + 1), b = std::to_string(last + 1);
  if (last + 1 == steps && first < last) return "from measured step " + a + " on";
  return first == last ? "in measured step " + a : "in measured steps " + a + "-" + b;
}

// train.replicas: per DP group and step, the majority hash; ranks off it from some step on.
std::vector<Finding> replica_checks(const TrainData& d, const RunFacts& facts) {
  std::vector<Finding> out;
  std::map<std::int64_t, std::vector<int>> dp_groups;  // tp_rank -> its replicas
  for (std::size_t r = 0; r < d.world; ++r) dp_groups[d.tp_rank[r]].push_back(static_cast<int>(r));
  std::size_t compared = 0;
  for (const auto& [tp_index, members] : dp_groups) {
    if (members.size() < 2) continue;
    ++compared;
    // suspect -> the first and last step it was off the majority
    std::map<int, std::pair<std::size_t, std::size_t>> off;
    std::size_t undetermined_first = d.steps, undetermined_last = 0;
    for (std::size_t s = 0; s < d.steps; ++s) {
      std::map<std::uint64_t, std::size_t> count;
      for (int r : members) ++count[d.hash[s * d.world + static_cast<std::size_t>(r)]];
      if (count.size() <= 1) continue;
      const auto best = std::max_element(count.begin(), count.end(),
                                         [](auto& a, auto& b) { return a.second < b.second; });
      if (2 * best->second <= members.size()) {
        undetermined_first = std::min(undetermined_first, s);
        undetermined_last = s;
        continue;
      }
      for (int r : members) {
        if (d.hash[s * d.world + static_cast<std::size_t>(r)] != best->first) {
          auto [it, fresh] = off.emplace(r, std::pair{s, s});
          if (!fresh) it->second.second = s;
        }
      }
    }
    for (const auto& [r, span] : off) {
      Finding f = rank_finding(facts, "train.replicas", CheckStatus::kFail, r);
      f.corruption = 1;
      f.message = facts.rank_name(r) + ": its parameters differ from the majority of its " +
                  std::to_string(members.size()) + " data-parallel replicas (" +
                  rank_list(members) + ") " + steps_text(span.first, span.second, d.steps) +
                  ": silent data corruption or a desynchronised replica suspected";
      const std::size_t s = span.first;
      f.evidence = "xxh3 of the fp32 master weights after each step";
      f.value = static_cast<double>(s + 1);
      f.unit = "first differing step";
      out.push_back(f);
    }
    if (undetermined_first < d.steps) {
      Finding f = run_finding(
          "train.replicas", CheckStatus::kFail,
          "the parameters of the data-parallel replicas " + rank_list(members) + " differ " +
              steps_text(undetermined_first, undetermined_last, d.steps) +
              " and no majority says which is wrong: silent data corruption or a "
              "desynchronised replica on at least one of them (with dp >= 3 the odd one out is "
              "named)");
      f.subject_kind = "ranks";
      f.subject = rank_list(members);
      f.corruption = 1;
      out.push_back(f);
    }
  }
  if (!out.empty()) return out;
  if (compared == 0) {
    out.push_back(run_finding("train.replicas", CheckStatus::kWarn,
                              "dp = 1: no data-parallel replica to compare parameters with (run "
                              "more ranks, or a smaller train.tp)"));
  } else {
    out.push_back(run_finding("train.replicas", CheckStatus::kPass,
                              "every rank's parameters equal its replicas' after each of " +
                                  std::to_string(d.steps) + " step(s), in " +
                                  std::to_string(compared) + " data-parallel group(s) of " +
                                  std::to_string(d.dp_size)));
  }
  return out;
}

// train.numerics: scales finite, gradients not wiped out.
std::vector<Finding> numeric_checks(const TrainData& d, const RunFacts& facts) {
  std::vector<Finding> out;
  for (std::size_t r = 0; r < d.world; ++r) {
    const int rank = static_cast<int>(r);
    double worst = 0;
    for (std::size_t s = 0; s < d.steps; ++s) {
      const double z = d.at(d.zero_share, s, r);
      worst = std::isnan(z) || std::isnan(worst) ? z + worst : std::max(worst, z);
    }
    if (!d.finite.empty() && d.finite[r] == 0) {
      Finding f = rank_finding(facts, "train.numerics", CheckStatus::kFail, rank);
      f.message = facts.rank_name(rank) +
                  ": an FP8 scale or amax history entry is not finite (or not > 0) after the "
                  "last step: the scaling recipe broke down";
      out.push_back(f);
    } else if (!(worst <= kMaxZeroGradShare)) {
      Finding f = rank_finding(facts, "train.numerics", CheckStatus::kFail, rank);
      f.message = std::isnan(worst)
                      ? facts.rank_name(rank) +
                            ": its share of zero gradients is missing (NaN) in some step: not "
                            "recorded, so gradient underflow cannot be ruled out"
                      : facts.rank_name(rank) + ": " + fixed_text(100 * worst, 1) +
                            "% of its gradients are exactly 0 in some step: FP8 underflow "
                            "wiped out layers (scales, margin or the input range)";
      f.value = worst;
      f.expected = kMaxZeroGradShare;
      f.unit = "fraction zero";
      out.push_back(f);
    }
  }
  if (out.empty() && d.finite.empty()) {
    // The phase stopped before its end: the scales were never read back.
    out.push_back(run_finding("train.numerics", CheckStatus::kWarn,
                              "FP8 scales not checked (the phase did not finish); under " +
                                  fixed_text(100 * kMaxZeroGradShare, 0) +
                                  "% of gradients exactly 0 in every recorded step"));
  } else if (out.empty()) {
    out.push_back(run_finding("train.numerics", CheckStatus::kPass,
                              "FP8 scales and amax histories finite on every rank; under " +
                                  fixed_text(100 * kMaxZeroGradShare, 0) +
                                  "% of gradients exactly 0 in every step"));
  }
  return out;
}

// "the last to arrive was most often rank 3 on node-b (7/10 steps, median 12.0 ms after the
// first)": who the others waited for at the DP reduction.
std::string last_arrival_text(const TrainSummary& s, const RunFacts& facts) {
  return "the last to arrive was most often " + facts.rank_name(s.waited_for_rank) + " (" +
         std::to_string(s.waited_for_steps) + "/" + std::to_string(s.steps) + " steps, median " +
         ms_text(s.waited_for_ms) + " after the first)";
}

}  // namespace

TrainFindings train_findings(const RunFile& file, const RunFacts& facts, const GemmFindings& gemm) {
  TrainFindings out;
  if (!facts.asked_for("train") && !file.has(schema::kTrainGroup)) return out;
  if (file.has(schema::kTrainGroup) && !file.has(schema::kTrainGroup, t::kStepMs) &&
      file.has_attr(schema::kTrainGroup, t::kAttrStepsPlanned)) {
    // The phase began (its header is written before the first step) and stopped before a step
    // completed.
    Finding cov =
        run_finding("train.coverage", CheckStatus::kFail,
                    "nothing measured: no training step was recorded of the " +
                        std::to_string(file.attr_int64(schema::kTrainGroup, t::kAttrStepsPlanned)) +
                        " planned (the phase did not finish)");
    cov.value = 0;
    cov.unit = "steps";
    out.findings.push_back(cov);
    return out;
  }
  if (!file.has(schema::kTrainGroup) || !file.has(schema::kTrainGroup, t::kStepMs)) {
    out.findings.push_back(not_recorded(facts, "train"));
    return out;
  }
  TrainData d;
  try {
    d = read_train(file);
    if (!facts.ranks.empty() && facts.ranks.size() != d.world) {
      throw RuntimeFault("/train holds " + std::to_string(d.world) + " ranks, the run " +
                         std::to_string(facts.ranks.size()) + " (a damaged file)");
    }
  } catch (const std::exception& e) {
    Finding f = run_finding("train.coverage", CheckStatus::kFail,
                            std::string("/train unreadable: ") + e.what());
    out.findings.push_back(f);
    return out;
  }
  out.ran = true;
  TrainSummary& sum = out.summary;
  sum.steps = d.steps;
  sum.engine = d.engine;
  sum.world = d.world;
  sum.overlap = d.overlap;
  sum.dp = static_cast<int>(d.dp_size);
  sum.tp = static_cast<int>(d.tp_size);
  sum.layout = d.model + " " + std::to_string(d.layers) + " layer(s) h" + std::to_string(d.hidden) +
               " " + d.mlp + ", tp " + std::to_string(d.tp_size) + " x dp " +
               std::to_string(d.dp_size) + ", zero " + std::to_string(d.zero) +
               (d.sp ? ", sequence parallel" : "") +
               (d.overlap ? ", DP overlapped" : ", DP after backward") + "; engine " + d.engine +
               (d.communication == "nccl" ? " with NCCL, device-resident" : "");

  Finding cov = run_finding("train.coverage", CheckStatus::kPass,
                            std::to_string(d.steps) + " training step(s) measured on " +
                                std::to_string(d.world) + " ranks (" + sum.layout + ")");
  cov.value = static_cast<double>(d.steps);
  cov.unit = "steps";
  if (d.steps == 0) {
    cov.status = CheckStatus::kFail;
    cov.message = "nothing measured: no training step was recorded";
  } else if (d.steps_planned > static_cast<std::int64_t>(d.steps)) {
    // What was measured is judged below; the run's own status says why it stopped.
    cov.status = CheckStatus::kFail;
    cov.message = std::to_string(d.steps) + " of " + std::to_string(d.steps_planned) +
                  " training step(s) recorded on " + std::to_string(d.world) +
                  " ranks: the phase did not finish (" + sum.layout + ")";
  } else if (d.engine == "cublaslt" && d.communication != "nccl") {
    // Files of earlier versions, whose GPU step staged every GEMM's operands through the host.
    cov.status = CheckStatus::kWarn;
    cov.message +=
        "; its GEMMs ran on the GPUs (cuBLASLt) with operands staged through host memory, and "
        "TP/DP communication over MPI on host buffers: the step's time is not a Transformer "
        "Engine job's (a file of an earlier version; this one runs the step device-resident "
        "with NCCL)";
  } else if (d.engine == "cpu" && !facts.node_gpu_names.empty() &&
             std::any_of(facts.node_gpu_names.begin(), facts.node_gpu_names.end(),
                         [](const std::string& n) { return !n.empty(); })) {
    cov.status = CheckStatus::kWarn;
    cov.message +=
        "; the nodes have GPUs but the step ran on the CPU engine (train.engine: cublaslt runs "
        "the step on them, with NCCL): its times say nothing about the GPUs";
  }
  out.findings.push_back(cov);
  if (d.steps == 0) return out;

  // ---- the summary ----
  std::vector<double> step_time(d.steps);  // a step lasts until its slowest rank is done
  for (std::size_t s = 0; s < d.steps; ++s) {
    double m = 0;
    for (std::size_t r = 0; r < d.world; ++r) m = std::max(m, d.at(d.step, s, r));
    step_time[s] = m;
  }
  sum.step_med_ms = median(step_time);
  sum.step_p95_ms = percentile(step_time, 0.95);
  sum.fwd_ms = median(d.fwd);
  sum.bwd_ms = median(d.bwd);
  sum.tp_comm_ms = median(d.tp);
  sum.dp_exposed_ms = median(d.exposed);
  sum.dp_span_ms = median(d.span);
  sum.optim_ms = median(d.optim);
  double exposed = 0, span = 0;
  std::vector<double> other;
  for (std::size_t i = 0; i < d.exposed.size(); ++i) {
    exposed += d.exposed[i];
    span += std::max(d.span[i], d.exposed[i]);
    other.push_back(d.step[i] - (d.fwd[i] + d.bwd[i] + d.tp[i] + d.exposed[i] + d.optim[i]));
  }
  sum.overlap_efficiency = span > 0 ? 1 - exposed / span : 0;
  if (!d.exposed.empty()) {
    sum.dp_exposed_mean_ms = exposed / static_cast<double>(d.exposed.size());
    sum.dp_span_mean_ms = span / static_cast<double>(d.exposed.size());
  }
  sum.other_ms = median(other);
  sum.tokens_per_s = static_cast<double>(d.tokens) / (sum.step_med_ms * 1e-3);
  std::vector<double> rank_tflops, compute(d.steps * d.world);
  for (std::size_t i = 0; i < compute.size(); ++i) compute[i] = d.fwd[i] + d.bwd[i];
  for (std::size_t r = 0; r < d.world; ++r) {
    rank_tflops.push_back(d.rank_flop / (median(d.column(d.step, r)) * 1e-3) / 1e12);
    const double c = median(d.column(compute, r));
    if (sum.slowest_rank < 0 || c > sum.slowest_compute_ms) {
      sum.slowest_rank = static_cast<int>(r);
      sum.slowest_compute_ms = c;
    }
  }
  sum.rank_tflops = median(rank_tflops);
  std::map<int, int> last_count;
  for (std::size_t s = 0; s < d.steps; ++s) {
    std::size_t last = 0;
    for (std::size_t r = 1; r < d.world; ++r) {
      if (d.at(d.arrival, s, r) > d.at(d.arrival, s, last)) last = r;
    }
    ++last_count[static_cast<int>(last)];
  }
  for (const auto& [r, n] : last_count) {
    if (n > sum.waited_for_steps) {
      sum.waited_for_rank = r;
      sum.waited_for_steps = n;
    }
  }
  sum.waited_for_ms =
      median(d.column(d.arrival, static_cast<std::size_t>(sum.waited_for_rank))) * 1e-3;
  // MFU: against the platform's FP8 figure when the step ran on its GPUs; else the gemm phase's
  // best measured shape on the same engine (the most this machine did on one GEMM).
  const Platform* platform =
      facts.platform && facts.sanitizers.empty() ? &*facts.platform : nullptr;
  if (platform != nullptr && platform->fp8_tflops > 0 && d.engine != "cpu") {
    sum.peak_tflops = platform->fp8_tflops;
    sum.peak_source = platform->name + "'s FP8 figure";
  } else if (gemm.ran && gemm.engine == d.engine) {
    for (const GemmShapeRow& row : gemm.rows) {
      if (row.measured && row.median_tflops > sum.peak_tflops) {
        sum.peak_tflops = row.median_tflops;
        sum.peak_source = "the gemm phase's best shape (" + row.name + ")";
      }
    }
  }
  sum.mfu = sum.peak_tflops > 0 ? sum.rank_tflops / sum.peak_tflops
                                : std::numeric_limits<double>::quiet_NaN();
  sum.gpu_hour_usd = facts.config.cost.gpu_hour_usd;
  if (sum.gpu_hour_usd > 0) {
    sum.usd_per_step =
        sum.gpu_hour_usd * static_cast<double>(d.world) * sum.step_med_ms * 1e-3 / 3600;
    sum.usd_per_million_tokens = sum.usd_per_step / static_cast<double>(d.tokens) * 1e6;
  }
  sum.memory_gib = d.memory_bytes / double(1ull << 30);

  // ---- checks ----
  for (auto&& part : {replica_checks(d, facts), numeric_checks(d, facts)}) {
    out.findings.insert(out.findings.end(), part.begin(), part.end());
  }

  // Stragglers from each step's compute, forward + backward as one case (TP waits excluded).
  // Not two cases: a rank must then be slow in both, and the backward of the others carries
  // their DP buckets' progress (and, on shared cores, the CPU the slow rank's waits free), so a
  // rank at twice the others' forward went unnamed at tp 1.
  const StragglerLimits limits = facts.straggler_limits();
  const std::vector<StragglerCase> compute_cases = {
      {"forward + backward", compute, d.steps, d.world, 0}};
  const std::string compute_unjudged =
      cannot_judge(1, d.steps, d.world, "ranks", limits.alpha, "train.steps");
  const std::size_t first_straggler = out.findings.size();
  const Stragglers found =
      compute_unjudged.empty() ? find_stragglers(compute_cases, limits) : Stragglers{};
  const std::vector<StragglerEvidence>& slow = found.named;
  std::vector<int> slow_ranks;
  for (const StragglerEvidence& e : slow) {
    slow_ranks.push_back(e.rank);
    Finding f = rank_finding(facts, "train.stragglers", straggler_status(facts, e.excess), e.rank);
    f.message = facts.rank_name(e.rank) + ": its compute is " + fixed_text(100 * e.excess, 0) +
                "% slower than the other ranks' (forward + backward, over " +
                std::to_string(d.steps) + " steps), " + p_text(e.p) + "; every step waits for it";
    f.value = e.excess;
    f.expected = facts.straggler_slowdown();
    f.unit = "fraction slower";
    f.evidence = std::to_string(d.steps) +
                 " steps, each step's forward + backward compute (TP waits excluded), one-sided "
                 "Mann-Whitney vs the other ranks, Bonferroni-corrected p " +
                 general_text(e.p, 2);
    out.findings.push_back(f);
  }
  if (!compute_unjudged.empty()) {
    out.findings.push_back(run_finding("train.stragglers", CheckStatus::kSkip,
                                       "compute stragglers: " + compute_unjudged));
  } else if (!found.together.empty()) {
    add_slower_together(out.findings, first_straggler,
                        slower_together_finding("train.stragglers", found.together, nullptr,
                                                "have compute slower than the others'"));
  } else if (slow.empty()) {
    out.findings.push_back(run_finding(
        "train.stragglers", CheckStatus::kPass,
        "no rank's compute consistently slower: none at least " +
            fixed_text(100 * facts.straggler_slowdown(), 0) +
            "% slower than the others in forward + backward, beyond their spread and with p < "
            "0.01, over " +
            std::to_string(d.steps) + " step(s)" +
            (facts.oversubscribed ? " (judged against the spread of ranks sharing cores)" : "") +
            few_samples_note(1, d.steps, d.world, limits.alpha, "train.steps")));
  }

  // Late arrival at the DP reduction, per TP group (its ranks finish backward together: they
  // meet in the TP collectives), judged by the group's earliest member.
  const auto groups = tp_groups(d);
  const std::string late_unjudged = cannot_judge(
      1, d.steps, groups.size(), "TP group(s) at the DP reduction", limits.alpha, "train.steps");
  const bool culprit_waited_for =
      std::find(slow_ranks.begin(), slow_ranks.end(), sum.waited_for_rank) != slow_ranks.end() &&
      2 * sum.waited_for_steps >= static_cast<int>(d.steps);
  // Not found late beyond the others' spread (or not judgeable), but the rank the others waited
  // for is the compute straggler: said, rather than passed.
  auto waited_for_culprit = [&] {
    Finding f = rank_finding(facts, "train.dp_arrival", CheckStatus::kWarn, sum.waited_for_rank);
    f.message = last_arrival_text(sum, facts) +
                " at the DP reduction: its slow compute (train.stragglers) holds the others back";
    f.value = sum.waited_for_ms;
    f.unit = "ms late";
    f.evidence = std::to_string(d.steps) + " steps on aligned clocks";
    return f;
  };
  if (late_unjudged.empty()) {
    std::vector<double> group_arrival(d.steps * groups.size());
    std::vector<std::vector<int>> members;
    for (const auto& [leader, ranks] : groups) members.push_back(ranks);
    for (std::size_t s = 0; s < d.steps; ++s) {
      for (std::size_t g = 0; g < members.size(); ++g) {
        double a = std::numeric_limits<double>::infinity();
        for (int r : members[g]) a = std::min(a, d.at(d.arrival, s, static_cast<std::size_t>(r)));
        group_arrival[s * members.size() + g] = a;
      }
    }
    // Lateness is measured against the step's duration, as collectives.lateness does.
    const StragglerCase late_case{"DP arrival", group_arrival, d.steps, members.size(),
                                  sum.step_med_ms * 1e3};
    const Stragglers late_found = find_stragglers({late_case}, limits);
    const std::size_t first_late = out.findings.size();
    const std::vector<StragglerEvidence>& late = late_found.named;
    for (const StragglerEvidence& e : late) {
      const std::vector<int>& ranks = members[static_cast<std::size_t>(e.rank)];
      std::vector<double> lead;
      for (std::size_t s = 0; s < d.steps; ++s) {
        lead.push_back(group_arrival[s * members.size() + static_cast<std::size_t>(e.rank)]);
      }
      const double late_ms = median(lead) * 1e-3;
      int culprit = -1;
      for (int r : ranks) {
        if (std::find(slow_ranks.begin(), slow_ranks.end(), r) != slow_ranks.end()) culprit = r;
      }
      Finding f;
      if (culprit >= 0) {
        f = rank_finding(facts, "train.dp_arrival", CheckStatus::kWarn, culprit);
        f.message = rank_list(ranks) + (ranks.size() > 1 ? " reach" : " reaches") +
                    " the DP reduction " + ms_text(late_ms) +
                    " after the earliest per step (median): the slow compute of " +
                    facts.rank_name(culprit) + " (train.stragglers) holds back" +
                    (ranks.size() > 1 ? " its TP group" : " its replica") +
                    ", and every replica waits for it";
      } else {
        f = run_finding("train.dp_arrival", CheckStatus::kWarn,
                        rank_list(ranks) + (ranks.size() > 1 ? " reach" : " reaches") +
                            " the DP reduction " + ms_text(late_ms) +
                            " after the others per step (median), and train.stragglers named "
                            "no compute among them as slow: " +
                            (ranks.size() > 1 ? "TP communication, " : "") +
                            "CPU contention or work outside the timed compute holds " +
                            (ranks.size() > 1 ? "them" : "it") + " back");
        f.subject_kind = "ranks";
        f.subject = rank_list(ranks);
      }
      f.value = late_ms;
      f.unit = "ms late";
      f.evidence = std::to_string(d.steps) + " steps on aligned clocks, " + p_text(e.p);
      out.findings.push_back(f);
    }
    if (late.empty() && culprit_waited_for) out.findings.push_back(waited_for_culprit());
    if (!late_found.together.empty()) {
      add_slower_together(
          out.findings, first_late,
          slower_together_finding(
              "train.dp_arrival", late_found.together,
              [&](int g) { return "TP group " + rank_list(members[static_cast<std::size_t>(g)]); },
              "reach the DP reduction later than the others"));
    } else if (late.empty() && !culprit_waited_for) {
      out.findings.push_back(run_finding(
          "train.dp_arrival", CheckStatus::kPass,
          "no TP group consistently late at the DP reduction (" + std::to_string(members.size()) +
              " groups, " + std::to_string(d.steps) + " steps); " + last_arrival_text(sum, facts)));
    }
  } else if (groups.size() >= 2 && culprit_waited_for) {
    out.findings.push_back(waited_for_culprit());
  } else if (groups.size() < 2) {
    out.findings.push_back(run_finding("train.dp_arrival", CheckStatus::kSkip,
                                       "one TP group (dp 1): nobody waits for anybody at the DP "
                                       "reduction"));
  } else {
    out.findings.push_back(run_finding("train.dp_arrival", CheckStatus::kSkip,
                                       late_unjudged + "; " + last_arrival_text(sum, facts)));
  }

  // MFU: judged only where the platform's figure applies (the step on its GPUs).
  Finding mfu = run_finding("train.mfu", CheckStatus::kSkip, "");
  mfu.value = sum.mfu;
  mfu.unit = "fraction of peak";
  const std::string achieved = general_text(sum.rank_tflops, 3) + " TFLOP/s per rank";
  // No platform gives an MFU figure yet (nor the step's GPU path): reported, not judged.
  if (sum.peak_tflops > 0) {
    mfu.message = achieved + " = " + fixed_text(100 * sum.mfu, 1) + "% of " + sum.peak_source +
                  "; not judged: no platform gives a training MFU figure";
  } else {
    std::string why;
    if (!gemm.ran) {
      why = "no gemm phase in this run to measure one (add gemm to phases)";
    } else if (gemm.engine != d.engine) {
      why = "the gemm phase ran on the " + gemm.engine + " engine, the step on " + d.engine;
    } else {
      why = "the gemm phase measured no shape";
    }
    mfu.message = achieved + "; no peak to compare with: " +
                  (d.engine == "cpu" ? "no platform figure for the cpu engine, and " : "") + why;
  }
  out.findings.push_back(mfu);

  // The memory budget against rank 0's GPU.
  Finding mem = run_finding("train.memory", CheckStatus::kSkip, "");
  mem.value = d.memory_bytes / double(1ull << 30);
  mem.unit = "GiB";
  const std::string need = "this config needs " + fixed_text(mem.value, 2) + " GiB per GPU";
  if (d.memory_device_bytes > 0) {
    mem.expected = d.memory_device_bytes / double(1ull << 30);
    const bool fits = d.memory_bytes <= d.memory_device_bytes;
    mem.status = fits ? CheckStatus::kPass : CheckStatus::kWarn;
    mem.message = need + (fits ? " and fits " : " and does NOT fit ") + d.memory_device + "'s " +
                  fixed_text(mem.expected, 2) + " GiB" +
                  (fits ? "" : " (shakedown plan shows the budget and what would fit)");
  } else {
    mem.message = need + "; rank 0 has no GPU to hold it to (shakedown plan --gpu compares it)";
  }
  out.findings.push_back(mem);
  return out;
}

std::string train_title(const TrainFindings& tf) {
  return "train (" + tf.summary.layout + "; " + std::to_string(tf.summary.steps) + " steps)";
}

std::string format_train(const TrainFindings& tf, const RunFacts& facts, bool explain) {
  if (!tf.ran) return "";
  const TrainSummary& s = tf.summary;
  std::ostringstream os;
  if (explain) {
    os << "  step: until the slowest rank is done; the breakdown is the median over every rank's "
          "steps (each part its own median, so they need not add up; other: the median of what "
          "no part holds); compute excludes TP waits; exposed = blocked on DP after backward\n";
  }
  os << "  step " << ms_text(s.step_med_ms) << " median, " << ms_text(s.step_p95_ms) << " p95; fwd "
     << ms_text(s.fwd_ms) << ", bwd " << ms_text(s.bwd_ms) << ", TP comm "
     << (s.tp > 1 ? ms_text(s.tp_comm_ms) : std::string("- (tp 1)")) << ", DP exposed "
     << (s.dp > 1 ? ms_text(s.dp_exposed_ms) : std::string("- (dp 1)")) << ", optimizer "
     << ms_text(s.optim_ms) << ", other " << ms_text(s.other_ms) << '\n';
  os << "  " << general_text(s.tokens_per_s, 4) << " tokens/s, " << general_text(s.rank_tflops, 3)
     << " TFLOP/s per rank";
  if (s.peak_tflops > 0) {
    os << " (MFU " << fixed_text(100 * s.mfu, 1) << "% of " << s.peak_source << ")";
  }
  os << "; DP overlap efficiency ";
  if (s.dp == 1) {
    os << "- (dp 1: no gradient reduction between replicas)\n";
  } else if (s.overlap) {
    os << fixed_text(100 * s.overlap_efficiency, 0) << "% (exposed "
       << ms_text(s.dp_exposed_mean_ms) << " of " << ms_text(s.dp_span_mean_ms)
       << " DP communication, mean per rank and step)\n";
  } else {
    os << "0% (overlap off: one reduction after backward, " << ms_text(s.dp_span_ms) << ")\n";
  }
  os << "  slowest compute: " << facts.rank_name(s.slowest_rank) << " "
     << ms_text(s.slowest_compute_ms);
  if (s.dp > 1) os << "; at the DP reduction " << last_arrival_text(s, facts);
  os << '\n';
  if (s.gpu_hour_usd > 0) {
    os << "  cost: $" << general_text(s.usd_per_step, 3) << " per step, $"
       << general_text(s.usd_per_million_tokens, 3) << " per million tokens (" << s.world
       << (s.engine == "cpu" ? " ranks" : " GPUs") << " at $" << general_text(s.gpu_hour_usd, 4)
       << "/GPU-hour" << (s.engine == "cpu" ? ", priced as GPUs: this run used none" : "") << ")\n";
  }
  return os.str();
}

}  // namespace shakedown
