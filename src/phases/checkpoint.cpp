// The checkpoint phase: every rank writes a shard the way training frameworks do (file per
// process, or one shared file through POSIX or MPI-IO), the checkpoint is committed (metadata
// written to a temporary name, fsynced, renamed, the folder fsynced), and every rank then
// restores the shard a rank on another node wrote (IOR's -C shift by ranks per node) and checks
// every block against the committed checksums and the content it should hold. Each iteration
// is timed as IOR does: aggregate bandwidth = all bytes / (latest end - earliest start) on
// aligned clocks. Rank 0 writes /checkpoint once, after the last iteration; the analysis
// (analysis/checkpoint_report.hpp) judges it from the file alone. Only what this run created
// is ever removed (storage/files.hpp Created).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "core/error.hpp"
#include "core/host.hpp"
#include "core/stats.hpp"
#include "fp8/tensor.hpp"
#include "gemm/engine.hpp"
#include "phases/phase.hpp"
#include "record/checkpoint_rows.hpp"
#include "record/gather.hpp"
#include "record/recorder.hpp"
#include "runtime/agree.hpp"
#include "runtime/clock.hpp"
#include "runtime/progress.hpp"
#include "storage/backend.hpp"
#include "storage/files.hpp"
#include "storage/shard.hpp"
#include "train/memory.hpp"
#include "train/model.hpp"

namespace shakedown {

namespace {

namespace fs = std::filesystem;

// MemAvailable from /proc/meminfo, bytes; 0 when it cannot be read.
double available_memory_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  double kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib * 1024;
}

// O_DIRECT's rule on `dir`: every block and shard a multiple of the file system's offset
// alignment (at least 512). "" when block and bytes (0: not known yet) keep it.
std::string direct_io_problem(const fs::path& dir, std::uint64_t align, std::uint64_t block,
                              std::uint64_t bytes) {
  const std::uint64_t a = std::max<std::uint64_t>(align, 512);
  if (block % a == 0 && bytes % a == 0) return "";
  return "checkpoint.direct_io: O_DIRECT on " + dir.string() +
         " needs checkpoint.block_size and bytes_per_rank in multiples of " + std::to_string(a) +
         " bytes";
}

// Whose shard `rank` restores: the rank one node on (IOR -C), or the next rank with one node.
int source_rank(const Context& ctx, int rank) {
  const int world = ctx.world_size();
  const int shift = ctx.node_count() > 1 && ctx.ranks_per_node() > 0 ? ctx.ranks_per_node() : 1;
  return (rank + shift) % world;
}

// This rank's measurements, one per iteration.
struct Samples {
  std::vector<double> open, write, fsync, close, read;
  std::vector<double> write_start, write_end, read_start, read_end;  // aligned, seconds
  std::vector<std::int64_t> verify_ok, bad_offset, cache_dropped;
  std::vector<double> snapshot, step_before, step_during;  // async only
  std::vector<std::int64_t> steps_during;
};

// checkpoint.async's stand-in for training: one FP8 GEMM per "step" on the CPU engine, timed
// before the checkpoint and while its write runs in the background.
class TrainingStandIn {
 public:
  explicit TrainingStandIn(int threads) : engine_(make_cpu_gemm_engine(threads)) {
    constexpr std::int64_t kDim = 256;
    std::vector<float> v(static_cast<std::size_t>(kDim * kDim));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 13) * 0.25f - 1.5f;
    a_ = fp8::quantize_tensor(v, kDim, kDim, fp8::Format::kE4M3, 1.0f);
    b_ = fp8::quantize_tensor(v, kDim, kDim, fp8::Format::kE4M3, 1.0f);
    problem_ = engine_->prepare(a_, b_, GemmOptions{});
  }
  double step() {
    const double t0 = now_us();
    problem_->run();
    return (now_us() - t0) * 1e-3;  // ms
  }

 private:
  std::unique_ptr<GemmEngine> engine_;
  fp8::Fp8Tensor a_, b_;
  std::unique_ptr<GemmProblem> problem_;
};

// Baseline steps before each async checkpoint, after untimed warm-up ones: 3 cold steps against
// hundreds during the write read as the write making training 14-21% faster.
constexpr int kWarmStepsBefore = 3;
constexpr int kStepsBefore = 20;

