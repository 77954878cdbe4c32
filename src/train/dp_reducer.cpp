#include "train/dp_reducer.hpp"

#include <chrono>
#include <string>

#include "core/error.hpp"
#include "runtime/mpi.hpp"

namespace shakedown::train {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

DpReducer::DpReducer(MPI_Comm dp, const BucketPlan& plan, bool zero, float* grads, float* shard)
    : comm_(dp), plan_(plan), zero_(zero), grads_(grads), shard_(shard), dp_(comm_size(dp)) {
  const std::size_t n = plan.buckets.size();
  requests_.assign(n, MPI_REQUEST_NULL);
  timings_.assign(n, {});
  started_.assign(n, false);
  if (zero_ && shard_ == nullptr) throw InternalError("DpReducer: zero needs a shard buffer");
  if (plan.total_padded > 0x7fffffff) {
    throw UsageError("train: " + std::to_string(plan.total_padded) +
                     " gradient elements per rank are more than one MPI call can reduce (2^31 - "
                     "1); use fewer layers or a larger tp");
  }
  for (const Bucket& b : plan.buckets) {
    if (zero_ && b.padded % dp_ != 0) {
      throw InternalError("DpReducer: bucket of " + std::to_string(b.padded) +
                          " elements does not split over " + std::to_string(dp_) + " ranks");
    }
  }
}

DpReducer::~DpReducer() {
  // Never leave a request in flight on a buffer the caller frees next.
  for (MPI_Request& r : requests_) {
    if (r != MPI_REQUEST_NULL) MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
}

void DpReducer::start(int bucket) {
  const auto i = static_cast<std::size_t>(bucket);
  const Bucket& b = plan_.buckets.at(i);
  const int count = static_cast<int>(b.padded);
  timings_[i].start_s = steady_seconds();
  if (zero_) {
    SD_MPI_CHECK(MPI_Ireduce_scatter_block(grads_ + b.offset, shard_ + b.offset / dp_, count / dp_,
                                           MPI_FLOAT, MPI_SUM, comm_, &requests_[i]));
  } else {
    SD_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, grads_ + b.offset, count, MPI_FLOAT, MPI_SUM, comm_,
                                &requests_[i]));
  }
  started_[i] = true;
}

void DpReducer::progress() {
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    if (requests_[i] == MPI_REQUEST_NULL) continue;
    int done = 0;
    SD_MPI_CHECK(MPI_Test(&requests_[i], &done, MPI_STATUS_IGNORE));
    if (done) timings_[i].end_s = steady_seconds();
  }
}

double DpReducer::wait_all() {
  const double t0 = steady_seconds();
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    if (!started_[i]) {
      throw InternalError("DpReducer: bucket " + std::to_string(i) + " was never started");
    }
    if (requests_[i] == MPI_REQUEST_NULL) continue;
    SD_MPI_CHECK(MPI_Wait(&requests_[i], MPI_STATUS_IGNORE));
    timings_[i].end_s = steady_seconds();
  }
  started_.assign(started_.size(), false);  // ready for the next step
  return steady_seconds() - t0;
}

double DpReducer::reduce_blocking() {
  const double t0 = steady_seconds();
  if (zero_) {
    for (std::size_t i = 0; i < plan_.buckets.size(); ++i) {
      const Bucket& b = plan_.buckets[i];
      timings_[i].start_s = steady_seconds();
      SD_MPI_CHECK(MPI_Reduce_scatter_block(grads_ + b.offset, shard_ + b.offset / dp_,
                                            static_cast<int>(b.padded) / dp_, MPI_FLOAT, MPI_SUM,
                                            comm_));
      timings_[i].end_s = steady_seconds();
    }
  } else {
    SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, grads_, static_cast<int>(plan_.total_padded),
                               MPI_FLOAT, MPI_SUM, comm_));
    for (BucketTiming& t : timings_) t = {t0, steady_seconds()};
  }
  return steady_seconds() - t0;
}

double DpReducer::communication_span_s() const {
  double first = 0, last = 0;
  bool any = false;
  for (const BucketTiming& t : timings_) {
    if (t.start_s == 0) continue;
    first = any ? std::min(first, t.start_s) : t.start_s;
    last = any ? std::max(last, t.end_s) : t.end_s;
    any = true;
  }
  return any ? last - first : 0.0;
}

}  // namespace shakedown::train
