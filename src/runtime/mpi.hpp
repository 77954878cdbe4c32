#pragma once
// MPI environment (RAII), the one MPI check macro, communicator handles and small collectives
// on strings that the rest of the program needs.
#include <mpi.h>

#include <string>
#include <vector>

namespace shakedown {

// Throws RuntimeFault "MPI error in <expr> at file:line: <MPI_Error_string>".
void mpi_check(int rc, const char* expr, const char* file, int line);
#define SD_MPI_CHECK(call) ::shakedown::mpi_check((call), #call, __FILE__, __LINE__)

// Initialises MPI at the level SHAKEDOWN_MPI_THREAD names (requested_thread_level) and finalises
// it on destruction. Only the main thread calls MPI; the watchdog threads talk over their own
// sockets (runtime/oob.hpp). Errors on MPI_COMM_WORLD return
// codes instead of aborting, so SD_MPI_CHECK can name the call.
// SHAKEDOWN_MPI_THREAD: unset or "single" -> MPI_THREAD_SINGLE, "funneled" ->
// MPI_THREAD_FUNNELED; anything else is a UsageError naming the variable.
int requested_thread_level();
// MPI_THREAD_SINGLE -> "MPI_THREAD_SINGLE".
std::string thread_level_name(int level);

class MpiEnvironment {
 public:
  MpiEnvironment(int* argc, char*** argv);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  static bool initialized();
  static bool finalized();

 private:
  bool owns_ = false;
};

// Owns a communicator created by split/dup; frees it on destruction.
class CommHandle {
 public:
  CommHandle() = default;
  explicit CommHandle(MPI_Comm comm) : comm_(comm) {}
  ~CommHandle();
  CommHandle(CommHandle&& other) noexcept : comm_(other.release()) {}
  CommHandle& operator=(CommHandle&& other) noexcept;
  CommHandle(const CommHandle&) = delete;
  CommHandle& operator=(const CommHandle&) = delete;

  MPI_Comm get() const { return comm_; }
  MPI_Comm release() {
    MPI_Comm c = comm_;
    comm_ = MPI_COMM_NULL;
    return c;
  }
  int rank() const;
  int size() const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

CommHandle comm_dup(MPI_Comm comm);
CommHandle comm_split(MPI_Comm comm, int color, int key);

int comm_rank(MPI_Comm comm);
int comm_size(MPI_Comm comm);

// Gathers one string per rank to `root` (empty vector elsewhere).
std::vector<std::string> gather_strings(MPI_Comm comm, int root, const std::string& mine);
// Every rank gets every rank's string.
std::vector<std::string> allgather_strings(MPI_Comm comm, const std::string& mine);
// `root`'s value ends up on every rank.
std::string bcast_string(MPI_Comm comm, int root, std::string value);

// A barrier whose waiting ranks sleep between polls (50 us, doubling to 2 ms): MPI_Barrier
// spins, and on shared cores a spinning waiter slows the rank being measured; so do frequent
// wake-ups (four waiters polling every 100 us took a core's time slices from a measured pair).
void idle_barrier(MPI_Comm comm);

}  // namespace shakedown
