// The scale generator: writes a synthetic run file of N ranks on M nodes through the real
// RunWriter calls the phases make (record/collective_rows.hpp, gemm_rows.hpp, train_rows.hpp,
// checkpoint_rows.hpp), at the
// default configuration (configs/full.yaml: both modes, every scope, six collectives, the NCCL
// sizes 8 B .. 8 GiB, 20 iterations; 4 GEMM shapes; 20 training steps at tp 8; one checkpoint)
// unless told otherwise, so the recording benchmarks, `summary` at scale and the compare/report
// tools (bench/scale_tools.sh) measure the same file a real job of that size writes.
// The samples are synthetic (latency + bytes / bandwidth with per-rank noise, seeded); the
// layout, chunking, compression and write pattern are the real ones.
//
// Prints the file size, rank 0's write time per size-row (what the collectives phase spends per
// message size after the gather, with flushes deferred as rank 0's writer thread defers them:
// one every Recorder::kFlushInterval, its time counted in the row that triggers it) and the
// totals. bench/recording.sh runs it and times `summary`.
//
//   gen_runfile --ranks 1024 --nodes 128 --out /tmp/scale.h5 [--sizes 8:8G] [--iters 20]
//               [--compression 1] [--seed N] [--slow-rank R] [--train-steps 20]
//               [--checkpoints 1]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "comm/collectives.hpp"
#include "config/load.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "record/checkpoint_rows.hpp"
#include "record/collective_rows.hpp"
#include "record/gemm_rows.hpp"
#include "record/recorder.hpp"
#include "record/schema.hpp"
#include "record/telemetry_rows.hpp"
#include "record/train_rows.hpp"
#include "record/writer.hpp"
#include "telemetry/channels.hpp"
#include "telemetry/summary.hpp"

namespace sd = shakedown;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Scope {
  std::string name;
  int nranks;                       // ranks in one instance
  std::vector<std::int64_t> ranks;  // who takes part
  double alpha_us, GBps;            // the synthetic model: alpha + bytes / rate
};

