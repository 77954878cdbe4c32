// The training step on real ranks: tp = 2 groups (when the world is even) and dp replicas, both
// ZeRO modes, overlapped and blocking DP reduction, GQA and SwiGLU; replicas stay identical,
// FP8 scales stay finite over 50 steps, and an injected bit flip shows in the replica hashes.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "comm/mpi_comm.hpp"
#include "gemm/engine.hpp"
#include "runtime/mpi.hpp"
#include "train/step.hpp"

using namespace shakedown;
using namespace shakedown::train;

namespace {

struct Groups {
  int tp = 1;
  CommHandle tp_comm, dp_comm;
};

Groups groups() {
  const int world = comm_size(MPI_COMM_WORLD);
  const int rank = comm_rank(MPI_COMM_WORLD);
  Groups g;
  g.tp = world % 2 == 0 ? 2 : 1;
  g.tp_comm = comm_split(MPI_COMM_WORLD, rank / g.tp, rank);
  g.dp_comm = comm_split(MPI_COMM_WORLD, rank % g.tp, rank);
  return g;
}

StepConfig small_config(const Groups& g, int zero, bool overlap, bool swiglu, bool sp = false) {
  TrainConfig t;
  t.layers = 2;
  t.hidden = 64;
  t.heads = 4;
  t.kv_heads = 2;
  t.mlp = swiglu ? "swiglu" : "gelu";
  t.ffn_hidden = 96;
  StepConfig c;
  c.shape = model_shape(t);
  c.parallel.tp = g.tp;
  c.parallel.dp = comm_size(MPI_COMM_WORLD) / g.tp;
  c.parallel.zero = zero;
  c.parallel.sequence_parallel = sp;
  c.micro_batch = 2;
  c.seq_len = 16;
  c.overlap = overlap;
  c.bucket_mb = 0.02;  // several buckets at this size
  c.first_bucket_mb = 0.01;
  c.delayed.history_len = 4;
  return c;
}

// Every rank's hash, and whether each equals the others of its dp group (same tp rank).
std::vector<std::uint64_t> all_hashes(std::uint64_t mine) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(comm_size(MPI_COMM_WORLD)));
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  return all;
}

void run_and_check(int zero, bool overlap, bool swiglu, int steps, bool sp = false) {
  Groups g = groups();
  MpiComm tp(g.tp_comm.get());
  auto engine = make_cpu_gemm_engine(1);
  TrainStep step(small_config(g, zero, overlap, swiglu, sp), *engine, tp, g.dp_comm.get());
  EXPECT_GT(step.buckets().buckets.size(), 2u);
  for (int i = 0; i < steps; ++i) {
    const StepTimes t = step.run(i);
    EXPECT_GT(t.step_s, 0);
    EXPECT_GT(t.fwd_s, 0);
    EXPECT_GT(t.bwd_s, 0);
    EXPECT_GE(t.dp_exposed_s, 0);
    EXPECT_LE(t.fwd_s + t.bwd_s, t.step_s * 1.0001);
    // Gradients flow through every layer (FP8 underflow would leave zeros).
    EXPECT_LT(step.zero_gradient_share(), 0.01) << "step " << i;
  }
  EXPECT_TRUE(step.scales_finite());
  const std::vector<std::uint64_t> h = all_hashes(step.parameter_hash());
  const int world = comm_size(MPI_COMM_WORLD);
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(h[static_cast<std::size_t>(r)], h[static_cast<std::size_t>(r % g.tp)])
        << "rank " << r << " differs from its replica " << r % g.tp;
  }
  // The TP ranks hold different slices.
  if (g.tp == 2) {
    EXPECT_NE(h[0], h[1]);
  }
}

}  // namespace

TEST(TrainStep, ReplicasStayIdenticalZeroZeroOverlapped) { run_and_check(0, true, false, 3); }
TEST(TrainStep, ReplicasStayIdenticalZeroOneOverlappedSwiglu) { run_and_check(1, true, true, 3); }
TEST(TrainStep, ReplicasStayIdenticalBlockingBaseline) { run_and_check(0, false, true, 2); }
TEST(TrainStep, ScalesStayFiniteOverFiftySteps) { run_and_check(0, true, true, 50); }
TEST(TrainStep, ReplicasStayIdenticalSequenceParallel) { run_and_check(0, true, false, 3, true); }
TEST(TrainStep, ReplicasStayIdenticalSequenceParallelZeroOne) {
  run_and_check(1, true, true, 3, true);
}

TEST(TrainStep, SequenceParallelComputesTheSameStepAsPlainTensorParallel) {
  // Same rows, same norms, and with tp <= 2 every partial sum has at most two terms (one
  // order): reduce-scatter + all-gather must give the all-reduce's parameters to the bit.
  Groups g = groups();
  MpiComm tp(g.tp_comm.get());
  auto engine = make_cpu_gemm_engine(1);
  TrainStep plain(small_config(g, 0, true, true, false), *engine, tp, g.dp_comm.get());
  TrainStep sp(small_config(g, 0, true, true, true), *engine, tp, g.dp_comm.get());
  for (int i = 0; i < 3; ++i) {
    plain.run(i);
    sp.run(i);
  }
  EXPECT_EQ(plain.parameter_hash(), sp.parameter_hash());
}

TEST(TrainStep, OverlappedAndBlockingReductionGiveTheSameParameters) {
  // With two replicas a sum has one order (a + b = b + a exactly), so both paths must agree to
  // the bit; with more, MPI may add in another order per message size.
  Groups g = groups();
  if (comm_size(g.dp_comm.get()) > 2) GTEST_SKIP() << "more than 2 replicas: sum order may differ";
  MpiComm tp(g.tp_comm.get());
  auto engine = make_cpu_gemm_engine(1);
  for (int zero : {0, 1}) {
    TrainStep a(small_config(g, zero, true, false), *engine, tp, g.dp_comm.get());
    TrainStep b(small_config(g, zero, false, false), *engine, tp, g.dp_comm.get());
    for (int i = 0; i < 3; ++i) {
      a.run(i);
      b.run(i);
    }
    EXPECT_EQ(a.parameter_hash(), b.parameter_hash()) << "zero " << zero;
  }
}

TEST(TrainStep, InjectedBitFlipMakesThatReplicaDiffer) {
  Groups g = groups();
  if (comm_size(g.dp_comm.get()) < 2) GTEST_SKIP() << "one replica: nothing to compare";
  MpiComm tp(g.tp_comm.get());
  auto engine = make_cpu_gemm_engine(1);
  const int world = comm_size(MPI_COMM_WORLD);
  const int victim = world - 1;
  for (int zero : {0, 1}) {
    TrainStep step(small_config(g, zero, true, false), *engine, tp, g.dp_comm.get());
    for (int i = 0; i < 2; ++i) {
      StepFault fault;
      fault.flip_gradient_bit = i == 1 && comm_rank(MPI_COMM_WORLD) == victim;
      step.run(i, fault);
    }
    const std::vector<std::uint64_t> h = all_hashes(step.parameter_hash());
    for (int r = 0; r < world; ++r) {
      const bool same = h[static_cast<std::size_t>(r)] == h[static_cast<std::size_t>(r % g.tp)];
      if (r == victim) {
        EXPECT_FALSE(same) << "zero " << zero << ": the corrupted rank matches its replica";
      } else if (r % g.tp != victim % g.tp || r != r % g.tp) {
        // Ranks other than the victim agree with replica 0 of their TP rank (the victim is never
        // replica 0: it is the last rank and there are at least 2 replicas).
        EXPECT_TRUE(same) << "zero " << zero << ": rank " << r;
      }
    }
  }
}
