// The gemm phase: FP8 GEMMs (Transformer Engine style: per-tensor scales, fp32 accumulation,
// bf16 out) on every rank, the same inputs everywhere. Per shape each rank records its time and
// TFLOP/s on every iteration (local work: this is where slow GPUs and CPUs show), checks its
// output against an fp64 reference within a stated bound (gemm/reference.hpp), and hashes it; the
// hashes let the analysis name ranks whose output differs from their peers' (silent data
// corruption). Rank 0 writes one group per shape as soon as it is measured.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <new>
#include <thread>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "fp8/scaling.hpp"
#include "fp8/tensor.hpp"
#include "gemm/engine.hpp"
#include "gemm/output_hash.hpp"
#include "gemm/reference.hpp"
#include "phases/gpu.hpp"
#include "phases/phase.hpp"
#include "record/gather.hpp"
#include "record/gemm_rows.hpp"
#include "record/schema.hpp"
#include "runtime/agree.hpp"
#include "runtime/clock.hpp"
#include "runtime/progress.hpp"

namespace shakedown {

namespace {

// Rows of D checked against fp64: 16 on a GPU; every row on the CPU engine up to 2^26 elements
// of D (the reference costs about as much as the GEMM), 256 rows beyond.
constexpr std::int64_t kGpuSampledRows = 16;
constexpr std::int64_t kCpuAllRowsElements = std::int64_t{1} << 26;
constexpr std::int64_t kCpuSampledRows = 256;

// One GEMM to run: a shape and the formats of its operands.
struct ShapeRun {
  GemmShape shape;
  fp8::Format a_format = fp8::Format::kE4M3;  // activations (or gradients, E5M2)
  fp8::Format b_format = fp8::Format::kE4M3;  // weights
  std::string name;                           // the HDF5 group under /gemm
};

std::string shape_name(const GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

// The configured shapes, or a transformer layer's four GEMMs (+ 8192^3 on a GPU); with the
// hybrid recipe each shape also runs as a gradient GEMM (E5M2 gradient x E4M3 weight).
std::vector<ShapeRun> plan_shapes(const GemmConfig& cfg, bool gpu) {
  std::vector<GemmShape> shapes = cfg.shapes;
  if (shapes.empty()) {
    const std::int64_t h = cfg.hidden, t = cfg.tokens;
    shapes = {{t, 3 * h, h}, {t, h, h}, {t, 4 * h, h}, {t, h, 4 * h}};
    if (gpu) shapes.push_back({8192, 8192, 8192});
    // A tiny hidden size can make two layer GEMMs the same shape: run each once.
    std::vector<GemmShape> unique;
    for (const auto& s : shapes) {
      if (std::find(unique.begin(), unique.end(), s) == unique.end()) unique.push_back(s);
    }
    shapes = unique;
  }
  std::vector<ShapeRun> runs;
  for (const auto& s : shapes) {
    runs.push_back({s, fp8::Format::kE4M3, fp8::Format::kE4M3, shape_name(s)});
    if (cfg.format == "hybrid") {
      runs.push_back({s, fp8::Format::kE5M2, fp8::Format::kE4M3, shape_name(s) + "_e5m2xe4m3"});
    }
  }
  return runs;
}

// Uniform in [-1, 1) from (seed, tensor, index): the same matrix on every rank, from any rank
// count, without storing or sending it.
float input_value(std::uint64_t seed, std::uint64_t tensor, std::uint64_t index) {
  const std::uint64_t bits =
      gemm_hash::splitmix64(gemm_hash::splitmix64(seed ^ (tensor << 40)) ^ index);
  // 24 random bits times 2^-23 -> [0, 2) exactly, then [-1, 1).
  return static_cast<float>(bits >> 40) * 0x1p-23f - 1.0f;
}

// A [rows, cols] operand quantised with current scaling (its own amax), as TE does for a tensor
// seen for the first time.
fp8::Fp8Tensor make_operand(std::int64_t rows, std::int64_t cols, fp8::Format format,
                            std::uint64_t seed, std::uint64_t tensor) {
  std::vector<float> values(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = input_value(seed, tensor, i);
  const float amax = fp8::amax(values);
  const float scale = fp8::current_scale(fp8::CurrentScaling{}, format, amax);
  return fp8::quantize_tensor(values, rows, cols, format, scale);
}

// auto: cuBLASLt when every rank has a GPU (ranks may share one), else the CPU engine.
std::string choose_engine(const PhaseEnv& env, const GpuChoice& gpu) {
  return choose_gpu_path(env.ctx, gpu, "gemm.engine", env.config.gemm.engine, "cublaslt", "cpu",
                         /*exclusive=*/false)
             ? "cublaslt"
             : "cpu";
}

// What one rank measured for one shape.
struct RankResult {
  std::vector<double> time_us;  // [iters], NaN when not run
  GemmCheck check;              // rows_checked 0: not checked (see check_note)
  std::string check_note;
  std::uint64_t hash = 0;
};

class ShapeSweep {
 public:
  // `impl_of_rank`: each rank's engine description, on rank 0 (empty elsewhere).
  ShapeSweep(PhaseEnv& env, GemmEngine& engine, const GemmOptions& options,
             const std::vector<std::string>& impl_of_rank, Progress& progress)
      : env_(env),
        engine_(engine),
        options_(options),
        roundoff_(engine.accumulation_roundoff(options)),
        impl_of_rank_(impl_of_rank),
        progress_(progress) {}

  // Measures, checks and records one shape. Collective over the world.
  void run(const ShapeRun& run, int step_number) {
    const GemmConfig& cfg = env_.config.gemm;
    const Context& ctx = env_.ctx;
    const std::string label = "gemm " + run.name;
    Watchdog::StepPlan plan;
    plan.total = cfg.iters;
    begin_measured_step(env_, "gemm", step_number, label, progress_, plan);

    RankResult mine;
    mine.time_us.assign(static_cast<std::size_t>(cfg.iters), kNaN);
    std::int64_t skipped = schema::kSkipMeasured;
    std::string skip_reason;
    fp8::Fp8Tensor a, b;
    std::unique_ptr<GemmProblem> problem;
    // Shape rules (cuBLASLt's leading dimensions, no algorithm) fail the same on every rank:
    // agreed() turns them into one error everywhere. Running out of memory may hit one rank
    // only: that skips the shape everywhere instead.
    agreed(ctx.world(), [&] {
      try {
        a = make_operand(run.shape.m, run.shape.k, run.a_format, cfg.seed, 2 * step_number);
        b = make_operand(run.shape.n, run.shape.k, run.b_format, cfg.seed, 2 * step_number + 1);
        problem = engine_.prepare(a, b, options_);
      } catch (const OutOfMemory& e) {
        skipped = schema::kSkipOutOfMemory;
        skip_reason = e.what();
      } catch (const std::bad_alloc&) {
        skipped = schema::kSkipOutOfMemory;
        skip_reason = "out of host memory for the operands";
      }
    });
    if (!skip_reason.empty()) skip_reason = ctx.describe_rank(ctx.rank()) + ": " + skip_reason;
    std::int64_t any_skipped = skipped;
    SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &any_skipped, 1, MPI_INT64_T, MPI_MAX, ctx.world()));
    if (any_skipped != schema::kSkipMeasured) {
      problem.reset();
    } else {
      measure(*problem, run, step_number, a, b, mine);
    }
    record(run, step_number, any_skipped, skip_reason, mine);
  }

 private:
  void measure(GemmProblem& problem, const ShapeRun& run, int step_number, const fp8::Fp8Tensor& a,
               const fp8::Fp8Tensor& b, RankResult& out) {
    const GemmConfig& cfg = env_.config.gemm;
    for (int i = 0; i < cfg.warmup; ++i) problem.run();
    double* t = out.time_us.data();
    const int iters = cfg.iters;
    std::atomic<std::int64_t>& done = env_.watchdog.progress();
    const auto slow = env_.faults.find("slow", env_.ctx.rank(), "gemm");
    for (int i = 0; i < iters; ++i) {
      const double t0 = now_us();
      problem.run();
      if (slow) {
        // Sleeping, not spinning: the planted straggler steals no CPU from ranks that share
        // its cores, so only its own timings change.
        std::this_thread::sleep_for(
            std::chrono::duration<double, std::micro>((slow->factor - 1) * (now_us() - t0)));
      }
      t[i] = now_us() - t0;
      done.store(i + 1, std::memory_order_relaxed);
    }
    if (auto sdc = env_.faults.find("sdc", env_.ctx.rank(), "gemm");
        sdc && (sdc->step == 0 || sdc->step == step_number)) {
      // The lowest mantissa bit of one element in the middle of D: a change the numeric bound
      // may well accept, so only the hash comparison across ranks can catch it.
      const std::int64_t index = run.shape.m / 2 * run.shape.n + run.shape.n / 2;
      std::fprintf(stderr, "shakedown: inject: %s flips bit 0 of D[%lld] in gemm %s\n",
                   env_.ctx.describe_rank(env_.ctx.rank()).c_str(), static_cast<long long>(index),
                   run.name.c_str());
      problem.flip_output_bit(index, 0);
    }
    out.hash = problem.output_hash();
    const std::int64_t m = run.shape.m;
    std::int64_t sampled = engine_.name() == "cpu" ? kCpuSampledRows : kGpuSampledRows;
    if (engine_.name() == "cpu" && m * run.shape.n <= kCpuAllRowsElements) sampled = m;
    std::vector<std::int64_t> rows;  // empty: all of them
    if (sampled < m) {
      // Evenly spread, first and last included.
      for (std::int64_t r = 0; r < sampled; ++r) rows.push_back(r * (m - 1) / (sampled - 1));
    }
    try {
      const GemmOutput d = rows.empty() ? problem.result() : problem.result_rows(rows);
      out.check = check_gemm_result(a, b, d, rows, roundoff_);
    } catch (const std::bad_alloc&) {
      out.check_note = "not checked: out of host memory for the fp64 reference";
    } catch (const OutOfMemory& e) {
      out.check_note = std::string("not checked: ") + e.what();
    }
    if (!out.check_note.empty()) {
      out.check = {};
      out.check.err_bound_ratio = kNaN;
      out.check.max_rel_err = kNaN;
    }
  }

  void record(const ShapeRun& run, int step_number, std::int64_t skipped,
              const std::string& skip_reason, const RankResult& mine);

  PhaseEnv& env_;
  GemmEngine& engine_;
  const GemmOptions options_;
  const double roundoff_;  // the engine's accumulation unit roundoff, for the error bound
  const std::vector<std::string>& impl_of_rank_;
  Progress& progress_;
};

void ShapeSweep::record(const ShapeRun& run, int step_number, std::int64_t skipped,
                        const std::string& skip_reason, const RankResult& mine) {
  const Context& ctx = env_.ctx;
  // Its own step: a rank stuck in the GEMM (a hung GPU, a wedged BLAS) is then the one named,
  // not rank 0 waiting for it in the gather.
  env_.watchdog.step("gemm " + run.name + ": gather");
  const int world = ctx.world_size();
  const auto iters = static_cast<int>(mine.time_us.size());
  const std::vector<double> t =
      gather_rows<double>(ctx.world(), 0, mine.time_us);  // [iters, world]
  const double check[6] = {mine.check.max_rel_err,
                           mine.check.err_bound_ratio,
                           static_cast<double>(mine.check.worst_index),
                           mine.check.expected,
                           mine.check.got,
                           static_cast<double>(mine.check.rows_checked)};
  std::vector<double> checks(ctx.is_root() ? static_cast<std::size_t>(6 * world) : 0);
  SD_MPI_CHECK(MPI_Gather(check, 6, MPI_DOUBLE, checks.data(), 6, MPI_DOUBLE, 0, ctx.world()));
  std::vector<std::uint64_t> hashes(ctx.is_root() ? static_cast<std::size_t>(world) : 0);
  SD_MPI_CHECK(
      MPI_Gather(&mine.hash, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, 0, ctx.world()));
  const std::vector<std::string> reasons = gather_strings(ctx.world(), 0, skip_reason);
  const std::vector<std::string> notes = gather_strings(ctx.world(), 0, mine.check_note);
  if (!ctx.is_root()) return;

  const auto w64 = static_cast<std::size_t>(world);
  GemmShapeRecord rec;
  rec.order = step_number;
  rec.m = run.shape.m;
  rec.n = run.shape.n;
  rec.k = run.shape.k;
  rec.a_format = std::string(fp8::name(run.a_format));
  rec.b_format = std::string(fp8::name(run.b_format));
  rec.out_dtype = std::string(gemm_out_name(options_.out));
  rec.engine = engine_.name();
  rec.fast_accum = options_.fast_accum;
  rec.flop = 2.0 * static_cast<double>(run.shape.m) * static_cast<double>(run.shape.n) *
             static_cast<double>(run.shape.k);
  rec.skipped = skipped;
  rec.iters = static_cast<std::uint64_t>(iters);
  rec.time_us = t;
  rec.max_rel_err.resize(w64);
  rec.err_bound_ratio.resize(w64);
  rec.worst_expected.resize(w64);
  rec.worst_got.resize(w64);
  rec.worst_index.resize(w64);
  rec.rows_checked.resize(w64);
  rec.hash_group.resize(w64);
  rec.output_hash = hashes;
  // Ranks whose engine description matches share a hash group: only they must agree bit for bit.
  for (int r = 0; r < world; ++r) {
    const double* c = &checks[static_cast<std::size_t>(6 * r)];
    const auto ur = static_cast<std::size_t>(r);
    rec.max_rel_err[ur] = c[0];
    rec.err_bound_ratio[ur] = c[1];
    rec.worst_index[ur] = static_cast<std::int64_t>(c[2]);
    rec.worst_expected[ur] = c[3];
    rec.worst_got[ur] = c[4];
    rec.rows_checked[ur] = static_cast<std::int64_t>(c[5]);
    const std::string& impl = impl_of_rank_[ur];
    auto it = std::find(rec.hash_groups.begin(), rec.hash_groups.end(), impl);
    rec.hash_group[ur] = it - rec.hash_groups.begin();
    if (it == rec.hash_groups.end()) rec.hash_groups.push_back(impl);
  }
  // Every rank that could not, named (describe_rank), with what to do.
  std::vector<std::string> why;
  for (const auto& r : reasons) {
    if (!r.empty()) why.push_back(r);
  }
  rec.skip_reason =
      join(why, "; ") +
      (why.empty() ? "" : " (free memory on those ranks, or drop the shape from gemm.shapes)");
  std::vector<std::string> unchecked;
  for (int r = 0; r < world; ++r) {
    if (!notes[static_cast<std::size_t>(r)].empty()) {
      unchecked.push_back(ctx.describe_rank(r) + ": " + notes[static_cast<std::size_t>(r)]);
    }
  }
  rec.unchecked = join(unchecked, "; ");
  const std::string path = schema::gemm_group(run.name);
  env_.recorder.write([&](RunWriter& w) { write_gemm_shape(w, path, rec); });
}

}  // namespace

void run_gemm(PhaseEnv& env) {
  const GemmConfig& cfg = env.config.gemm;
  const Context& ctx = env.ctx;
  env.watchdog.step("gemm: engine");
  const GpuChoice gpu = choose_gpu(ctx);
  const std::string engine_name = choose_engine(env, gpu);
  std::unique_ptr<GemmEngine> engine = agreed(ctx.world(), [&] {
    if (engine_name == "cublaslt") {
      use_gpu(gpu.device);
      return make_cublaslt_gemm_engine();
    }
    return make_cpu_gemm_engine(cfg.threads > 0 ? cfg.threads : default_gemm_threads(ctx));
  });
  // Only rank 0 groups the hashes by engine description.
  const std::vector<std::string> impl_of_rank =
      gather_strings(ctx.world(), 0, engine->implementation());
  const GemmOptions options{parse_gemm_out(cfg.out_dtype), cfg.fast_accum};
  const std::vector<ShapeRun> runs = plan_shapes(cfg, engine_name == "cublaslt");
  refuse_unreachable_steps(
      env, "gemm", static_cast<long>(runs.size()),
      cfg.format == "hybrid" ? "one per GEMM shape and format" : "one per GEMM shape");
  env.recorder.write([&](RunWriter& w) {
    w.set_attr(schema::kGemmGroup, "engine", engine_name);
    w.set_attr(schema::kGemmGroup, "planned_shapes", static_cast<std::int64_t>(runs.size()));
    w.set_attr(schema::kGemmGroup, "accumulation_roundoff", engine->accumulation_roundoff(options));
  });

  Progress progress("gemm", static_cast<long>(runs.size()), env.progress);
  ShapeSweep sweep(env, *engine, options, impl_of_rank, progress);
  int step_number = 0;
  for (const ShapeRun& run : runs) sweep.run(run, ++step_number);
}

}  // namespace shakedown
