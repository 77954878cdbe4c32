// The data-parallel gradient reduction: buckets reduced while "backward" goes on (non-blocking,
// progressed between steps of work) give the same gradients as one blocking all-reduce, with
// and without ZeRO-1 sharding, on a dp group split from the world as a tp = 2 layout does.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/mpi.hpp"
#include "train/dp_reducer.hpp"

using namespace shakedown;
using namespace shakedown::train;

namespace {

// Integers below 2^24 / world: every sum order is exact, so overlapped and blocking agree
// bit for bit whatever algorithm MPI picks per message size.
float grad_value(int rank, std::int64_t i) {
  return static_cast<float>(static_cast<int>((i * 7919 + rank * 104729) % 2001) - 1000);
}

struct Layout {
  CommHandle dp;
  int tp = 1;
};

Layout dp_layout() {
  const int world = comm_size(MPI_COMM_WORLD);
  const int rank = comm_rank(MPI_COMM_WORLD);
  Layout l;
  l.tp = world % 2 == 0 ? 2 : 1;
  l.dp = comm_split(MPI_COMM_WORLD, rank % l.tp, rank);
  return l;
}

void check_reduction(bool zero) {
  Layout l = dp_layout();
  const int dp = l.dp.size();
  const int me = l.dp.rank();
  const std::vector<std::int64_t> tensors{3000, 70000, 5, 262144, 12345, 1};
  const BucketPlan plan = plan_buckets(tensors, 4, 64 << 10, 256 << 10, dp);
  ASSERT_GT(plan.buckets.size(), 2u);
  auto fill = [&](std::vector<float>& g) {
    g.assign(static_cast<std::size_t>(plan.total_padded), 0.0f);
    for (const Bucket& b : plan.buckets) {
      for (std::int64_t i = 0; i < b.elements; ++i) g[b.offset + i] = grad_value(me, b.offset + i);
    }
  };
  std::vector<float> overlapped, blocking;
  fill(overlapped);
  fill(blocking);
  const std::size_t shard_size = static_cast<std::size_t>(plan.total_padded / dp);
  std::vector<float> shard_o(zero ? shard_size : 0), shard_b(zero ? shard_size : 0);
  {
    DpReducer r(l.dp.get(), plan, zero, overlapped.data(), zero ? shard_o.data() : nullptr);
    for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
      r.start(static_cast<int>(b));
      for (int k = 0; k < 3; ++k) r.progress();  // between the GEMMs of the next layer
    }
    EXPECT_GE(r.wait_all(), 0.0);
    for (const BucketTiming& t : r.timings()) EXPECT_GE(t.end_s, t.start_s);
    EXPECT_GT(r.communication_span_s(), 0.0);
  }
  {
    DpReducer r(l.dp.get(), plan, zero, blocking.data(), zero ? shard_b.data() : nullptr);
    EXPECT_GT(r.reduce_blocking(), 0.0);
  }
  if (zero) {
    EXPECT_EQ(shard_o, shard_b);
    // Bucket b's shard on dp rank me is its me-th slice of padded / dp elements.
    for (const Bucket& b : plan.buckets) {
      const std::int64_t part = b.padded / dp;
      for (std::int64_t k = 0; k < part; ++k) {
        const std::int64_t i = me * part + k;
        float want = 0;
        for (int r = 0; r < dp; ++r) want += i < b.elements ? grad_value(r, b.offset + i) : 0.0f;
        ASSERT_EQ(shard_o[b.offset / dp + k], want) << "bucket at " << b.offset << " k " << k;
      }
    }
  } else {
    EXPECT_EQ(overlapped, blocking);
    // Every gradient is the sum over the dp group; the padding stays 0.
    for (const Bucket& b : plan.buckets) {
      for (std::int64_t i = 0; i < b.padded; ++i) {
        float want = 0;
        for (int r = 0; r < dp; ++r) want += i < b.elements ? grad_value(r, b.offset + i) : 0.0f;
        ASSERT_EQ(overlapped[b.offset + i], want) << "bucket at " << b.offset << " element " << i;
      }
    }
  }
}

}  // namespace

TEST(TrainReducer, OverlappedBucketsEqualOneBlockingAllReduce) { check_reduction(false); }

TEST(TrainReducer, OverlappedReduceScatterEqualsBlockingShards) { check_reduction(true); }