// /telemetry for every node as the run writes it (record/telemetry_rows.hpp): the host's 5
// signals, per_node GPUs' NVML and Xid signals, 8 InfiniBand ports' counters; the 7 phases
// sharing `seconds`; per phase each channel's min/median/max and one decimated row per second
// (at most 128 a phase, as telemetry/summary.hpp keeps them)
// (gauges near a level with 2% noise, counters growing or still, bit masks 0); no event, so no
// full-rate series (what a healthy run keeps).
template <class Rng>
void write_synthetic_telemetry(sd::RunWriter& w, int nodes, int per_node, double seconds,
                               Rng& rng) {
  namespace tm = sd::telemetry;
  std::vector<tm::Channel> channels = {
      {"host", tm::host::kLoad, "load", tm::Kind::kGauge},
      {"host", tm::host::kMemoryAvailable, "GiB", tm::Kind::kGauge},
      {"host", tm::host::kCpuMhzMin, "MHz", tm::Kind::kGauge},
      {"host", tm::host::kCpuMhzMedian, "MHz", tm::Kind::kGauge},
      {"host", tm::host::kCpuMhzMax, "MHz", tm::Kind::kGauge}};
  std::vector<std::string> bus_ids;
  for (int g = 0; g < per_node; ++g) {
    for (tm::Channel c : tm::gpu_signals()) {
      c.device = "gpu" + std::to_string(g);
      channels.push_back(c);
    }
    char bus[32];
    std::snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x18 + 0x10 * g);
    bus_ids.emplace_back(bus);
  }
  for (int p = 0; p < 8; ++p) {
    for (const char* s : {tm::ib::kXmitBytes, tm::ib::kRcvBytes, tm::ib::kSymbolError,
                          tm::ib::kLinkDowned, tm::ib::kRcvErrors}) {
      channels.push_back({"mlx5_" + std::to_string(p) + ":1", s, "GB", tm::Kind::kCounter});
    }
  }
  // What a busy H100 node shows: NVML's integers (utilization %, degrees, MHz) and its power in
  // mW; power and utilization move from second to second (the window's mean of 10 samples), the
  // temperature drifts by a degree, the rest holds still; traffic grows at 40 GB/s per port.
  std::normal_distribution<double> noise(0.0, 1.0);
  const auto value = [&](const tm::Channel& c, double t) -> double {
    const std::string& s = c.signal;
    if (s == tm::host::kLoad) return std::round(800 + 30 * noise(rng)) / 100;
    if (s == tm::host::kMemoryAvailable) return 1800.25;
    if (s.rfind("cpu_mhz", 0) == 0) return 3100;
    if (s == tm::gpu::kUtilization) return std::round(950 + 20 * noise(rng)) / 10;
    if (s == tm::gpu::kMemoryUtilization) return std::round(600 + 40 * noise(rng)) / 10;
    if (s == tm::gpu::kMemoryUsed) return 70.5;
    if (s == tm::gpu::kPower) return std::round(640000 + 15000 * noise(rng)) / 1000;
    if (s == tm::gpu::kPowerLimit) return 700;
    if (s == tm::gpu::kTemperature) return 62 + std::floor(t / 600);
    if (s == tm::gpu::kSmClock) return 1980;
    if (s == tm::gpu::kMemoryClock) return 2619;
    if (s == tm::gpu::kPcieGen || s == tm::gpu::kPcieMaxGen) return 5;
    if (s == tm::gpu::kPcieWidth || s == tm::gpu::kPcieMaxWidth) return 16;
    if (s == tm::gpu::kNvlinkActive) return 18;
    if (s == tm::gpu::kXidLast || s == tm::gpu::kXidCount) {
      return std::numeric_limits<double>::quiet_NaN();  // /dev/kmsg not readable
    }
    if (s == tm::ib::kXmitBytes || s == tm::ib::kRcvBytes) return 40.0 * t;
    return 0;
  };
  const std::vector<std::string> phases = {"inventory", "devices", "linkscan",  "collectives",
                                           "gemm",      "train",   "checkpoint"};
  const double share[] = {0.02, 0.1, 0.15, 0.45, 0.08, 0.15, 0.05};
  const std::size_t nc = channels.size();
  for (int n = 0; n < nodes; ++n) {
    sd::TelemetryGroup group;
    double t = 0;
    for (std::size_t p = 0; p < phases.size(); ++p) {
      sd::telemetry::NodeMessage m;
      m.node = n;
      m.host = "node" + std::to_string(n);
      m.with_header = p == 0;
      if (m.with_header) {
        m.channels = channels;
        m.bus_ids = bus_ids;
        m.base.assign(nc, 0.0);
      }
      m.notes = {"no Xid errors: /dev/kmsg: Permission denied"};
      m.sample_cost_us = 900;
      m.sampler_cpus = "100,101";
      tm::NodePhase& ph = m.phase;
      ph.phase = phases[p];
      ph.start_us = t * 1e6;
      const double span = std::max(1.0, seconds * share[p]);
      t += span;
      ph.end_us = t * 1e6;
      // One row a second, at most kMaxRows a phase (wider windows beyond), as the node keeps.
      constexpr std::size_t kMaxRows = 128;
      const auto rows = std::min(kMaxRows, static_cast<std::size_t>(span));
      const double step = span / static_cast<double>(rows);
      ph.samples = static_cast<int>(span * 10);
      std::vector<double> lo(nc, 1e300), hi(nc, -1e300), sum(nc, 0);
      for (std::size_t r = 0; r < rows; ++r) {
        const double at = ph.start_us * 1e-6 + step * static_cast<double>(r);
        ph.decimated_time_us.push_back(at * 1e6);
        for (std::size_t c = 0; c < nc; ++c) {
          const double v = value(channels[c], at);
          ph.decimated.push_back(v);
          lo[c] = std::min(lo[c], v);
          hi[c] = std::max(hi[c], v);
          sum[c] += v;
        }
      }
      for (std::size_t c = 0; c < nc; ++c) {
        if (!(hi[c] >= lo[c])) lo[c] = hi[c] = sum[c] = std::numeric_limits<double>::quiet_NaN();
        ph.stats.push_back(lo[c]);
        ph.stats.push_back(sum[c] / static_cast<double>(rows));  // the mean for the median
        ph.stats.push_back(hi[c]);
      }
      sd::write_telemetry_node(w, m, group);
    }
  }
}

}  // namespace

