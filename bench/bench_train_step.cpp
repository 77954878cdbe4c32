// The training step's data-parallel overlap (issue 12): the same model and layout run with the DP
// gradient reduction overlapped with backward (buckets reduced as they fill, MPI_Iallreduce
// progressed by MPI_Test between GEMMs) and without (one blocking all-reduce after backward),
// alternating, in one launch. Per mode: median step time of the slowest rank, median exposed DP
// time (blocked after backward), and the share of DP communication hidden:
//   hidden = 1 - exposed(overlap) / exposed(no overlap)
// (the blocking path's time is all DP communication; the overlapped path's exposed part is what
// backward did not cover).
// The TP wait (blocked in TP collectives, forward and backward, the column-parallel dgrad's
// reduction overlapped with the wgrad) is printed per mode too.
//
//   mpirun -n 4 bench_train_step [steps] [tp] [hidden] [layers] [seq_len] [bucket_mb] [zero]
//
// Defaults 8 steps, tp 2 (groups of consecutive ranks, as a node's), hidden 512, 4 layers,
// seq_len 256, 1 MiB buckets, zero 0; the CPU FP8 engine with one thread per rank.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "comm/mpi_comm.hpp"
#include "gemm/engine.hpp"
#include "runtime/mpi.hpp"
#include "train/step.hpp"

using namespace shakedown;
using namespace shakedown::train;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double world_max(double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto arg = [&](int i, double fallback) { return argc > i ? std::atof(argv[i]) : fallback; };
  const int steps = static_cast<int>(arg(1, 8));
  const int tp = static_cast<int>(arg(2, 2));
  const int world = comm_size(MPI_COMM_WORLD);
  const int rank = comm_rank(MPI_COMM_WORLD);
  if (world % tp != 0) {
    if (rank == 0)
      std::fprintf(stderr, "bench_train_step: tp %d does not divide %d ranks\n", tp, world);
    return 2;
  }
  TrainConfig t;
  t.hidden = static_cast<std::int64_t>(arg(3, 512));
  t.heads = 8;
  t.layers = static_cast<int>(arg(4, 4));
  StepConfig c;
  c.shape = model_shape(t);
  c.parallel = {tp, world / tp, false, static_cast<int>(arg(7, 0))};
  c.micro_batch = 1;
  c.seq_len = static_cast<std::int64_t>(arg(5, 256));
  c.bucket_mb = arg(6, 1);
  CommHandle tp_comm = comm_split(MPI_COMM_WORLD, rank / tp, rank);
  CommHandle dp_comm = comm_split(MPI_COMM_WORLD, rank % tp, rank);
  MpiComm tp_group(tp_comm.get());
  auto engine = make_cpu_gemm_engine(1);
  StepConfig with = c, without = c;
  with.overlap = true;
  without.overlap = false;
  TrainStep a(with, *engine, tp_group, dp_comm.get());
  TrainStep b(without, *engine, tp_group, dp_comm.get());
  a.run(0);  // warm-up
  b.run(0);
  std::vector<double> step_a, step_b, exp_a, exp_b, span_a, tp_a, tp_b;
  for (int i = 1; i <= steps; ++i) {
    const StepTimes ta = a.run(i);
    const StepTimes tb = b.run(i);
    step_a.push_back(world_max(ta.step_s));
    step_b.push_back(world_max(tb.step_s));
    exp_a.push_back(world_max(ta.dp_exposed_s));
    exp_b.push_back(world_max(tb.dp_exposed_s));
    span_a.push_back(world_max(ta.dp_span_s));
    tp_a.push_back(world_max(ta.tp_comm_s));
    tp_b.push_back(world_max(tb.tp_comm_s));
  }
  if (rank == 0) {
    std::printf(
        "# train step: %d ranks, tp %d, dp %d, zero %d, hidden %lld, %d layers, seq %lld, "
        "%zu buckets of <= %.2f MiB, %d steps (medians, slowest rank)\n",
        world, tp, world / tp, c.parallel.zero, static_cast<long long>(t.hidden), c.shape.layers,
        static_cast<long long>(c.seq_len), a.buckets().buckets.size(), c.bucket_mb, steps);
    std::printf("%-12s %10s %14s %14s %11s\n", "mode", "step_ms", "dp_exposed_ms", "dp_span_ms",
                "tp_wait_ms");
    std::printf("%-12s %10.2f %14.2f %14.2f %11.2f\n", "overlap", median(step_a) * 1e3,
                median(exp_a) * 1e3, median(span_a) * 1e3, median(tp_a) * 1e3);
    std::printf("%-12s %10.2f %14.2f %14s %11.2f\n", "no overlap", median(step_b) * 1e3,
                median(exp_b) * 1e3, "-", median(tp_b) * 1e3);
    const double hidden = median(exp_b) > 0 ? 1.0 - median(exp_a) / median(exp_b) : 0.0;
    std::printf("step overlap / no overlap = %.3f; DP communication hidden = %.0f%%\n",
                median(step_a) / median(step_b), 100.0 * hidden);
  }
  return 0;
}
