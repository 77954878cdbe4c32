// The scale generator: writes a synthetic run file of N ranks on M nodes through the real
// RunWriter calls the phases make (record/collective_rows.hpp, record/gemm_rows.hpp), at the
// default configuration (configs/full.yaml: both modes, every scope, six collectives, the NCCL
// sizes 8 B .. 8 GiB, 20 iterations) unless told otherwise, so the recording benchmarks, `summary`
// at scale and the compare/report tools measure the same file a real job of that size writes.
// The samples are synthetic (latency + bytes / bandwidth with per-rank noise, seeded); the
// layout, chunking, compression and write pattern are the real ones.
//
// Prints the file size, rank 0's write time per size-row (what the collectives phase spends per
// message size after the gather) and the totals. bench/recording.sh runs it and times `summary`.
//
//   gen_runfile --ranks 1024 --nodes 128 --out /tmp/scale.h5 [--sizes 8:8G] [--iters 20]
//               [--compression 4] [--slow-rank R]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "comm/collectives.hpp"
#include "config/load.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "record/collective_rows.hpp"
#include "record/gemm_rows.hpp"
#include "record/schema.hpp"
#include "record/writer.hpp"

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

}  // namespace

int generate(int argc, char** argv) {
  CLI::App app{"Write a synthetic shakedown run file of N ranks with the real RunWriter"};
  int world = 1024, nodes = 128, compression = 4, iters = 20, slow_rank = -1;
  std::string out, sizes_text = "8:8G";
  app.add_option("--ranks", world, "ranks")->check(CLI::Range(1, 1 << 20));
  app.add_option("--nodes", nodes, "nodes (ranks must divide evenly)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--out", out, "the run file to write (must not exist)")->required();
  app.add_option("--sizes", sizes_text, "message sizes, as collectives.nccl_sizes");
  app.add_option("--iters", iters, "timed iterations per size")->check(CLI::Range(1, 100000));
  app.add_option("--compression", compression, "output.compression")->check(CLI::Range(0, 9));
  app.add_option("--slow-rank", slow_rank, "one rank 30% slower in every collective (-1 none)");
  CLI11_PARSE(app, argc, argv);
  if (world % nodes != 0) {
    std::fprintf(stderr, "gen_runfile: --ranks %d is not a multiple of --nodes %d\n", world, nodes);
    return 2;
  }
  const int per_node = world / nodes;

  sd::Config config;  // the struct defaults: configs/full.yaml's collectives and gemm
  config.phases = {"inventory", "collectives", "gemm"};
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

  std::mt19937_64 rng(12345);
  std::normal_distribution<double> noise(0.0, 0.03);
  std::exponential_distribution<double> jitter(1.0 / 2.0);  // arrival jitter, mean 2 us
  const auto& sizes = config.collectives.nccl_sizes.values;
  const auto it = static_cast<std::size_t>(iters);
  const auto nw = static_cast<std::size_t>(world);
  std::vector<double> row_ms;
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
          g.time_us.assign(it * nw, NAN);
          g.arrival_us.assign(it * nw, NAN);
          g.wait_us.assign(it * nw, NAN);
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
          stats.skipped = counts.unit == 0 ? sd::schema::kCollTooSmall : sd::schema::kCollMeasured;
          sd::set_iteration_stats(stats, g);
          stats.algbw_GBps = sd::algbw_gbps(counts.bytes, stats.time_med_us * 1e-6);
          stats.busbw_GBps = stats.algbw_GBps * info->busbw_factor(scope.nranks);
          const auto t0 = std::chrono::steady_clock::now();
          sd::append_collective_size(w, path, scope.ranks, stats, g);
          row_ms.push_back(seconds_since(t0) * 1e3);
        }
      }
    }
  }
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
    for (double& v : g.time_us) v = g.flop / 1.2e15 * 1e6 * std::exp(noise(rng));
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
