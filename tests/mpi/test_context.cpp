// Context splits under real mpirun: plain, with virtual nodes (SHAKEDOWN_TEST_VIRTUAL_NODES), and
// with pretend hosts (SHAKEDOWN_TEST_EXPECT_HOSTS, see pretend_hosts.sh).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "core/error.hpp"
#include "env_support.hpp"
#include "runtime/agree.hpp"
#include "runtime/context.hpp"

using namespace shakedown;

namespace {
using shakedown::testing_support::env_int;
}  // namespace

TEST(Context, SplitsAreConsistent) {
  const int v = env_int("SHAKEDOWN_TEST_VIRTUAL_NODES", 0);
  const int world = comm_size(MPI_COMM_WORLD);
  if (v > 1 && world % v != 0) GTEST_SKIP() << world << " ranks cannot form " << v << " nodes";
  Context ctx = Context::create(MPI_COMM_WORLD, v);
  EXPECT_EQ(ctx.world_size(), world);
  EXPECT_EQ(ctx.rank(), comm_rank(MPI_COMM_WORLD));

  // Every member of my node communicator agrees on the node index; my local rank is my rank in it.
  int node = ctx.node_index();
  int lo = node, hi = node;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, ctx.node());
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, ctx.node());
  EXPECT_EQ(lo, node);
  EXPECT_EQ(hi, node);
  EXPECT_EQ(comm_rank(ctx.node()), ctx.local_rank());
  EXPECT_EQ(comm_size(ctx.node()), ctx.local_size());

  // The rail holds one rank per node, all with my local rank.
  int local = ctx.local_rank();
  int llo = local, lhi = local;
  MPI_Allreduce(MPI_IN_PLACE, &llo, 1, MPI_INT, MPI_MIN, ctx.rail());
  MPI_Allreduce(MPI_IN_PLACE, &lhi, 1, MPI_INT, MPI_MAX, ctx.rail());
  EXPECT_EQ(llo, local);
  EXPECT_EQ(lhi, local);
  EXPECT_EQ(comm_rank(ctx.rail()), ctx.node_index());
  if (ctx.ranks_per_node() > 0) {
    EXPECT_EQ(comm_size(ctx.rail()), ctx.node_count());
  }

  const int hosts = env_int("SHAKEDOWN_TEST_EXPECT_HOSTS", 1);
  EXPECT_EQ(ctx.host_count(), hosts);
  EXPECT_EQ(ctx.node_count(), hosts * std::max(v, 1));
  if (v > 1) {
    EXPECT_EQ(ctx.ranks_per_node(), world / (hosts * v));
    EXPECT_EQ(ctx.virtual_nodes(), v);
    EXPECT_NE(ctx.describe_rank(0).find("[virtual]"), std::string::npos);
  }
  if (hosts > 1) {
    // Pretend hosts share one real hostname: node identity did not come from it.
    std::set<std::string> names(ctx.hostnames().begin(), ctx.hostnames().end());
    EXPECT_EQ(names.size(), 1u);
  }
}

TEST(Context, UnevenVirtualNodesFailTheSameOnEveryRank) {
  const int world = comm_size(MPI_COMM_WORLD);
  const int hosts = env_int("SHAKEDOWN_TEST_EXPECT_HOSTS", 1);
  if (hosts != 1 || world % 2 == 0) GTEST_SKIP() << "needs an odd rank count on one host";
  int threw = 0;
  try {
    Context::create(MPI_COMM_WORLD, 2);
  } catch (const UsageError& e) {
    threw = 1;
    EXPECT_NE(std::string(e.what()).find("virtual_nodes"), std::string::npos);
  }
  int all = threw;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  EXPECT_EQ(all, 1);
}

// A set-up step that fails on one rank fails on every rank, with that rank's error: named by it
// when it is not rank 0 (and said to be, so that rank 0 reports it without its own name), plain
// when it is rank 0's; rank 0 is the one to report it.
TEST(Agreed, EveryRankThrowsTheLowestFailingRanksError) {
  const int world = comm_size(MPI_COMM_WORLD);
  const int me = comm_rank(MPI_COMM_WORLD);
  for (const int failing : {0, world - 1}) {
    try {
      agreed(MPI_COMM_WORLD, [&] {
        if (me == failing) throw UsageError("bad value on this rank");
      });
      FAIL() << "no error on rank " << me;
    } catch (const AgreedError& e) {
      EXPECT_EQ(e.code(), ExitCode::kUsage);
      EXPECT_EQ(e.reporter(), me == 0);
      const std::string text = e.what();
      if (failing == 0) {
        EXPECT_EQ(text, "bad value on this rank");
        EXPECT_FALSE(e.names_rank());
      } else {
        EXPECT_EQ(text.rfind("rank " + std::to_string(failing) + " (host ", 0), 0u) << text;
        EXPECT_NE(text.find("): bad value on this rank"), std::string::npos) << text;
        EXPECT_TRUE(e.names_rank());
      }
    }
  }
}
