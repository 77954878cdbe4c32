// The train phase: synthetic FP8 training steps of a tensor- and data-parallel transformer
// (train/step.hpp) on every rank. TP groups are consecutive ranks of a node (its node
// communicator split by local_rank / tp); a DP group is the ranks with one TP index across the
// world. Each measured step records every rank's breakdown, its clock-aligned arrival at the DP
// reduction, its bucket timings and the hash of its parameters; rank 0 writes /train's header
// before the first step and queues each step's rows as it completes (record/train_rows.hpp). The
// analysis (analysis/train_report.hpp) judges replicas, stragglers, lateness and MFU from the
// file alone.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "comm/mpi_comm.hpp"
#include "core/error.hpp"
#include "fp8/scaling.hpp"
#include "gemm/engine.hpp"
#include "phases/gpu.hpp"
#include "phases/phase.hpp"
#include "record/gather.hpp"
#include "record/schema.hpp"
#include "record/train_rows.hpp"
#include "runtime/agree.hpp"
#include "runtime/progress.hpp"
#include "topology/discovery.hpp"
#include "train/memory.hpp"
#include "train/model.hpp"
#include "train/step.hpp"

#if SHAKEDOWN_HAVE_CUDA
#include "comm/nccl_comm.hpp"
#include "train/device_step.hpp"
#endif