// What this run created: each rank its shards (and the shared file on rank 0), rank 0 the
// folders. Removal: files everywhere first, then rank 0's folders (collective).
struct Made {
  storage::Created files, dirs;

  void remove(MPI_Comm world, bool root, const fs::path& under) {
    std::vector<std::string> left = files.remove_all(under);
    MPI_Barrier(world);
    if (root) {
      const auto more = dirs.remove_all(under);
      left.insert(left.end(), more.begin(), more.end());
    }
    for (const std::string& l : left) {
      std::fprintf(stderr, "shakedown: checkpoint: could not remove %s\n", l.c_str());
    }
  }
};

// Checks one restored shard against the committed checksums, then finds the first wrong byte
// of a failing block from the content it should hold. Returns it, or -1. A block whose content
// is right but whose checksum is not says the metadata is wrong: its first byte is returned.
std::int64_t verify_shard(std::span<const std::byte> got, const storage::ShardMeta& meta,
                          std::uint64_t block, int step) {
  const std::vector<std::uint64_t> sums = storage::block_checksums(got, block);
  if (meta.checksums.size() != sums.size()) return 0;
  std::vector<std::byte> expect;
  for (std::size_t b = 0; b < sums.size(); ++b) {
    if (sums[b] == meta.checksums[b]) continue;
    const std::uint64_t at = b * block;
    const std::uint64_t n = std::min<std::uint64_t>(block, got.size() - at);
    expect.resize(n);
    storage::fill_shard(expect, storage::shard_seed(meta.rank, step), at);
    const std::uint64_t d = storage::first_difference(got.subspan(at, n), expect);
    return static_cast<std::int64_t>(at + (d < n ? d : 0));
  }
  return -1;
}

// The folder this run's checkpoints go to: <checkpoint.dir>/<run>.ckpt, or next to the run file
// when checkpoint.dir is "". Rank 0 creates it (a new name if one exists) and tells the others.
fs::path make_root(PhaseEnv& env, Made& made) {
  const CheckpointConfig& cfg = env.config.checkpoint;
  const fs::path run = env.recorder.final_path();
  const fs::path base = cfg.dir.empty() ? run.parent_path() : fs::path(cfg.dir);
  std::string chosen;
  agreed(env.ctx.world(), [&] {
    if (!env.ctx.is_root()) return;
    const std::string stem = run.stem().string() + ".ckpt";
    fs::path p = (base.empty() ? fs::path(".") : base) / stem;
    for (int i = 2; !made.dirs.make_dir(p, {}); ++i) {
      p = (base.empty() ? fs::path(".") : base) / (stem + "-" + std::to_string(i));
      if (i > 1000) throw RuntimeFault("cannot find a free name for " + p.string());
    }
    chosen = p.string();
  });
  return bcast_string(env.ctx.world(), 0, chosen);
}

// This rank's shard: checkpoint.bytes_per_rank, or (from_train) its share of the train config's
// checkpoint, numbered by TP group as the train phase numbers its DP replicas.
std::uint64_t shard_bytes(const PhaseEnv& env) {
  const CheckpointConfig& cfg = env.config.checkpoint;
  if (!cfg.from_train) return cfg.bytes_per_rank;
  const Context& ctx = env.ctx;
  const train::ModelShape shape = train::model_shape(env.config.train);
  const train::Parallel parallel = train::check_parallel(
      shape, env.config.train,
      train::LayoutFacts{ctx.world_size(), ctx.ranks_per_node(), /*gpu=*/false, /*known=*/true});
  return std::max<std::uint64_t>(
      1, train::checkpoint_shard(shape, parallel, tp_group_index(ctx, parallel.tp)).total());
}

}  // namespace