int generate(int argc, char** argv) {
  CLI::App app{"Write a synthetic shakedown run file of N ranks with the real RunWriter"};
  int world = 1024, nodes = 128, compression = 1, iters = 20, slow_rank = -1, train_steps = 20;
  int checkpoints = 1;
  double telemetry_seconds = 0;
  unsigned seed = 12345;
  std::string out, sizes_text = "8:8G";
  app.add_option("--ranks", world, "ranks")->check(CLI::Range(1, 1 << 20));
  app.add_option("--nodes", nodes, "nodes (ranks must divide evenly)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--out", out, "the run file to write (must not exist)")->required();
  app.add_option("--sizes", sizes_text, "message sizes, as collectives.nccl_sizes");
  app.add_option("--iters", iters, "timed iterations per size")->check(CLI::Range(1, 100000));
  app.add_option("--compression", compression, "output.compression (default 1, as a run)")
      ->check(CLI::Range(0, 9));
  app.add_option("--slow-rank", slow_rank,
                 "one rank 30% slower in every collective, GEMM, training step's compute and "
                 "checkpoint write (-1 none)");
  app.add_option("--seed", seed, "the noise's seed (two files of one seed are identical)");
  app.add_option("--train-steps", train_steps, "training steps (0: no train phase)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--checkpoints", checkpoints, "checkpoint iterations (0: no checkpoint phase)")
      ->check(CLI::Range(0, 1000));
  app.add_option("--telemetry-seconds", telemetry_seconds,
                 "the run's length for /telemetry (0: none): every node's channels (host, its "
                 "GPUs through NVML, 8 InfiniBand ports) over the 7 phases, 1 s decimation, no "
                 "event (so no full-rate series)")
      ->check(CLI::Range(0.0, 1e6));
  CLI11_PARSE(app, argc, argv);
  if (world % nodes != 0) {
    std::fprintf(stderr, "gen_runfile: --ranks %d is not a multiple of --nodes %d\n", world, nodes);
    return 2;
  }
  const int per_node = world / nodes;
  const auto nw = static_cast<std::size_t>(world);

  sd::Config config;  // the struct defaults: configs/full.yaml's collectives and gemm
  config.phases = {"inventory", "collectives", "gemm"};
  if (train_steps > 0) config.phases.push_back("train");
  if (checkpoints > 0) config.phases.push_back("checkpoint");
  config.telemetry.enabled = telemetry_seconds > 0;
  config.train.tp = std::min(8, per_node);
  config.train.steps = train_steps;
  config.checkpoint.iters = checkpoints;
  config.collectives.backend = "nccl";
  config.collectives.iters = iters;
  config.collectives.nccl_sizes = sd::parse_size_list(sizes_text, "--sizes");
  config.output.compression = compression;
  sd::RunMeta meta;
  meta.shakedown_version = "gen_runfile";
  meta.command_line = "gen_runfile (synthetic)";
  meta.config_yaml = sd::to_yaml(config);
  meta.world_size = world;
  meta.node_count = nodes;
  meta.backend = "nccl";
  const auto t_all = std::chrono::steady_clock::now();
  sd::RunWriter w = sd::RunWriter::create(out, meta, compression);
  w.hold_open();  // as the Recorder does for a run

  std::vector<sd::RankInfo> ranks(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    auto& info = ranks[static_cast<std::size_t>(r)];
    info.rank = r;
    info.node_index = r / per_node;
    info.local_rank = r % per_node;
    info.local_size = per_node;
    char host[32];
    std::snprintf(host, sizeof host, "gpu-%04d", r / per_node);
    info.hostname = host;
    info.cpus = std::to_string(info.local_rank * 8) + "-" + std::to_string(info.local_rank * 8 + 7);
    info.cpu_count = 8;
    info.gpu_count = per_node;
    info.gpu_index = info.local_rank;
  }
  w.write_topology(ranks, {});
  std::vector<sd::NodeInventory> inventory(static_cast<std::size_t>(nodes));
  for (int n = 0; n < nodes; ++n) {
    auto& node = inventory[static_cast<std::size_t>(n)];
    node.node_index = n;
    node.hostname = ranks[static_cast<std::size_t>(n * per_node)].hostname;
    node.cpu_model = "synthetic CPU";
    node.sockets = 2;
    node.cores = 8 * per_node;
    node.pus = 16 * per_node;
    node.numa_nodes = 2;
    node.memory_bytes = 2ull << 40;
    node.os = "Debian GNU/Linux 12";
    node.kernel = "6.1.0";
    node.gpu_driver = "580.95";
    for (int g = 0; g < per_node; ++g) {
      sd::GpuInfo gpu;
      gpu.index = g;
      gpu.name = "NVIDIA H200";
      gpu.memory_bytes = 141ull << 30;
      gpu.numa_node = g * 2 / per_node;
      node.gpus.push_back(gpu);
    }
  }
  w.write_inventory(inventory);
  const std::vector<double> zeros(static_cast<std::size_t>(world), 0.0);
  w.write_clock(zeros, zeros);

  // The scopes the collectives phase plans on this shape (phases/collectives.cpp plan_scopes).
  std::vector<Scope> scopes;
  std::vector<std::int64_t> everyone(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) everyone[static_cast<std::size_t>(r)] = r;
  scopes.push_back({"world", world, everyone, 25, 40});
  if (per_node > 1) scopes.push_back({"intra_node", per_node, everyone, 8, 360});
  if (nodes > 1) {
    scopes.push_back({"inter_node", nodes, everyone, 20, 45});
    for (int l = 0; l < per_node; ++l) {
      std::vector<std::int64_t> rail;
      for (int n = 0; n < nodes; ++n) rail.push_back(n * per_node + l);
      scopes.push_back({"rail_" + std::to_string(l), nodes, rail, 18, 48});
    }
  }

  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.03);
  std::exponential_distribution<double> jitter(1.0 / 2.0);  // arrival jitter, mean 2 us
  const auto& sizes = config.collectives.nccl_sizes.values;
  const auto it = static_cast<std::size_t>(iters);
  std::vector<double> row_ms;
  // As rank 0's writer thread writes them (record/recorder.cpp): every job with flushes
  // deferred, and the file flushed when its last flush is kFlushInterval old; a row's time
  // includes the flush it triggers.
  w.defer_flushes(true);
  auto flushed = std::chrono::steady_clock::now();
  double clock_us = 0;
  std::size_t sweeps = 0;
  for (const Scope& scope : scopes) {
    for (const std::string& op : config.collectives.ops) {
      const sd::CollectiveInfo* info = sd::find_collective(op);
      for (bool in_place : {false, true}) {
        const std::string leaf = info->reduces ? "float32_sum" : "float32";
        const std::string path =
            sd::schema::sweep_group(scope.name, op, leaf, in_place ? "in_place" : "out_of_place");
        sd::CollectiveSweepHeader h{scope.name,
                                    op,
                                    "float32",
                                    info->reduces ? "sum" : "",
                                    in_place,
                                    scope.nranks,
                                    info->busbw_factor(scope.nranks),
                                    0,
                                    static_cast<std::int64_t>(sizes.size())};
        sd::write_collective_header(w, path, h, scope.ranks);
        ++sweeps;
        for (std::uint64_t bytes : sizes) {
          const sd::CollectiveCounts counts = info->counts(bytes, 4, scope.nranks);
          sd::GatheredSize g;
          g.iters = it;
          g.world = nw;
          g.time_us.assign(it * nw, shakedown::kNaN);
          g.arrival_us.assign(it * nw, shakedown::kNaN);
          g.wait_us.assign(it * nw, shakedown::kNaN);
          g.wrong.assign(nw, 0);
          g.first_wrong.assign(nw, -1);
          std::vector<double>& t = g.time_us;
          std::vector<double>& a = g.arrival_us;
          std::vector<double>& wt = g.wait_us;
          const double model = scope.alpha_us + static_cast<double>(counts.bytes) /
                                                    (scope.GBps * 1e3) / info->busbw_factor(2);
          for (std::size_t i = 0; i < it; ++i) {
            const double common = std::exp(noise(rng));
            double latest = 0;
            for (std::int64_t r : scope.ranks) {
              const auto ur = static_cast<std::size_t>(r);
              a[i * nw + ur] = clock_us + jitter(rng);
              latest = std::max(latest, a[i * nw + ur]);
            }
            for (std::int64_t r : scope.ranks) {
              const auto ur = static_cast<std::size_t>(r);
              const double slow = r == slow_rank ? 1.3 : 1.0;
              t[i * nw + ur] = model * common * slow * std::exp(noise(rng));
              wt[i * nw + ur] = latest - a[i * nw + ur] + 1.0;
            }
            clock_us = latest + model * 1.5 + 5;
          }
          sd::CollectiveSizeStats stats;
          stats.bytes = bytes;
          stats.count = counts.unit;
          stats.skipped = counts.unit == 0 ? sd::schema::kSkipTooSmall : sd::schema::kSkipMeasured;
          sd::set_iteration_stats(stats, g);
          stats.algbw_GBps = sd::algbw_gbps(counts.bytes, stats.time_med_us * 1e-6);
          stats.busbw_GBps = stats.algbw_GBps * info->busbw_factor(scope.nranks);
          const auto t0 = std::chrono::steady_clock::now();
          sd::append_collective_size(w, path, scope.ranks, stats, g);
          if (t0 - flushed >= sd::Recorder::kFlushInterval) {
            w.flush();
            flushed = std::chrono::steady_clock::now();
          }
          row_ms.push_back(seconds_since(t0) * 1e3);
        }
      }
    }
  }
  w.defer_flushes(false);
  w.flush();
  w.set_attr(sd::schema::kCollectivesGroup, sd::schema::coll::kAttrBackend, std::string("nccl"));
  w.set_attr(sd::schema::kCollectivesGroup, sd::schema::coll::kAttrWrongTotal, std::uint64_t{0});

  // The gemm phase: the default layer's four shapes, every rank's iterations.
  w.set_attr(sd::schema::kGemmGroup, "engine", std::string("cublaslt"));
  w.set_attr(sd::schema::kGemmGroup, "planned_shapes", std::int64_t{4});
  const std::int64_t hidden = config.gemm.hidden, tokens = config.gemm.tokens;
  const std::int64_t shapes[4][3] = {{tokens, 3 * hidden, hidden},
                                     {tokens, hidden, hidden},
                                     {tokens, 4 * hidden, hidden},
                                     {tokens, hidden, 4 * hidden}};
  const auto gi = static_cast<std::size_t>(config.gemm.iters);
  for (int s = 0; s < 4; ++s) {
    sd::GemmShapeRecord g;
    g.order = s + 1;
    g.m = shapes[s][0];
    g.n = shapes[s][1];
    g.k = shapes[s][2];
    g.a_format = g.b_format = "e4m3";
    g.out_dtype = "bf16";
    g.engine = "cublaslt";
    g.fast_accum = true;
    g.flop = 2.0 * static_cast<double>(g.m * g.n) * static_cast<double>(g.k);
    g.iters = gi;
    g.time_us.resize(gi * nw);
    for (std::size_t i = 0; i < g.time_us.size(); ++i) {
      const double slow = static_cast<int>(i % nw) == slow_rank ? 1.3 : 1.0;
      g.time_us[i] = g.flop / 1.2e15 * 1e6 * slow * std::exp(noise(rng));
    }
    g.max_rel_err.assign(nw, 1e-3);
    g.err_bound_ratio.assign(nw, 0.1);
    g.worst_expected.assign(nw, 1.0);
    g.worst_got.assign(nw, 1.001);
    g.worst_index.assign(nw, 0);
    g.rows_checked.assign(nw, 16);
    g.hash_group.assign(nw, 0);
    g.output_hash.assign(nw, 0x1234abcdULL + static_cast<std::uint64_t>(s));
    g.hash_groups = {"synthetic"};
    char name[64];
    std::snprintf(name, sizeof name, "%lldx%lldx%lld", static_cast<long long>(g.m),
                  static_cast<long long>(g.n), static_cast<long long>(g.k));
    sd::write_gemm_shape(w, sd::schema::gemm_group(name), g);
  }

  // The train phase: tp x dp, every rank's steps (forward, backward, TP communication, the
  // exposed part of the DP reduction, the optimizer), parameters equal across replicas.
  if (train_steps > 0) {
    const int tp = config.train.tp;
    sd::TrainRecord r;
    r.model = "custom";
    r.mlp = "gelu";
    r.recipe = "delayed";
    r.format = "hybrid";
    r.engine = "cublaslt";
    r.layers = 2;
    r.hidden = config.train.hidden;
    r.seq_len = config.train.seq_len;
    r.micro_batch = 1;
    r.tp = tp;
    r.dp = world / tp;
    r.rank_flop = 6.0 * 2 * 12 * static_cast<double>(r.hidden * r.hidden) *
                  static_cast<double>(r.seq_len) / tp;
    r.tokens_per_step = r.seq_len * r.dp;
    r.memory_bytes = 4e9;
    const auto steps = static_cast<std::size_t>(train_steps);
    r.steps = steps;
    r.buckets = 2;
    r.world = nw;
    for (std::size_t s2 = 0; s2 < steps; ++s2) {
      double slowest = 0;
      std::vector<double> step(nw);
      for (std::size_t k = 0; k < nw; ++k) {
        const double f = static_cast<int>(k) == slow_rank ? 1.3 : 1.0;
        r.fwd_ms.push_back(4 * f * std::exp(noise(rng)));
        r.bwd_ms.push_back(8 * f * std::exp(noise(rng)));
        r.tp_comm_ms.push_back(1.5 * std::exp(noise(rng)));
        r.dp_exposed_ms.push_back(0.8 * std::exp(noise(rng)));
        r.dp_span_ms.push_back(6 * std::exp(noise(rng)));
        r.optim_ms.push_back(1.2 * std::exp(noise(rng)));
        step[k] = r.fwd_ms.back() + r.bwd_ms.back() + r.tp_comm_ms.back() + r.dp_exposed_ms.back() +
                  r.optim_ms.back();
        slowest = std::max(slowest, step[k]);
      }
      for (std::size_t k = 0; k < nw; ++k) {
        r.step_ms.push_back(slowest * std::exp(0.002 * noise(rng)));
        r.dp_arrival_us.push_back(50 * std::exp(noise(rng)));
        r.zero_grad_share.push_back(0);
        r.param_hash.push_back(0x9e3779b97f4a7c15ULL * (s2 + 1) + k % static_cast<std::size_t>(tp));
      }
    }
    r.bucket_start_us.assign(steps * 2 * nw, -3000);
    r.bucket_end_us.assign(steps * 2 * nw, 800);
    r.bucket_bytes = {1 << 20, 25 << 20};
    for (std::size_t k = 0; k < nw; ++k) {
      r.tp_rank.push_back(static_cast<std::int64_t>(k) % tp);
      r.dp_rank.push_back(static_cast<std::int64_t>(k) / tp);
      r.scales_finite.push_back(1);
    }
    sd::write_train(w, r);
  }

  // The checkpoint phase: file per process, 1 GiB shards, each rank restoring the shard of a
  // rank on the next node; aggregate rates IOR's way (latest end - earliest start).
  if (checkpoints > 0) {
    sd::CheckpointRecord r;
    r.layout = "file_per_process";
    r.api = "posix";
    r.dir = "/lustre/ckpt";
    r.fs_type = "lustre";
    r.kept = "no";
    r.block_size = 16 << 20;
    const auto ci = static_cast<std::size_t>(checkpoints);
    r.iters = ci;
    r.world = nw;
    for (std::size_t k = 0; k < nw; ++k) {
      r.bytes.push_back(1LL << 30);
      r.reads_shard_of.push_back(
          static_cast<std::int64_t>((k + static_cast<std::size_t>(per_node)) % nw));
    }
    for (std::size_t i = 0; i < ci; ++i) {
      double wlo = 1e300, whi = 0, rlo = 1e300, rhi = 0;
      for (std::size_t k = 0; k < nw; ++k) {
        const double f = static_cast<int>(k) == slow_rank ? 1.3 : 1.0;
        const double start = 0.002 * std::exp(noise(rng)), wr = 1.1 * f * std::exp(noise(rng));
        const double rstart = 2 + 0.002 * std::exp(noise(rng)), rd = 0.6 * std::exp(noise(rng));
        r.open_s.push_back(0.002);
        r.write_s.push_back(wr - 0.05);
        r.fsync_s.push_back(0.045);
        r.close_s.push_back(0.003);
        r.read_s.push_back(rd);
        r.write_start_s.push_back(start);
        r.write_end_s.push_back(start + wr);
        r.read_start_s.push_back(rstart);
        r.read_end_s.push_back(rstart + rd);
        r.verify_ok.push_back(1);
        r.bad_offset.push_back(-1);
        r.cache_dropped.push_back(1);
        wlo = std::min(wlo, start);
        whi = std::max(whi, start + wr);
        rlo = std::min(rlo, rstart);
        rhi = std::max(rhi, rstart + rd);
      }
      const double total = static_cast<double>(nw) * static_cast<double>(1LL << 30);
      r.write_gbps.push_back(total / (whi - wlo) / 1e9);
      r.read_gbps.push_back(total / (rhi - rlo) / 1e9);
      r.restore_s.push_back(rhi - rlo);
    }
    sd::write_checkpoint(w, r);
  }
  double telemetry_s = 0;
  if (telemetry_seconds > 0) {
    const auto t_tel = std::chrono::steady_clock::now();
    write_synthetic_telemetry(w, nodes, per_node, telemetry_seconds, rng);
    telemetry_s = seconds_since(t_tel);
  }
  w.finish("complete");
  const double total_s = seconds_since(t_all);

  std::vector<double> sorted = row_ms;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double v : row_ms) sum += v;
  const auto bytes = std::filesystem::file_size(out);
  std::printf("gen_runfile: %d ranks on %d nodes, %zu sweeps, %zu size-rows, %d iterations\n",
              world, nodes, sweeps, row_ms.size(), iters);
  std::printf("file_MB %.1f\n", static_cast<double>(bytes) / 1e6);
  std::printf("row_write_ms median %.3f p95 %.3f max %.3f mean %.3f\n", sd::median(row_ms),
              sd::percentile(row_ms, 0.95), sorted.back(),
              sum / static_cast<double>(row_ms.size()));
  std::printf("rows_write_s %.2f total_s %.2f\n", sum / 1e3, total_s);
  if (telemetry_seconds > 0) {
    std::printf("telemetry: %d nodes x %.0f s, written in %.2f s\n", nodes, telemetry_seconds,
                telemetry_s);
  }
  return 0;
}

int main(int argc, char** argv) {
  // A bad --out or a full disk is said in one line with its exit code, not a terminate().
  try {
    return generate(argc, argv);
  } catch (const sd::Error& e) {
    std::fprintf(stderr, "gen_runfile: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gen_runfile: %s\n", e.what());
    return static_cast<int>(sd::ExitCode::kInternal);
  }
}