namespace shakedown {

namespace {

// The step's configuration from `train:` and the checked layout.
train::StepConfig step_config(const TrainConfig& cfg, const train::ModelShape& shape,
                              const train::Parallel& parallel) {
  train::StepConfig c;
  c.shape = shape;
  c.parallel = parallel;
  c.micro_batch = cfg.micro_batch;
  c.seq_len = cfg.seq_len;
  c.recipe = fp8::parse_recipe(cfg.format);
  c.current_scaling = cfg.recipe == "current";
  c.delayed.history_len = cfg.amax_history_len;
  c.delayed.algo = fp8::parse_amax_algo(cfg.amax_compute_algo);
  c.delayed.margin = cfg.margin;
  c.overlap = cfg.overlap;
  c.bucket_mb = cfg.bucket_mb;
  return c;
}

// The budget `shakedown plan` would print for this config, against rank 0's GPU when it has one.
void memory_budget(const Context& ctx, const TrainConfig& cfg, const train::ModelShape& shape,
                   const train::Parallel& parallel, TrainRecord& rec) {
  double device_bytes = 0;
  const GpuChoice gpu = choose_gpu(ctx);
  if (gpu.device >= 0) {
    for (const GpuInfo& g : cuda_devices().gpus) {
      if (g.index == gpu.device) {
        device_bytes = static_cast<double>(g.memory_bytes);
        rec.memory_device = g.name;
      }
    }
  }
  train::TrainingRequest req;
  req.shape = shape;
  req.parallel = parallel;
  req.micro_batch = cfg.micro_batch;
  req.seq_len = cfg.seq_len;
  req.recompute = train::Recompute::kNone;  // the step keeps every activation
  req.bucket_mb = cfg.bucket_mb;
  const train::MemoryBudget b = train::training_budget(req, device_bytes);
  rec.memory_bytes = b.total_bytes;
  rec.memory_device_bytes = device_bytes;
  std::ostringstream items;
  for (const train::MemoryItem& item : b.items) {
    char line[160];
    std::snprintf(line, sizeof line, "%s %.3f GiB (%s)\n", item.name.c_str(),
                  item.bytes / double(1ull << 30), item.basis.c_str());
    items << line;
  }
  rec.memory_items = items.str();
}

// One measured step of this rank, as rank 0 gathers it: doubles and the hash side by side as
// 64-bit words (one gather a step carries all of it).
std::vector<std::uint64_t> pack_step(const train::StepTimes& t, const train::Step& ran,
                                     double offset_us) {
  std::vector<double> v = {t.step_s * 1e3,
                           t.fwd_s * 1e3,
                           t.bwd_s * 1e3,
                           t.tp_comm_s * 1e3,
                           t.dp_exposed_s * 1e3,
                           t.dp_span_s * 1e3,
                           t.optim_s * 1e3,
                           t.backward_end_s * 1e6 - offset_us,  // on rank 0's clock
                           ran.zero_gradient_share()};
  const auto& timings = ran.bucket_timings();
  const std::size_t nb = ran.buckets().buckets.size();
  for (std::size_t b = 0; b < nb; ++b) {
    v.push_back(b < timings.size() ? timings[b].start_s * 1e6 - offset_us : std::nan(""));
  }
  for (std::size_t b = 0; b < nb; ++b) {
    v.push_back(b < timings.size() ? timings[b].end_s * 1e6 - offset_us : std::nan(""));
  }
  std::vector<std::uint64_t> out;
  out.reserve(v.size() + 1);
  for (double x : v) out.push_back(std::bit_cast<std::uint64_t>(x));
  out.push_back(ran.parameter_hash());
  return out;
}
constexpr std::size_t kStepScalars = 9;  // pack_step's doubles before the buckets

// Rank 0: the gathered words of one step ([world][kStepScalars + 2 buckets + 1]) as the rows
// /train appends, with the times after the step's earliest arrival at the DP reduction (who the
// others waited for).
TrainStepRows unpack_step(const std::vector<std::uint64_t>& words, std::size_t world,
                          std::size_t nb) {
  const std::size_t width = kStepScalars + 2 * nb + 1;
  const auto at = [&](std::size_t r, std::size_t i) {
    return std::bit_cast<double>(words[r * width + i]);
  };
  TrainStepRows s;
  std::vector<double>* scalars[kStepScalars] = {
      &s.step_ms,    &s.fwd_ms,   &s.bwd_ms,        &s.tp_comm_ms,     &s.dp_exposed_ms,
      &s.dp_span_ms, &s.optim_ms, &s.dp_arrival_us, &s.zero_grad_share};
  for (std::size_t r = 0; r < world; ++r) {
    for (std::size_t i = 0; i < kStepScalars; ++i) scalars[i]->push_back(at(r, i));
    s.param_hash.push_back(words[r * width + width - 1]);
  }
  const double base = *std::min_element(s.dp_arrival_us.begin(), s.dp_arrival_us.end());
  for (double& a : s.dp_arrival_us) a -= base;
  s.bucket_start_us.resize(nb * world);
  s.bucket_end_us.resize(nb * world);
  for (std::size_t b = 0; b < nb; ++b) {
    for (std::size_t r = 0; r < world; ++r) {
      s.bucket_start_us[b * world + r] = at(r, kStepScalars + b) - base;
      s.bucket_end_us[b * world + r] = at(r, kStepScalars + nb + b) - base;
    }
  }
  return s;
}

}  // namespace

void run_train(PhaseEnv& env) {
  const TrainConfig& cfg = env.config.train;
  const Context& ctx = env.ctx;
  env.watchdog.step("train: layout");
  // On GPUs (asked, or auto and every rank has a GPU of its own: NCCL takes one GPU per rank)
  // the step is device-resident: cuBLASLt GEMMs, TP and DP over NCCL (train/device_step.hpp).
  // Else on the host: OpenBLAS and MPI (train/step.hpp). The same on every rank
  // (choose_gpu_path is collective).
  const GpuChoice gpu = choose_gpu(ctx);
  const bool on_gpu =
      choose_gpu_path(ctx, gpu, "train.engine", cfg.engine, "cublaslt", "cpu", /*exclusive=*/true);
  // The config and the layout are the same on every rank, so are these errors: reported once.
  const train::ModelShape shape = agreed(ctx.world(), [&] { return train::model_shape(cfg); });
  const train::Parallel parallel = agreed(ctx.world(), [&] {
    return train::check_parallel(
        shape, cfg,
        train::LayoutFacts{ctx.world_size(), ctx.ranks_per_node(), /*gpu=*/on_gpu, /*known=*/true});
  });
  const int tp = parallel.tp;
  // TP inside the node: consecutive local ranks; DP: one TP index across the world, ordered by
  // TP group (node, then group in the node), so a rank's dp_rank is its TP group's index and the
  // ranks of one TP group share it (and the batch seed), however ranks are numbered across nodes.
  CommHandle tp_comm = comm_split(ctx.node(), ctx.local_rank() / tp, ctx.local_rank());
  CommHandle dp_comm = comm_split(ctx.world(), ctx.local_rank() % tp, tp_group_index(ctx, tp));

  env.watchdog.step("train: allocate");
#if SHAKEDOWN_HAVE_CUDA
  // The NCCL communicators: the world, split as the MPI groups above. A watchdog timeout aborts
  // them (ncclCommAbort from its thread) so no GPU is left spinning on a dead peer; declared
  // after them, so unregistered before they go; before the step, which uses them.
  std::unique_ptr<NcclComm> nccl_world, nccl_tp, nccl_dp;
  Watchdog::AbortRegistration abort_nccl;
#endif
  std::unique_ptr<MpiComm> tp_host;
  std::unique_ptr<GemmEngine> engine;
  std::unique_ptr<train::Step> step;
  if (on_gpu) {
#if SHAKEDOWN_HAVE_CUDA
    env.watchdog.step("train: nccl communicators");
    use_gpu(gpu.device);
    nccl_world = NcclComm::create(ctx.world(), gpu.device);
    nccl_tp = nccl_world->split(tp_group_index(ctx, tp), ctx.local_rank());
    nccl_dp = nccl_world->split(ctx.local_rank() % tp, tp_group_index(ctx, tp));
    abort_nccl = env.watchdog.on_abort([&] {
      abort_busy_first({nccl_dp.get(), nccl_tp.get(), nccl_world.get()});
    });
    env.watchdog.step("train: allocate");
    step = agreed(ctx.world(), [&]() -> std::unique_ptr<train::Step> {
      return std::make_unique<train::DeviceTrainStep>(step_config(cfg, shape, parallel), *nccl_tp,
                                                      *nccl_dp);
    });
#else
    throw InternalError("train: the GPU step chosen in a build without CUDA");
#endif
  } else {
    const GemmConfig& gemm = env.config.gemm;
    tp_host = std::make_unique<MpiComm>(tp_comm.get());
    engine = make_cpu_gemm_engine(gemm.threads > 0 ? gemm.threads : default_gemm_threads(ctx));
    step = agreed(ctx.world(), [&]() -> std::unique_ptr<train::Step> {
      return std::make_unique<train::TrainStep>(step_config(cfg, shape, parallel), *engine,
                                                *tp_host, dp_comm.get());
    });
  }

  const auto slow = env.faults.find("slow", ctx.rank(), "train");
  const auto sdc = env.faults.find("sdc", ctx.rank(), "train");
  train::StepFault fault;
  if (slow) fault.slow_factor = slow->factor;
  for (int i = 0; i < cfg.warmup_steps; ++i) {
    env.watchdog.step("train warm-up step " + std::to_string(i + 1), env.config.timeouts.phase_s);
    step->run(-1 - i, fault);
  }
  // /train's header before the first step; each step's rows are queued as soon as it is measured,
  // so a run that stops mid-phase keeps the steps before (the recorder writes what is queued
  // when the watchdog ends the run).
  env.watchdog.step("train: header");
  MPI_Comm world = ctx.world();
  const std::size_t nb = step->buckets().buckets.size();
  const std::int64_t place[2] = {ctx.local_rank() % tp, comm_rank(dp_comm.get())};
  std::vector<std::int64_t> places(ctx.is_root() ? 2 * static_cast<std::size_t>(ctx.world_size())
                                                 : 0);
  SD_MPI_CHECK(MPI_Gather(place, 2, MPI_INT64_T, places.data(), 2, MPI_INT64_T, 0, world));
  if (ctx.is_root()) {
    TrainRecord rec;
    rec.steps_planned = cfg.steps;
    rec.buckets = nb;
    rec.world = static_cast<std::uint64_t>(ctx.world_size());
    for (std::uint64_t r = 0; r < rec.world; ++r) {
      rec.tp_rank.push_back(places[2 * r]);
      rec.dp_rank.push_back(places[2 * r + 1]);
    }
    for (const train::Bucket& b : step->buckets().buckets) {
      rec.bucket_bytes.push_back(b.elements * static_cast<std::int64_t>(sizeof(float)));
    }
    rec.model = shape.name;
    rec.mlp = shape.mlp == train::Mlp::kSwiglu ? "swiglu" : "gelu";
    rec.recipe = cfg.recipe;
    rec.format = cfg.format;
    rec.engine = step->engine();
    rec.communication = step->communication();
    rec.layers = shape.layers;
    rec.hidden = shape.hidden;
    rec.ffn_hidden = shape.ffn_hidden;
    rec.heads = shape.heads;
    rec.kv_heads = shape.kv_heads;
    rec.seq_len = cfg.seq_len;
    rec.micro_batch = cfg.micro_batch;
    rec.tp = parallel.tp;
    rec.dp = parallel.dp;
    rec.zero = parallel.zero;
    rec.sequence_parallel = parallel.sequence_parallel;
    rec.overlap = cfg.overlap;
    rec.warmup_steps = cfg.warmup_steps;
    rec.parameters = static_cast<std::int64_t>(train::parameter_count(shape));
    rec.rank_flop = step->flops_per_step();
    rec.tokens_per_step = step->tokens_per_step() * parallel.dp;
    memory_budget(ctx, cfg, shape, parallel, rec);
    env.recorder.write([&](RunWriter& writer) { write_train_header(writer, rec); });
  }
  // Rank 0's writing stays out of the steps: the others wait here (untimed) rather than at the
  // first step's DP reduction, where rank 0 would look late; during the steps the writer
  // thread holds its jobs until the phase ends (the CPU GEMMs use every CPU of rank 0).
  SD_MPI_CHECK(MPI_Barrier(world));
  Recorder::Hold hold(env.recorder);

  Progress progress("train", cfg.steps, env.progress);
  const std::size_t width = kStepScalars + 2 * nb + 1;
  std::vector<std::uint64_t> gathered(
      ctx.is_root() ? width * static_cast<std::size_t>(ctx.world_size()) : 0);
  for (int n = 1; n <= cfg.steps; ++n) {
    Watchdog::StepPlan plan;
    plan.total = 1;
    begin_measured_step(env, "train", n, "train step " + std::to_string(n), progress, plan);
    train::StepFault f = fault;
    if (sdc && (sdc->step == 0 || sdc->step == n)) {
      std::fprintf(stderr, "shakedown: inject: %s flips one bit of its %s in train step %d\n",
                   ctx.describe_rank(ctx.rank()).c_str(),
                   parallel.zero == 1 ? "parameters after their all-gather" : "reduced gradient",
                   n);
      f.flip_gradient_bit = true;
    }
    const train::StepTimes t = step->run(n, f);
    env.watchdog.progress().store(1, std::memory_order_relaxed);
    // Outside the step's timings: every rank's row to rank 0, queued for the writer (held).
    const std::vector<std::uint64_t> mine = pack_step(t, *step, ctx.clock_offset_us());
    SD_MPI_CHECK(MPI_Gather(mine.data(), static_cast<int>(width), MPI_UINT64_T, gathered.data(),
                            static_cast<int>(width), MPI_UINT64_T, 0, world));
    if (ctx.is_root()) {
      env.recorder.write_async(
          [rows = unpack_step(gathered, static_cast<std::size_t>(ctx.world_size()), nb),
           w = static_cast<std::uint64_t>(ctx.world_size()),
           nb](RunWriter& writer) { append_train_step(writer, rows, w, nb); },
          gathered.size() * sizeof(std::uint64_t));
    }
    SD_MPI_CHECK(MPI_Barrier(world));  // rank 0's share of the gather, untimed, for everyone
  }

  env.watchdog.step("train: gather");
  const std::int64_t finite = step->scales_finite() ? 1 : 0;
  std::vector<std::int64_t> all_finite(ctx.is_root() ? static_cast<std::size_t>(ctx.world_size())
                                                     : 0);
  SD_MPI_CHECK(MPI_Gather(&finite, 1, MPI_INT64_T, all_finite.data(), 1, MPI_INT64_T, 0, world));
  if (!ctx.is_root()) return;
  env.recorder.write([&](RunWriter& writer) { write_train_end(writer, all_finite); });
}

}  // namespace shakedown