void check_checkpoint_dir(const Context& ctx, const CheckpointConfig& cfg) {
  if (cfg.dir.empty()) return;  // next to the run file, which is being written
  const std::string where = ctx.describe_rank(ctx.rank());
  std::error_code ec;
  const fs::file_status st = fs::status(cfg.dir, ec);
  if (!fs::exists(st)) {
    throw UsageError("checkpoint.dir " + cfg.dir + " does not exist on " + where +
                     ": create it (on the parallel file system, so every node sees it) or set "
                     "checkpoint.dir to a folder that does");
  }
  if (!fs::is_directory(st)) {
    throw UsageError("checkpoint.dir " + cfg.dir + " is not a folder on " + where);
  }
  // A probe folder tells more than access(): read-only mounts, quotas, root squash, ACLs.
  const fs::path probe = fs::path(cfg.dir) / (".shakedown-probe-" + local_hostname() + "-" +
                                              std::to_string(::getpid()));
  if (::mkdir(probe.c_str(), 0700) != 0) {
    const int err = errno;
    throw UsageError("checkpoint.dir " + cfg.dir + " is not writable on " + where + " (" +
                     std::strerror(err) + "): choose a folder this user can write to");
  }
  // O_DIRECT's rules, before any phase runs: the file system takes it at all, and the sizes
  // are multiples of its alignment (from_train sizes are rounded up in the phase).
  std::string direct_problem;
  if (cfg.direct_io) {
    const fs::path file = probe / "direct";
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
    const int err = errno;
    if (fd < 0) {
      direct_problem = "checkpoint.direct_io: " + cfg.dir + " does not support O_DIRECT on " +
                       where + " (" + std::strerror(err) +
                       "): set checkpoint.direct_io: false for this file system";
    } else {
      ::close(fd);
      // from_train sizes are rounded up to the alignment in the phase.
      direct_problem = direct_io_problem(cfg.dir, storage::fs_info(probe).dio_offset_align,
                                         cfg.block_size, cfg.from_train ? 0 : cfg.bytes_per_rank);
    }
    ::unlink(file.c_str());
  }
  ::rmdir(probe.c_str());
  if (!direct_problem.empty()) throw UsageError(direct_problem);
}

void check_checkpoint_shared(const Context& ctx, const CheckpointConfig& cfg,
                             const fs::path& run_dir) {
  MPI_Comm world = ctx.world();
  const fs::path dir = !cfg.dir.empty() ? fs::path(cfg.dir) : run_dir.empty() ? "." : run_dir;
  std::string probe;
  agreed(world, [&] {
    if (!ctx.is_root()) return;
    std::error_code ec;
    fs::create_directories(dir, ec);  // the run file's folder: the run would create it anyway
    const fs::path p =
        dir / (".shakedown-visible-" + local_hostname() + "-" + std::to_string(::getpid()));
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    const int err = errno;
    // The run file's own folder: when it cannot be written, creating the run file says so
    // (exit 3, naming the file), which is the error to see first.
    if (fd < 0 && cfg.dir.empty()) return;
    if (fd < 0) {
      throw UsageError("checkpoint folder " + dir.string() + ": cannot create a file in it on " +
                       ctx.describe_rank(0) + " (" + std::strerror(err) +
                       "): set checkpoint.dir to a folder this user can write to");
    }
    ::close(fd);
    probe = p.string();
  });
  probe = bcast_string(world, 0, probe);
  if (probe.empty()) return;
  const std::string type = storage::fs_info(dir).type;
  try {
    agreed(world, [&] {
      if (ctx.is_root()) return;
      std::error_code ec;
      if (!fs::exists(probe, ec)) {
        throw UsageError("checkpoint folder " + dir.string() + " is not the same folder on " +
                         ctx.describe_rank(ctx.rank()) + " as on " + ctx.describe_rank(0) +
                         ": it is on a file system of one node (" + type +
                         " there), so a restore on another node could not read a shard; set "
                         "checkpoint.dir to a folder on the parallel file system every node "
                         "mounts");
      }
    });
  } catch (...) {
    if (ctx.is_root()) ::unlink(probe.c_str());
    throw;
  }
  if (ctx.is_root()) ::unlink(probe.c_str());
}

