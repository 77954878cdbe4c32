#include "runtime/agree.hpp"

#include <climits>

#include "core/host.hpp"

namespace shakedown {

void raise_first_failure(MPI_Comm comm, int code, const std::string& message) {
  const int rank = comm_rank(comm);
  int first = code != 0 ? rank : INT_MAX;
  SD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == INT_MAX) return;
  // Rank 0's errors are usually everyone's (a bad config); name a rank only when it is not 0.
  std::string text;
  if (rank == first) {
    text = first == 0
               ? message
               : "rank " + std::to_string(first) + " (host " + local_hostname() + "): " + message;
  }
  int agreed_code = code;
  SD_MPI_CHECK(MPI_Bcast(&agreed_code, 1, MPI_INT, first, comm));
  text = bcast_string(comm, first, text);
  throw AgreedError(static_cast<ExitCode>(agreed_code), text, rank == 0, first != 0);
}

}  // namespace shakedown
