// Gradient buckets: reverse order, the 1 MiB first bucket, tensors never split, padding.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "train/buckets.hpp"

namespace shakedown::train {
namespace {

constexpr double kMebibyte = 1024.0 * 1024.0;

TEST(TrainBuckets, ReverseOrderFirstBucketSmallAndNoTensorSplit) {
  // Forward order: four tensors of 128 Ki, 256 Ki, 64 Ki and 192 Ki floats (0.5, 1, 0.25, 0.75
  // MiB). Backward fills 3, 2, 1, 0: the first bucket (1 MiB cap) takes 3 and 2 (0.75 + 0.25 =
  // 1 MiB, exactly the cap); 1 (1 MiB) would pass it, so it opens bucket 1 (cap 1.5 MiB), and 0
  // (0.5 MiB) joins it (1.5 MiB).
  const std::vector<std::int64_t> sizes{128 << 10, 256 << 10, 64 << 10, 192 << 10};
  const BucketPlan p = plan_buckets(sizes, 4, 1 * kMebibyte, 1.5 * kMebibyte, 1);
  ASSERT_EQ(p.buckets.size(), 2u);
  EXPECT_EQ(p.buckets[0].elements, (192 + 64) << 10);
  EXPECT_EQ(p.buckets[0].first_tensor, 2);
  EXPECT_EQ(p.buckets[0].last_tensor, 3);
  EXPECT_EQ(p.buckets[1].elements, (256 + 128) << 10);
  EXPECT_EQ(p.tensor_offset[3], 0);
  EXPECT_EQ(p.tensor_offset[2], 192 << 10);
  EXPECT_EQ(p.tensor_offset[1], (192 + 64) << 10);
  EXPECT_EQ(p.tensor_offset[0], (192 + 64 + 256) << 10);
  EXPECT_EQ(p.tensor_bucket, (std::vector<int>{1, 1, 0, 0}));
  EXPECT_EQ(p.total_padded, (128 + 256 + 64 + 192) << 10);
}

TEST(TrainBuckets, TensorLargerThanTheCapGetsItsOwnBucketAndPaddingDividesByDp) {
  const std::vector<std::int64_t> sizes{10, 1000, 7};
  const BucketPlan p = plan_buckets(sizes, 4, 64, 64, 4);  // 16 floats per bucket
  ASSERT_EQ(p.buckets.size(), 3u);
  EXPECT_EQ(p.buckets[0].elements, 7);
  EXPECT_EQ(p.buckets[0].padded, 8);
  EXPECT_EQ(p.buckets[1].elements, 1000);
  EXPECT_EQ(p.buckets[1].offset, 8);
  EXPECT_EQ(p.buckets[2].elements, 10);
  EXPECT_EQ(p.buckets[2].padded, 12);
  EXPECT_EQ(p.buckets[2].offset, 1008);
  EXPECT_EQ(p.total_padded, 1020);
  for (const Bucket& b : p.buckets) EXPECT_EQ(b.padded % 4, 0);
  EXPECT_THROW(plan_buckets(sizes, 0, 64, 64, 1), InternalError);
}

}  // namespace
}  // namespace shakedown::train
