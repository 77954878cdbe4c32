// gtest main for tests launched by ctest under mpirun: MPI up before the tests, rank 0 prints
// the usual report, other ranks print only their failures, and every rank exits with the
// combined result so one rank's failure fails the run.
#include <gtest/gtest.h>

#include <cstdio>

#include "mpi_offthread.hpp"
#include "runtime/mpi.hpp"

namespace {

class FailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.failed()) {
      std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                   r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
    }
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  shakedown::MpiEnvironment mpi(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  const int rank = shakedown::comm_rank(MPI_COMM_WORLD);
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  // Only the main thread may call MPI (MPI_THREAD_SINGLE or FUNNELED): no test did otherwise.
  if (const int off = shakedown::testing_support::mpi_calls_off_main_thread(); off > 0) {
    std::fprintf(stderr,
                 "[rank %d] %d MPI call(s) from a thread other than the main one, first %s\n", rank,
                 off, shakedown::testing_support::first_mpi_call_off_main_thread().c_str());
    failed = 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && failed) std::fprintf(stderr, "mpi_tests: a test failed on some rank\n");
  return failed;
}
