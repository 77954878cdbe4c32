#include "train/buckets.hpp"

#include "core/error.hpp"

namespace shakedown::train {

BucketPlan plan_buckets(std::span<const std::int64_t> tensor_elements, std::int64_t element_bytes,
                        double first_bucket_bytes, double bucket_bytes, std::int64_t divisor) {
  if (element_bytes <= 0 || divisor < 1 || !(first_bucket_bytes > 0) || !(bucket_bytes > 0)) {
    throw InternalError("train::plan_buckets: bad arguments");
  }
  const int n = static_cast<int>(tensor_elements.size());
  BucketPlan plan;
  plan.tensor_offset.assign(tensor_elements.size(), 0);
  plan.tensor_bucket.assign(tensor_elements.size(), 0);
  std::int64_t offset = 0;
  Bucket open;
  bool has_open = false;
  auto close = [&] {
    open.padded = (open.elements + divisor - 1) / divisor * divisor;
    offset = open.offset + open.padded;
    plan.buckets.push_back(open);
    has_open = false;
  };
  for (int t = n - 1; t >= 0; --t) {
    const std::int64_t e = tensor_elements[static_cast<std::size_t>(t)];
    if (e < 0) throw InternalError("train::plan_buckets: negative tensor size");
    const double cap = plan.buckets.empty() ? first_bucket_bytes : bucket_bytes;
    if (has_open && static_cast<double>((open.elements + e) * element_bytes) > cap) close();
    if (!has_open) {
      open = Bucket{offset, 0, 0, t, t};
      has_open = true;
    }
    plan.tensor_offset[static_cast<std::size_t>(t)] = open.offset + open.elements;
    plan.tensor_bucket[static_cast<std::size_t>(t)] = static_cast<int>(plan.buckets.size());
    open.elements += e;
    open.first_tensor = t;
  }
  if (has_open) close();
  plan.total_padded = offset;
  return plan;
}

}  // namespace shakedown::train