void run_checkpoint(PhaseEnv& env) {
  const CheckpointConfig& cfg = env.config.checkpoint;
  const Context& ctx = env.ctx;
  MPI_Comm world = ctx.world();
  const int rank = ctx.rank();
  // Storage errors are raised through agreed() and reported with the failing rank and host
  // (rank 0's by the report itself): the storage calls are given no "where" of their own.
  env.watchdog.step("checkpoint: folder");

  Made made;
  const fs::path root = make_root(env, made);
  const storage::FsInfo fsi = storage::fs_info(root);
  if (ctx.is_root() && fsi.node_local && ctx.node_count() > 1 && ctx.virtual_nodes() <= 1) {
    std::fprintf(stderr,
                 "shakedown: warning: checkpoint.dir is on %s (node-local): a restore on another "
                 "node cannot read it; point it at the parallel file system\n",
                 fsi.type.c_str());
  }
  // The checkpoints completed so far: rank 0 keeps their record, gathered after each one
  // (below), so a failure in a later one, or a run the watchdog ends in this phase (a hang, a
  // signal, a rank that died: no gather is possible then), still writes their measurements.
  int done = 0;
  fs::path current_step;  // the checkpoint being made, while one is
  std::mutex latest_mutex;
  std::optional<CheckpointRecord> latest;  // rank 0, under latest_mutex
  bool recorded = false;                   // under latest_mutex
  // Writes `rec` to /checkpoint (rank 0), once.
  auto write_record = [&](RunWriter& writer, const CheckpointRecord& rec) {
    write_checkpoint(writer, rec);
    std::lock_guard lock(latest_mutex);
    recorded = true;
  };
  auto fail_cleanly = [&](const std::function<void()>& fn) {
    try {
      agreed(world, fn);
    } catch (...) {
      if (ctx.is_root()) {
        std::optional<CheckpointRecord> rec;
        {
          std::lock_guard lock(latest_mutex);
          rec = latest;
        }
        try {
          if (rec) env.recorder.write([&](RunWriter& w) { write_record(w, *rec); });
        } catch (const std::exception& e) {
          std::fprintf(stderr, "shakedown: checkpoint: could not record the %d completed: %s\n",
                       done, e.what());
        }
      }
      // This run's partial checkpoint goes; what was there before stays, and so do this run's
      // verified checkpoints with cleanup off (with it on, each went once verified, and keep
      // asks for the last one only, which was not made).
      const bool keep_verified = !cfg.cleanup;
      made.remove(world, ctx.is_root(),
                  keep_verified && !current_step.empty() ? current_step : root);
      throw;
    }
  };
  const std::uint64_t block = cfg.block_size;
  std::uint64_t bytes = 0;
  fail_cleanly([&] { bytes = shard_bytes(env); });
  if (cfg.direct_io) {
    fail_cleanly([&] {
      // Checked before any phase for checkpoint.dir; again here for the run file's folder.
      const std::uint64_t a = std::max<std::uint64_t>(fsi.dio_offset_align, 512);
      if (cfg.from_train) bytes = (bytes + a - 1) / a * a;  // O_DIRECT writes whole blocks
      const std::string problem = direct_io_problem(root, a, block, bytes);
      if (!problem.empty()) throw UsageError(problem);
    });
  }
  const bool shared = cfg.layout == "shared_file";
  std::unique_ptr<storage::ShardBackend> backend;
  fail_cleanly([&] { backend = storage::make_backend(cfg.api, cfg.layout, world); });
  const auto slow = env.faults.find("slow", rank, "checkpoint");
  const auto corrupt = env.faults.find("corrupt", rank, "checkpoint");
  const auto ioerror = env.faults.find("ioerror", rank, "checkpoint");
  const int source = source_rank(ctx, rank);

  // Shards may differ (from_train): the largest sets the collective MPI-IO calls; a shared file
  // holds them one after the other; each rank's restore buffer is its source's size.
  std::uint64_t max_bytes = 0, offset = 0;
  SD_MPI_CHECK(MPI_Allreduce(&bytes, &max_bytes, 1, MPI_UINT64_T, MPI_MAX, world));
  SD_MPI_CHECK(MPI_Exscan(&bytes, &offset, 1, MPI_UINT64_T, MPI_SUM, world));
  if (rank == 0) offset = 0;  // MPI_Exscan leaves rank 0's undefined
  std::vector<std::uint64_t> all_bytes(static_cast<std::size_t>(ctx.world_size()));
  SD_MPI_CHECK(MPI_Allgather(&bytes, 1, MPI_UINT64_T, all_bytes.data(), 1, MPI_UINT64_T, world));
  const std::vector<std::uint64_t> all_offsets =
      gather_rows<std::uint64_t>(world, 0, std::span<const std::uint64_t>(&offset, 1));
  const std::uint64_t source_bytes = all_bytes[static_cast<std::size_t>(source)];
  std::unique_ptr<storage::AlignedBuffer> out, in, staging;
  std::unique_ptr<TrainingStandIn> stand_in;
  fail_cleanly([&] {
    // The buffers of every rank on this host against what the host has free: refused (exit 2)
    // rather than left to the OOM killer, which ends a rank without a word.
    const double need = static_cast<double>(bytes * (cfg.async ? 2 : 1) + source_bytes);
    const double host_need = need * std::max(1, ctx.host_local_size());
    const double avail = available_memory_bytes();
    if (avail > 0 && host_need > 0.9 * avail) {
      throw UsageError("checkpoint: the shards need " + std::to_string(host_need / (1 << 20)) +
                       " MiB of host memory on " + local_hostname() + " (" +
                       std::to_string(ctx.host_local_size()) + " rank(s)), more than 90% of its " +
                       std::to_string(avail / (1 << 20)) +
                       " MiB available: use a smaller checkpoint.bytes_per_rank (or train "
                       "config with from_train), or fewer ranks per node");
    }
    out = std::make_unique<storage::AlignedBuffer>(bytes, fsi.dio_mem_align);
    in = std::make_unique<storage::AlignedBuffer>(source_bytes, fsi.dio_mem_align);
    if (cfg.async) {
      staging = std::make_unique<storage::AlignedBuffer>(bytes, fsi.dio_mem_align);
      stand_in = std::make_unique<TrainingStandIn>(
          env.config.gemm.threads > 0 ? env.config.gemm.threads : default_gemm_threads(ctx));
    }
  });
  // Every shard's writer host, for the metadata (rank 0).
  const std::vector<std::string> hosts = gather_strings(world, 0, local_hostname());
  Progress progress("checkpoint", cfg.iters, env.progress);
  Samples mine;
  const double offset_s = ctx.clock_offset_us() * 1e-6;

  // The completed checkpoints' rows (`done` of them), gathered to rank 0: collective; the
  // record on rank 0, none elsewhere. Rows a failed checkpoint left on some ranks are not among
  // them.
  auto build = [&]() -> std::optional<CheckpointRecord> {
    env.watchdog.step("checkpoint: gather");
    Samples m = mine;
    const auto n_done = static_cast<std::size_t>(done);
    for (auto* v : {&m.open, &m.write, &m.fsync, &m.close, &m.read, &m.write_start, &m.write_end,
                    &m.read_start, &m.read_end, &m.snapshot, &m.step_before, &m.step_during}) {
      v->resize(std::min(v->size(), n_done));
    }
    for (auto* v : {&m.verify_ok, &m.bad_offset, &m.cache_dropped, &m.steps_during}) {
      v->resize(std::min(v->size(), n_done));
    }
    CheckpointRecord rec;
    rec.iters = static_cast<std::uint64_t>(done);
    rec.world = static_cast<std::uint64_t>(ctx.world_size());
    auto gather = [&](const std::vector<double>& v) {
      return gather_rows<double>(world, 0, std::span<const double>(v));
    };
    auto gather_int = [&](const std::vector<std::int64_t>& v) {
      return gather_rows<std::int64_t>(world, 0, std::span<const std::int64_t>(v));
    };
    rec.open_s = gather(m.open);
    rec.write_s = gather(m.write);
    rec.fsync_s = gather(m.fsync);
    rec.close_s = gather(m.close);
    rec.read_s = gather(m.read);
    rec.write_start_s = gather(m.write_start);
    rec.write_end_s = gather(m.write_end);
    rec.read_start_s = gather(m.read_start);
    rec.read_end_s = gather(m.read_end);
    rec.verify_ok = gather_int(m.verify_ok);
    rec.bad_offset = gather_int(m.bad_offset);
    rec.cache_dropped = gather_int(m.cache_dropped);
    rec.async = cfg.async;
    if (cfg.async) {
      rec.snapshot_s = gather(m.snapshot);
      rec.step_ms_before = gather(m.step_before);
      rec.step_ms_during = gather(m.step_during);
      rec.steps_during = gather_int(m.steps_during);
    }
    const std::int64_t place[2] = {static_cast<std::int64_t>(bytes), source};
    std::vector<std::int64_t> places(ctx.is_root() ? 2 * rec.world : 0);
    SD_MPI_CHECK(MPI_Gather(place, 2, MPI_INT64_T, places.data(), 2, MPI_INT64_T, 0, world));

    const fs::path last = root / ("step_" + std::to_string(done));
    if (!ctx.is_root()) return std::nullopt;

    const std::size_t W = rec.world;
    double total = 0;
    for (std::size_t r = 0; r < W; ++r) {
      rec.bytes.push_back(places[2 * r]);
      rec.reads_shard_of.push_back(places[2 * r + 1]);
      total += static_cast<double>(places[2 * r]);
    }
    for (std::size_t i = 0; i < rec.iters; ++i) {
      auto span_of = [&](std::vector<double>& start, std::vector<double>& end) {
        const double a = *std::min_element(start.begin() + i * W, start.begin() + (i + 1) * W);
        const double b = *std::max_element(end.begin() + i * W, end.begin() + (i + 1) * W);
        return std::pair{a, b};
      };
      const auto [ws, we] = span_of(rec.write_start_s, rec.write_end_s);
      const auto [rs, re] = span_of(rec.read_start_s, rec.read_end_s);
      rec.write_gbps.push_back(total / (we - ws) / 1e9);
      rec.read_gbps.push_back(total / (re - rs) / 1e9);
      rec.restore_s.push_back(re - rs);
      // Stamps after the iteration's earliest write start.
      for (std::size_t k = i * W; k < (i + 1) * W; ++k) {
        for (auto* v : {&rec.write_start_s, &rec.write_end_s, &rec.read_start_s, &rec.read_end_s}) {
          (*v)[k] -= ws;
        }
      }
    }
    rec.layout = cfg.layout;
    rec.api = cfg.api;
    rec.dir = root.string();
    rec.fs_type = fsi.type;
    rec.fs_mount = fsi.mount_point;
    rec.fs_options = fsi.options;
    rec.fs_node_local = fsi.node_local;
    rec.block_size = static_cast<std::int64_t>(block);
    rec.fsync = cfg.fsync;
    rec.direct_io = cfg.direct_io;
    // With cleanup on, only the last checkpoint of a run that made them all can be kept.
    const bool all_made = done == cfg.iters;
    rec.kept = cfg.cleanup && (!cfg.keep || !all_made) ? "" : (cfg.cleanup ? last : root).string();
    return rec;
  };
  // A run the watchdog ends in this phase writes the record as the run file is marked aborted,
  // naming the folder this run's files stay in.
  std::unique_ptr<Recorder::AbortWriteRegistration> on_abort;
  if (ctx.is_root()) {
    on_abort = env.recorder.on_abort([&](RunWriter& writer) {
      std::lock_guard lock(latest_mutex);
      if (recorded) return;
      std::fprintf(stderr,
                   "shakedown: checkpoint: the run ended in the phase; this run's files stay "
                   "under %s (it made that folder: `rm -r %s` removes them)\n",
                   root.c_str(), root.c_str());
      if (!latest) return;
      CheckpointRecord rec = *latest;
      rec.kept = root.string();
      write_checkpoint(writer, rec);
      recorded = true;  // (under latest_mutex already: not write_record)
    });
  }

  for (int n = 1; n <= cfg.iters; ++n) {
    Watchdog::StepPlan plan;
    begin_measured_step(env, "checkpoint", n, "checkpoint step " + std::to_string(n), progress,
                        plan);
    const fs::path step_dir = root / ("step_" + std::to_string(n));
    current_step = step_dir;
    const std::string shard_name =
        shared ? "shared.bin" : "rank_" + std::to_string(rank) + ".shard";
    fail_cleanly([&] {
      if (ctx.is_root() && !made.dirs.make_dir(step_dir, {})) {
        throw RuntimeFault(step_dir.string() + " exists already");
      }
    });
    storage::fill_shard(out->span(), storage::shard_seed(rank, n), 0);
    const std::vector<std::uint64_t> sums = storage::block_checksums(out->span(), block);
    storage::ShardTarget t;
    t.file = step_dir / shard_name;
    t.offset = shared ? offset : 0;
    t.block = block;
    t.calls = (max_bytes + block - 1) / block;
    t.fsync = cfg.fsync;
    t.direct = cfg.direct_io;
    t.slow_factor = slow ? slow->factor : 1;
    if (ioerror && (ioerror->step == 0 || ioerror->step == n)) {
      std::fprintf(stderr, "shakedown: inject: %s's first write of checkpoint %d fails with EIO\n",
                   ctx.describe_rank(rank).c_str(), n);
      t.fail_errno = EIO;
    }
    if (!shared || ctx.is_root()) made.files.file(t.file);

    // ---- write ----
    SD_MPI_CHECK(MPI_Barrier(world));
    storage::IoTimes w;
    if (!cfg.async) {
      fail_cleanly([&] { w = backend->write(t, out->span()); });
    } else {
      // As frameworks' async checkpointing: training stops only to copy its state to a host
      // buffer, then goes on while a thread writes the copy.
      std::vector<double> before, during;
      for (int i = 0; i < kWarmStepsBefore; ++i) (void)stand_in->step();
      for (int i = 0; i < kStepsBefore; ++i) before.push_back(stand_in->step());
      const double s0 = now_us();
      std::memcpy(staging->span().data(), out->span().data(), bytes);
      mine.snapshot.push_back((now_us() - s0) * 1e-6);
      std::exception_ptr failed;
      std::atomic<bool> written{false};
      std::thread writer([&] {
        try {
          w = backend->write(t, staging->span());
        } catch (...) {
          failed = std::current_exception();
        }
        written.store(true, std::memory_order_release);
      });
      std::exception_ptr step_failed;
      try {
        while (!written.load(std::memory_order_acquire)) during.push_back(stand_in->step());
      } catch (...) {
        // The writer uses buffers of this frame: it must end before the error leaves it.
        step_failed = std::current_exception();
      }
      writer.join();
      if (!failed) failed = step_failed;
      fail_cleanly([&] {
        if (failed) std::rethrow_exception(failed);
      });
      mine.step_before.push_back(median(before));
      mine.step_during.push_back(during.empty() ? std::nan("") : median(during));
      mine.steps_during.push_back(static_cast<std::int64_t>(during.size()));
    }

    // ---- commit: the metadata's existence says the checkpoint is whole ----
    std::vector<std::uint64_t> padded = sums;  // every rank sends the most blocks of any
    padded.resize(t.calls, 0);
    const std::vector<std::uint64_t> all_sums =
        gather_rows<std::uint64_t>(world, 0, std::span<const std::uint64_t>(padded));
    const fs::path meta_path = step_dir / "metadata.json";
    fail_cleanly([&] {
      if (!ctx.is_root()) return;
      storage::CheckpointMeta meta;
      meta.run = env.recorder.final_path().filename().string();
      meta.step = n;
      meta.layout = cfg.layout;
      meta.api = cfg.api;
      meta.block_size = block;
      const std::size_t W = static_cast<std::size_t>(ctx.world_size());
      for (std::size_t r = 0; r < W; ++r) {
        storage::ShardMeta s;
        s.rank = static_cast<int>(r);
        s.host = hosts[r];
        s.file = shared ? "shared.bin" : "rank_" + std::to_string(r) + ".shard";
        s.offset = shared ? all_offsets[r] : 0;
        s.bytes = all_bytes[r];
        const std::size_t blocks = (s.bytes + block - 1) / block;
        for (std::size_t b = 0; b < blocks; ++b) s.checksums.push_back(all_sums[b * W + r]);
        meta.shards.push_back(std::move(s));
      }
      made.files.file(meta_path.string() + ".tmp");  // left behind if the commit fails
      made.files.file(meta_path);
      storage::commit_file(meta_path, storage::to_json(meta), {});
    });

    // --inject corrupt: one byte of this rank's shard changes on disk after the commit, as
    // storage that goes bad under a finished checkpoint.
    fail_cleanly([&] {
      if (!corrupt) return;
      const std::uint64_t at = t.offset + bytes / 2;
      std::fprintf(
          stderr, "shakedown: inject: %s changes byte %llu of %s on disk%s\n",
          ctx.describe_rank(rank).c_str(), static_cast<unsigned long long>(at), t.file.c_str(),
          shared ? (" (byte " + std::to_string(bytes / 2) + " of its range)").c_str() : "");
      {
        storage::File f(t.file, O_RDWR | O_NOFOLLOW, {});
        std::byte b{};
        f.pread_all(std::span(&b, 1), at);
        b ^= std::byte{0x5A};
        f.pwrite_all(std::span(&b, 1), at);
        f.fsync();
        f.drop_cache();
        f.close();
      }
    });

    // ---- restore: another node's shard, located through the committed metadata ----
    SD_MPI_CHECK(MPI_Barrier(world));
    storage::IoTimes rd;
    storage::ShardMeta src;
    fail_cleanly([&] {
      const storage::CheckpointMeta meta =
          storage::parse_meta(storage::read_small_file(meta_path, {}), meta_path);
      if (static_cast<std::size_t>(source) >= meta.shards.size()) {
        throw RuntimeFault(meta_path.string() + " has no shard of rank " + std::to_string(source));
      }
      src = meta.shards[static_cast<std::size_t>(source)];
      if (src.bytes != source_bytes) {
        throw RuntimeFault(meta_path.string() + ": rank " + std::to_string(source) +
                           "'s shard is " + std::to_string(src.bytes) + " bytes, not the " +
                           std::to_string(source_bytes) + " it wrote (damaged metadata)");
      }
    });
    storage::ShardTarget rt = t;
    rt.file = step_dir / src.file;
    rt.offset = src.offset;
    rt.fsync = false;
    rt.fail_errno = 0;
    const std::span<std::byte> got = in->span().subspan(0, src.bytes);
    fail_cleanly([&] { rd = backend->read(rt, got); });
    std::int64_t bad = -1;
    if (cfg.verify) bad = verify_shard(got, src, block, n);

    mine.open.push_back(w.open_s);
    mine.write.push_back(w.io_s);
    mine.fsync.push_back(w.fsync_s);
    mine.close.push_back(w.close_s);
    mine.read.push_back(rd.end_s - rd.start_s);
    mine.write_start.push_back(w.start_s - offset_s);
    mine.write_end.push_back(w.end_s - offset_s);
    mine.read_start.push_back(rd.start_s - offset_s);
    mine.read_end.push_back(rd.end_s - offset_s);
    mine.verify_ok.push_back(cfg.verify ? (bad < 0 ? 1 : 0) : -1);
    mine.bad_offset.push_back(bad);
    mine.cache_dropped.push_back(w.cache_dropped ? 1 : 0);
    env.watchdog.progress().store(1, std::memory_order_relaxed);

    done = n;
    current_step.clear();
    // Disk use stays at one checkpoint: each goes once verified, before the next is written.
    SD_MPI_CHECK(MPI_Barrier(world));
    if (cfg.cleanup && n < cfg.iters) made.remove(world, ctx.is_root(), step_dir);
    if (n < cfg.iters) {  // what a run that ends in a later checkpoint records of this one
      std::optional<CheckpointRecord> rec = build();
      std::lock_guard lock(latest_mutex);
      latest = std::move(rec);
    }
  }

  if (std::optional<CheckpointRecord> rec = build()) {
    env.recorder.write([&](RunWriter& w) { write_record(w, *rec); });
  }
  if (cfg.cleanup && !cfg.keep) {
    made.remove(world, ctx.is_root(), {});
  } else if (ctx.is_root()) {
    std::fprintf(stderr, "shakedown: checkpoint kept: %s\n",
                 (cfg.cleanup ? root / ("step_" + std::to_string(cfg.iters)) : root).c_str());
  }
}

}  // namespace shakedown
