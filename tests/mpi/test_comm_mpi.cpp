// The MPI backend under real mpirun: every collective x dtype x reduction x in/out-of-place
// produces exactly the values the patterns predict, on the world, node and rail communicators,
// for several sizes including ones that do not divide evenly.
#include <gtest/gtest.h>

#include <cstdlib>

#include "comm/collectives.hpp"
#include "comm/mpi_comm.hpp"
#include "env_support.hpp"
#include "runtime/context.hpp"

using namespace shakedown;

namespace {

using shakedown::testing_support::env_int;

// Runs one collective the way the phase does and returns this rank's wrong-element count.
std::uint64_t run_checked(Comm& comm, const CollectiveInfo& info, DType dtype, ReduceOp op,
                          bool in_place, std::uint64_t bytes) {
  const CollectiveCounts counts = info.counts(bytes, dtype_size(dtype), comm.size());
  if (counts.unit == 0) return 0;
  const std::size_t elem = dtype_size(dtype);
  PatternSpec spec{7, dtype, op, comm.size(), 0};
  std::unique_ptr<Buffer> in = comm.allocate(std::max(counts.send, counts.recv) * elem);
  std::unique_ptr<Buffer> out = in_place ? nullptr : comm.allocate(counts.recv * elem);
  const std::uint64_t in_off = in_place ? comm.in_place_send_offset(info.kind, counts.unit) : 0;
  const std::uint64_t out_off = in_place ? comm.in_place_recv_offset(info.kind, counts.unit) : 0;
  char* base = static_cast<char*>(in->data());
  comm.fill(*in, in_off, info.kind, counts, spec);
  comm.run(info.kind, base + in_off * elem, in_place ? base + out_off * elem : out->data(),
           counts.unit, dtype, op, 0);
  comm.synchronize();
  return comm.verify(in_place ? *in : *out, out_off, info.kind, counts, spec).wrong;
}

}  // namespace

TEST(MpiComm, EveryCollectiveDtypeAndModeValidates) {
  Context ctx = Context::create(MPI_COMM_WORLD, env_int("SHAKEDOWN_TEST_VIRTUAL_NODES", 0));
  MpiComm world(ctx.world()), node(ctx.node()), rail(ctx.rail());
  std::uint64_t wrong = 0;
  int checked = 0;
  for (Comm* comm :
       {static_cast<Comm*>(&world), static_cast<Comm*>(&node), static_cast<Comm*>(&rail)}) {
    for (const auto& info : collective_table()) {
      for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16, DType::kInt32}) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
          if (!info.reduces && op == ReduceOp::kMax) continue;
          for (bool in_place : {false, true}) {
            for (std::uint64_t bytes : {8ull, 1000ull, 4096ull, 65536ull + 48}) {
              const std::uint64_t w = run_checked(*comm, info, dtype, op, in_place, bytes);
              if (w != 0) {
                ADD_FAILURE() << info.name << " " << dtype_name(dtype) << " " << reduce_op_name(op)
                              << (in_place ? " in place " : " ") << bytes
                              << " B on a communicator of " << comm->size() << ": " << w
                              << " wrong on rank " << ctx.rank();
              }
              wrong += w;
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_GT(checked, 300);
}

TEST(MpiComm, CorruptionIsSeenByVerify) {
  Context ctx = Context::create(MPI_COMM_WORLD, 0);
  MpiComm world(ctx.world());
  const CollectiveInfo& info = collective(CollectiveKind::kAllReduce);
  const CollectiveCounts counts = info.counts(4096, 4, world.size());
  PatternSpec spec{3, DType::kFloat32, ReduceOp::kSum, world.size(), 0};
  auto in = world.allocate(counts.send * 4);
  auto out = world.allocate(counts.recv * 4);
  world.fill(*in, 0, info.kind, counts, spec);
  world.run(info.kind, in->data(), out->data(), counts.unit, DType::kFloat32, ReduceOp::kSum, 0);
  if (ctx.rank() == world.size() - 1) world.corrupt(*out, 17, DType::kFloat32);
  VerifyResult r = world.verify(*out, 0, info.kind, counts, spec);
  if (ctx.rank() == world.size() - 1) {
    EXPECT_EQ(r.wrong, 1u);
    EXPECT_EQ(r.first_wrong, 17);
    EXPECT_NE(r.got, r.expected);
  } else {
    EXPECT_EQ(r.wrong, 0u);
  }
}

TEST(MpiComm, Fp8IsUnsupportedWithAReason) {
  MpiComm world(MPI_COMM_WORLD);
  EXPECT_NE(world.unsupported(CollectiveKind::kAllReduce, DType::kFp8E4M3, ReduceOp::kSum), "");
  EXPECT_EQ(world.unsupported(CollectiveKind::kAllReduce, DType::kBFloat16, ReduceOp::kSum), "");
}
