#pragma once
// The data-parallel gradient reduction of the MPI backend, bucket by bucket (train/buckets.hpp).
// Overlapped: start(b) posts bucket b's reduction as soon as backward has filled it
// (MPI_Iallreduce in place, or MPI_Ireduce_scatter_block into this rank's shard with zero: 1);
// progress() between GEMMs lets MPI move it along (Open MPI progresses non-blocking collectives
// only inside MPI calls: with MPI at MPI_THREAD_SINGLE there is no progress thread to rely on);
// wait_all() at the end of backward blocks for what is left, and that blocked time is the
// exposed communication. Not overlapped: reduce_blocking() after backward, the baseline.
// Sums (the caller scales by 1 / dp). Every rank of the communicator must call the same
// sequence; the requests are freed (completed or, on destruction, waited for) by this object.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "train/buckets.hpp"

namespace shakedown::train {

struct BucketTiming {
  double start_s = 0;  // steady clock, seconds: posted
  double end_s = 0;    // first progress()/wait_all() that saw it complete
};

class DpReducer {
 public:
  // grads: plan.total_padded floats; shard: plan.total_padded / dp floats (zero only, else null).
  // Bucket b's shard is shard + buckets[b].offset / dp, padded / dp elements.
  DpReducer(MPI_Comm dp, const BucketPlan& plan, bool zero, float* grads, float* shard);
  ~DpReducer();
  DpReducer(const DpReducer&) = delete;
  DpReducer& operator=(const DpReducer&) = delete;

  void start(int bucket);
  void progress();
  // Blocks until every started bucket is reduced; returns the seconds it blocked, and readies
  // the reducer for the next step. InternalError if a bucket was never started.
  double wait_all();
  // One blocking reduction of everything (zero: one blocking reduce-scatter per bucket, so the
  // shards are the same slices as the overlapped path's). Returns its seconds.
  double reduce_blocking();

  const std::vector<BucketTiming>& timings() const { return timings_; }
  // Seconds from the first bucket posted to the last completed (0 before any).
  double communication_span_s() const;

 private:
  MPI_Comm comm_;
  const BucketPlan& plan_;
  bool zero_;
  float* grads_;
  float* shard_;
  int dp_;
  std::vector<MPI_Request> requests_;
  std::vector<BucketTiming> timings_;
  std::vector<bool> started_;
};

double steady_seconds();

}  // namespace shakedown::train
