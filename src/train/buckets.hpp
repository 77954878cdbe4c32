#pragma once
// Gradient buckets for the data-parallel reduction, as PyTorch DDP forms them: gradients are laid
// out in one flat buffer in the order the backward pass produces them (the reverse of the
// forward order), and cut into buckets of about bucket_bytes - the first one 1 MiB, so the first
// reduction starts early. A tensor never spans two buckets (one larger than the cap gets a
// bucket of its own). Every bucket is padded to a multiple of `divisor` elements, so
// MPI_Reduce_scatter_block / ncclReduceScatter can split it evenly over the dp ranks (zero: 1).
#include <cstdint>
#include <span>
#include <vector>

namespace shakedown::train {

struct Bucket {
  std::int64_t offset = 0;    // first element in the flat gradient buffer
  std::int64_t elements = 0;  // gradient elements (without the padding)
  std::int64_t padded = 0;    // elements rounded up to a multiple of the divisor
  int first_tensor = 0;       // forward index of the LAST tensor produced into it (lowest index)
  int last_tensor = 0;        // forward index of the first tensor produced into it (highest index)
};

struct BucketPlan {
  std::vector<Bucket> buckets;  // in the order they fill (reverse forward order)
  // Per tensor (forward index): where its gradient starts in the flat buffer, and its bucket.
  std::vector<std::int64_t> tensor_offset;
  std::vector<int> tensor_bucket;
  std::int64_t total_padded = 0;  // size of the flat buffer
};

// tensor_elements in forward order. element_bytes > 0, divisor >= 1, bucket bytes > 0;
// InternalError otherwise.
BucketPlan plan_buckets(std::span<const std::int64_t> tensor_elements, std::int64_t element_bytes,
                        double first_bucket_bytes, double bucket_bytes, std::int64_t divisor);

}  // namespace shakedown::train
