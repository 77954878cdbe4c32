#include "analysis/checkpoint_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "analysis/checks.hpp"
#include "analysis/number_text.hpp"
#include "analysis/stragglers.hpp"
#include "config/load.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"

namespace shakedown {

namespace {

namespace c = schema::checkpoint;

// /checkpoint as recorded.
struct CkptData {
  std::size_t iters = 0, world = 0;
  std::vector<std::int64_t> bytes, source;  // [W]
  std::vector<double> open, write, fsync, close, read, write_start, write_end, read_start,
      read_end;                                        // [I, W]
  std::vector<std::int64_t> verify, bad, dropped;      // [I, W]
  std::vector<double> write_gbps, read_gbps, restore;  // [I]
  std::string layout, api, dir, fs_type, fs_mount, kept;
  bool async = false;
  std::vector<double> snapshot, step_before, step_during;  // [I, W], async only
  std::vector<std::int64_t> steps_during;
  bool node_local = false, direct = false, fsync_on = true;
  std::int64_t block = 0;

  std::size_t at(std::size_t i, std::size_t r) const { return i * world + r; }
  std::vector<double> column(const std::vector<double>& v, std::size_t r) const {
    std::vector<double> out;
    for (std::size_t i = 0; i < iters; ++i) out.push_back(v[at(i, r)]);
    return out;
  }
};

CkptData read_checkpoint(const RunFile& f) {
  CkptData d;
  const std::string g = schema::kCheckpointGroup;
  std::vector<std::uint64_t> dims;
  d.write = f.read(g, c::kWriteS, &dims);
  if (dims.size() != 2 || dims[1] == 0) {
    throw RuntimeFault("/checkpoint/write_s: not [iters, world] (a damaged file)");
  }
  d.iters = dims[0];
  d.world = dims[1];
  d.bytes = f.read(g, c::kBytes);
  d.source = f.read(g, c::kReadsShardOf);
  d.open = f.read(g, c::kOpenS);
  d.fsync = f.read(g, c::kFsyncS);
  d.close = f.read(g, c::kCloseS);
  d.read = f.read(g, c::kReadS);
  d.write_start = f.read(g, c::kWriteStartS);
  d.write_end = f.read(g, c::kWriteEndS);
  d.read_start = f.read(g, c::kReadStartS);
  d.read_end = f.read(g, c::kReadEndS);
  d.verify = f.read(g, c::kVerifyOk);
  d.bad = f.read(g, c::kBadOffset);
  d.dropped = f.read(g, c::kCacheDropped);
  d.write_gbps = f.read(g, c::kWriteGBps);
  d.read_gbps = f.read(g, c::kReadGBps);
  d.restore = f.read(g, c::kRestoreS);
  const std::size_t n = d.iters * d.world;
  for (const auto* v : {&d.open, &d.fsync, &d.close, &d.read, &d.write_start, &d.write_end,
                        &d.read_start, &d.read_end}) {
    if (v->size() != n) throw RuntimeFault("/checkpoint: datasets of different shapes");
  }
  for (const auto* v : {&d.verify, &d.bad, &d.dropped}) {
    if (v->size() != n) throw RuntimeFault("/checkpoint: datasets of different shapes");
  }
  if (d.bytes.size() != d.world || d.source.size() != d.world || d.write_gbps.size() != d.iters ||
      d.read_gbps.size() != d.iters || d.restore.size() != d.iters) {
    throw RuntimeFault("/checkpoint: datasets of different shapes");
  }
  for (std::int64_t s : d.source) {
    if (s < 0 || static_cast<std::size_t>(s) >= d.world) {
      throw RuntimeFault("/checkpoint/reads_shard_of: rank " + std::to_string(s) + " out of range");
    }
  }
  if (f.has(g, c::kSnapshotS)) {
    d.async = true;
    d.snapshot = f.read(g, c::kSnapshotS);
    d.step_before = f.read(g, c::kStepMsBefore);
    d.step_during = f.read(g, c::kStepMsDuring);
    d.steps_during = f.read(g, c::kStepsDuring);
    if (d.snapshot.size() != n || d.step_before.size() != n || d.step_during.size() != n ||
        d.steps_during.size() != n) {
      throw RuntimeFault("/checkpoint: async datasets of different shapes");
    }
  }
  d.layout = f.attr_string(g, c::kAttrLayout);
  d.api = f.attr_string(g, c::kAttrApi);
  d.dir = f.attr_string(g, c::kAttrDir);
  d.fs_type = f.attr_string(g, c::kAttrFsType);
  d.fs_mount = f.attr_string(g, c::kAttrFsMount);
  d.kept = f.attr_string(g, c::kAttrKept);
  d.node_local = f.attr_int64(g, c::kAttrFsNodeLocal) != 0;
  d.direct = f.attr_int64(g, c::kAttrDirectIo) != 0;
  d.fsync_on = f.attr_int64(g, c::kAttrFsync) != 0;
  d.block = f.attr_int64(g, c::kAttrBlockSize);
  return d;
}

std::string s_text(double s) {
  if (std::isnan(s)) return "-";
  if (s < 1) return fixed_text(s * 1e3, s < 0.01 ? 2 : 1) + " ms";
  return fixed_text(s, s < 100 ? 2 : 0) + " s";
}

std::string bytes_text(double bytes) {
  return format_size(static_cast<std::uint64_t>(std::max(0.0, bytes)));
}

// "step_2/rank_3.shard" or "step_2/shared.bin, rank 3's range".
std::string shard_text(const CkptData& d, std::size_t iter, std::int64_t writer) {
  const std::string step = "step_" + std::to_string(iter + 1) + "/";
  return d.layout == "shared_file"
             ? step + "shared.bin (rank " + std::to_string(writer) + "'s range)"
             : step + "rank_" + std::to_string(writer) + ".shard";
}

std::vector<Finding> verify_checks(const CkptData& d, const RunFacts& facts) {
  std::vector<Finding> out;
  std::size_t verified = 0, unverified = 0;
  double verified_bytes = 0;
  for (std::size_t i = 0; i < d.iters; ++i) {
    for (std::size_t r = 0; r < d.world; ++r) {
      const std::int64_t v = d.verify[d.at(i, r)];
      if (v < 0) {
        ++unverified;
        continue;
      }
      ++verified;
      verified_bytes += static_cast<double>(d.bytes[static_cast<std::size_t>(d.source[r])]);
      if (v == 1) continue;
      const std::int64_t writer = d.source[r];
      Finding f =
          rank_finding(facts, "checkpoint.verify", CheckStatus::kFail, static_cast<int>(writer));
      f.corruption = 1;
      // In a shared file the byte is counted from the writer's range; its place in the file
      // (where dd or xxd would look) is the ranges before it further on.
      std::string in_file;
      if (d.layout == "shared_file") {
        std::int64_t start = 0;
        for (std::int64_t k = 0; k < writer; ++k) start += d.bytes[static_cast<std::size_t>(k)];
        in_file =
            " of its range (byte " + std::to_string(start + d.bad[d.at(i, r)]) + " of shared.bin)";
      }
      f.message = "checkpoint shard " + shard_text(d, i, writer) + " came back wrong from byte " +
                  std::to_string(d.bad[d.at(i, r)]) + in_file + ": written by " +
                  facts.rank_name(static_cast<int>(writer)) + ", restored by " +
                  facts.rank_name(static_cast<int>(r)) +
                  "; the storage, the writer's node or the path between them corrupts data";
      f.value = static_cast<double>(d.bad[d.at(i, r)]);
      f.unit = "first wrong byte";
      f.evidence = "xxh3 per " + bytes_text(static_cast<double>(d.block)) +
                   " block against the committed metadata, then byte by byte against the "
                   "content written";
      out.push_back(f);
    }
  }
  if (!out.empty()) return out;
  if (verified == 0) {
    out.push_back(run_finding("checkpoint.verify", CheckStatus::kSkip,
                              "not verified (checkpoint.verify: false): the shards were read back "
                              "but nobody checked what came back"));
  } else {
    Finding f = run_finding(
        "checkpoint.verify", CheckStatus::kPass,
        "every byte of " + std::to_string(verified) + " restored shard(s) (" +
            bytes_text(verified_bytes) + ") matched its committed checksums" +
            (unverified > 0 ? "; " + std::to_string(unverified) + " not verified" : ""));
    f.value = static_cast<double>(verified);
    f.unit = "shards";
    out.push_back(f);
  }
  return out;
}

}  // namespace

CheckpointFindings checkpoint_findings(const RunFile& file, const RunFacts& facts) {
  CheckpointFindings out;
  const std::string g = schema::kCheckpointGroup;
  if (!facts.asked_for("checkpoint") && !file.has(g)) return out;
  if (!file.has(g) || !file.has(g, c::kWriteS)) {
    out.findings.push_back(not_recorded(facts, "checkpoint"));
    return out;
  }
  CkptData d;
  try {
    d = read_checkpoint(file);
    if (!facts.ranks.empty() && facts.ranks.size() != d.world) {
      throw RuntimeFault("/checkpoint holds " + std::to_string(d.world) + " ranks, the run " +
                         std::to_string(facts.ranks.size()));
    }
  } catch (const std::exception& e) {
    out.findings.push_back(
        run_finding("checkpoint.coverage", CheckStatus::kFail,
                    std::string("/checkpoint unreadable: ") + e.what() + " (a damaged file)"));
    return out;
  }
  out.ran = true;
  CheckpointSummary& s = out.summary;
  s.layout = d.layout;
  s.api = d.api;
  s.fs_type = d.fs_type;
  s.dir = d.dir;
  s.kept = d.kept;
  s.iters = d.iters;
  s.world = d.world;
  for (std::int64_t b : d.bytes) s.total_bytes += static_cast<double>(b);
  if (!d.bytes.empty()) {
    const auto [lo, hi] = std::minmax_element(d.bytes.begin(), d.bytes.end());
    s.bytes_per_rank = static_cast<double>(*hi);
    s.shards = *lo == *hi ? std::to_string(d.world) + " x " + bytes_text(s.bytes_per_rank)
                          : std::to_string(d.world) + " shards of " +
                                bytes_text(static_cast<double>(*lo)) + " to " +
                                bytes_text(s.bytes_per_rank) + ", " + bytes_text(s.total_bytes) +
                                " in all";
  }
  if (d.iters == 0) {
    out.findings.push_back(run_finding("checkpoint.coverage", CheckStatus::kFail,
                                       "nothing measured: no checkpoint iteration was recorded"));
    return out;
  }
  s.write_gbps = median(d.write_gbps);
  s.read_gbps = median(d.read_gbps);
  s.restore_s = median(d.restore);
  s.open_s = median(d.open);
  s.write_s = median(d.write);
  s.fsync_s = median(d.fsync);
  s.close_s = median(d.close);
  s.read_s = median(d.read);
  std::vector<double> write_total(d.iters * d.world);
  for (std::size_t k = 0; k < write_total.size(); ++k) {
    write_total[k] = d.open[k] + d.write[k] + d.fsync[k] + d.close[k];
  }
  if (d.async) {
    s.async = true;
    s.blocked_s = median(d.snapshot);
    s.background_write_s = median(write_total);
    s.step_before_ms = median(d.step_before);
    std::vector<double> during;
    for (double v : d.step_during) {
      if (!std::isnan(v)) during.push_back(v);
    }
    s.step_during_ms = during.empty() ? std::nan("") : median(during);
    std::vector<double> counts(d.steps_during.begin(), d.steps_during.end());
    s.steps_during = median(counts);
  }
  for (std::size_t r = 0; r < d.world; ++r) {
    const double w = median(d.column(write_total, r)), rd = median(d.column(d.read, r));
    if (s.slowest_writer < 0 || w > s.slowest_write_s) {
      s.slowest_writer = static_cast<int>(r);
      s.slowest_write_s = w;
    }
    if (s.slowest_reader < 0 || rd > s.slowest_read_s) {
      s.slowest_reader = static_cast<int>(r);
      s.slowest_read_s = rd;
    }
  }

  // ---- coverage ----
  std::set<std::string> hosts;
  for (const RankInfo& r : facts.ranks) hosts.insert(r.hostname);
  bool cross_node = true;
  for (std::size_t r = 0; r < d.world; ++r) {
    if (facts.node_of_rank(static_cast<int>(r)) ==
        facts.node_of_rank(static_cast<int>(d.source[r]))) {
      cross_node = false;
    }
  }
  std::size_t not_dropped = 0;
  for (std::int64_t v : d.dropped) not_dropped += v == 0 ? 1 : 0;
  Finding cov = run_finding(
      "checkpoint.coverage", CheckStatus::kPass,
      std::to_string(d.iters) + " checkpoint(s) of " + s.shards + " (" + d.api + " " + d.layout +
          (d.direct ? ", O_DIRECT" : "") + (d.fsync_on ? ", fsync" : ", no fsync") +
          (d.async ? ", async" : "") + ") on " + d.fs_type +
          (d.fs_mount.empty() ? "" : " " + d.fs_mount) +
          (d.node_local ? " (node-local" + std::string(hosts.size() > 1 ? ")" : ", one host)")
                        : " (shared)") +
          ", written, committed and restored " +
          (cross_node ? "by a rank on another node"
                      : "by another rank (" + std::string(d.world == 1 ? "one rank" : "one node") +
                            ": not across nodes)"));
  cov.value = static_cast<double>(d.iters);
  cov.unit = "checkpoints";
  if (!d.fsync_on) {
    cov.status = CheckStatus::kWarn;
    cov.message +=
        "; without fsync the write times are the page cache's, not the storage's, and the "
        "restore may read the page cache too (dirty pages cannot be dropped before it)";
  } else if (!d.direct && not_dropped > 0) {
    cov.status = CheckStatus::kWarn;
    cov.message += "; the page cache could not be dropped for " + std::to_string(not_dropped) +
                   " shard(s) (posix_fadvise refused): their restore may have read memory";
  }
  if (d.fs_type == "tmpfs" || d.fs_type == "ramfs") {
    cov.message += "; " + d.fs_type +
                   " keeps the data in memory: the numbers say nothing about "
                   "a disk or the parallel file system";
  }
  out.findings.push_back(cov);

  for (auto&& f : verify_checks(d, facts)) out.findings.push_back(std::move(f));

  // ---- storage: a node-local file system under several hosts ----
  if (d.node_local && hosts.size() > 1) {
    out.findings.push_back(run_finding(
        "checkpoint.storage", CheckStatus::kWarn,
        "checkpoint.dir " + d.dir + " is on " + d.fs_type + " (node-local) under " +
            std::to_string(hosts.size()) +
            " hosts: a restore on another node cannot read it; point checkpoint.dir at the "
            "parallel file system"));
  }

  // ---- bandwidth ----
  const CheckpointConfig& cfg = facts.config.checkpoint;
  const std::string measured = "aggregate write " + gbps_text(s.write_gbps) + ", read " +
                               gbps_text(s.read_gbps) + " (median of " + std::to_string(d.iters) +
                               " checkpoint(s))";
  if (cfg.expected_write_gbps <= 0 && cfg.expected_read_gbps <= 0) {
    out.findings.push_back(run_finding("checkpoint.bandwidth", CheckStatus::kSkip,
                                       measured +
                                           "; not judged: set checkpoint.expected_write_gbps "
                                           "and expected_read_gbps to what the storage should "
                                           "reach"));
  } else {
    for (const auto& [what, got, want, key] :
         {std::tuple{"write", s.write_gbps, cfg.expected_write_gbps, "expected_write_gbps"},
          std::tuple{"read", s.read_gbps, cfg.expected_read_gbps, "expected_read_gbps"}}) {
      if (want <= 0) continue;
      const double ratio = got / want;
      const bool ok = ratio >= 1;
      Finding f = measured_finding("checkpoint.bandwidth",
                                   ok ? CheckStatus::kPass : below_expected(facts, ratio, 1.0),
                                   "phase", std::string("checkpoint ") + what, got, want, "GB/s");
      f.message = std::string("aggregate ") + what + " " + gbps_text(got) + " is " +
                  fixed_text(100 * ratio, 0) + "% of checkpoint." + key + " = " + gbps_text(want) +
                  (ok ? "" : shared_cores_note(facts, ratio, 1.0));
      f.evidence = "median of " + std::to_string(d.iters) +
                   " checkpoint(s): all bytes / (latest end - earliest start), aligned clocks";
      out.findings.push_back(f);
    }
  }

  // ---- stragglers: per-rank write (open .. close) + read, per byte, each checkpoint ----
  // One case, not write and read as two that a rank must fail both of: at the fewest
  // checkpoints that could judge two, only a rank slower in every one of both could be named
  // (a rank at 1.6x in write passed at 5).
  const StragglerLimits limits = facts.straggler_limits();
  const std::string unjudged =
      cannot_judge(1, d.iters, d.world, "ranks", limits.alpha, "checkpoint.iters");
  if (!unjudged.empty()) {
    out.findings.push_back(
        run_finding("checkpoint.stragglers", CheckStatus::kSkip, "slow I/O ranks: " + unjudged));
  } else {
    // Seconds per byte: shards differ with from_train (DP rank 0 also writes the model).
    std::vector<double> io_rate(write_total.size());
    for (std::size_t i = 0; i < d.iters; ++i) {
      for (std::size_t r = 0; r < d.world; ++r) {
        const double wb = static_cast<double>(std::max<std::int64_t>(1, d.bytes[r]));
        const double rb = static_cast<double>(
            std::max<std::int64_t>(1, d.bytes[static_cast<std::size_t>(d.source[r])]));
        io_rate[d.at(i, r)] = write_total[d.at(i, r)] / wb + d.read[d.at(i, r)] / rb;
      }
    }
    const std::vector<StragglerCase> cases = {{"write + read", io_rate, d.iters, d.world, 0}};
    const std::size_t first_straggler = out.findings.size();
    const Stragglers found = find_stragglers(cases, limits);
    const std::vector<StragglerEvidence>& slow = found.named;
    for (const StragglerEvidence& e : slow) {
      Finding f =
          rank_finding(facts, "checkpoint.stragglers", straggler_status(facts, e.excess), e.rank);
      f.message = facts.rank_name(e.rank) + ": its checkpoint I/O is " +
                  fixed_text(100 * e.excess, 0) + "% slower than the other ranks' (write + read " +
                  "per byte, over " + std::to_string(d.iters) + " checkpoints), " + p_text(e.p) +
                  ": its node, its link to the storage or the storage target it hits";
      f.value = e.excess;
      f.expected = facts.straggler_slowdown();
      f.unit = "fraction slower";
      f.evidence = std::to_string(d.iters) +
                   " checkpoints, write (open to close) + read time per byte, one-sided "
                   "Mann-Whitney vs the "
                   "other ranks, Bonferroni-corrected p " +
                   general_text(e.p, 2);
      out.findings.push_back(f);
    }
    if (!found.together.empty()) {
      add_slower_together(out.findings, first_straggler,
                          slower_together_finding("checkpoint.stragglers", found.together));
    } else if (slow.empty()) {
      out.findings.push_back(run_finding(
          "checkpoint.stragglers", CheckStatus::kPass,
          "no rank's checkpoint I/O consistently slower: none at least " +
              fixed_text(100 * facts.straggler_slowdown(), 0) +
              "% slower than the others in write + read, beyond their spread and with p < "
              "0.01, over " +
              std::to_string(d.iters) + " checkpoint(s)" +
              few_samples_note(1, d.iters, d.world, limits.alpha, "checkpoint.iters")));
    }
  }
  return out;
}

std::string checkpoint_title(const CheckpointFindings& cf) {
  const CheckpointSummary& s = cf.summary;
  return "checkpoint (" + s.api + " " + s.layout + " on " + s.fs_type + "; " + s.shards + "; " +
         std::to_string(s.iters) + (s.iters == 1 ? " iteration)" : " iterations)");
}

std::string format_checkpoint(const CheckpointFindings& cf, const RunFacts& facts, bool explain) {
  if (!cf.ran) return "";
  const CheckpointSummary& s = cf.summary;
  std::ostringstream os;
  if (explain) {
    os << "  aggregate: all shards' bytes / (latest end - earliest start) on aligned clocks, as "
          "IOR; per rank: medians over the checkpoints; restore: the whole checkpoint read back\n";
  }
  os << "  write " << gbps_text(s.write_gbps) << ", read " << gbps_text(s.read_gbps)
     << " aggregate (median); restore of the whole checkpoint " << s_text(s.restore_s)
     << "; per rank: open " << s_text(s.open_s) << ", write " << s_text(s.write_s) << ", fsync "
     << s_text(s.fsync_s) << ", close " << s_text(s.close_s) << "; read " << s_text(s.read_s)
     << '\n';
  if (s.world > 1) {
    os << "  slowest writer " << facts.rank_name(s.slowest_writer) << " "
       << s_text(s.slowest_write_s) << "; slowest reader " << facts.rank_name(s.slowest_reader)
       << " " << s_text(s.slowest_read_s) << '\n';
  }
  if (s.async) {
    os << "  async: training blocked " << s_text(s.blocked_s) << " (snapshot) of a "
       << s_text(s.background_write_s) << " background write; " << fixed_text(s.steps_during, 0)
       << " stand-in step(s) ran meanwhile";
    if (!std::isnan(s.step_during_ms) && s.step_before_ms > 0) {
      const double change = s.step_during_ms / s.step_before_ms - 1;
      os << ", " << fixed_text(100 * std::fabs(change), 0)
         << (change >= 0 ? "% slower" : "% faster") << " than before ("
         << fixed_text(s.step_before_ms, 2) << " -> " << fixed_text(s.step_during_ms, 2) << " ms)";
    }
    // The stand-in steps run on the CPU, beside the writer thread: on a GPU job the steps would
    // leave the cores to it, so here the background write's time includes that contention.
    os << " (the stand-in steps share the rank's CPU with the writer thread: the background "
          "write's time includes that contention)\n";
  }
  if (!s.kept.empty()) os << "  kept: " << s.kept << '\n';
  return os.str();
}

}  // namespace shakedown
