#pragma once
// Counts this process's MPI calls made from a thread other than the main one (mpi_offthread.cpp
// interposes them through the MPI profiling interface). shakedown initialises MPI at
// MPI_THREAD_SINGLE (or FUNNELED), so the count must stay 0; mpi_main checks it after the tests.
#include <string>

namespace shakedown::testing_support {

int mpi_calls_off_main_thread();
// The first such call's name ("" when none).
std::string first_mpi_call_off_main_thread();

}  // namespace shakedown::testing_support
