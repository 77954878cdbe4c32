#include "runtime/mpi.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/error.hpp"

namespace shakedown {

void mpi_check(int rc, const char* expr, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw RuntimeFault("MPI error in " + std::string(expr) + " at " + file + ":" +
                     std::to_string(line) + ": " +
                     std::string(text, static_cast<std::size_t>(len)));
}

int requested_thread_level() {
  const char* text = std::getenv("SHAKEDOWN_MPI_THREAD");
  const std::string value = text != nullptr ? text : "";
  if (value.empty() || value == "single") return MPI_THREAD_SINGLE;
  if (value == "funneled") return MPI_THREAD_FUNNELED;
  throw UsageError("SHAKEDOWN_MPI_THREAD='" + value +
                   "' is not a thread level shakedown can run at: use single (the default) or "
                   "funneled");
}

std::string thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
    default:
      return "level " + std::to_string(level);
  }
}

MpiEnvironment::MpiEnvironment(int* argc, char*** argv) {
  if (initialized()) return;
  // Only the main thread calls MPI (the watchdog threads talk over their own sockets,
  // runtime/oob.hpp). Open MPI turns on its internal locks for any level above
  // MPI_THREAD_SINGLE, which costs every call on the measured path as MPI_THREAD_MULTIPLE does
  // (about 0.25 us per small collective): so single by default (docs/architecture.md
  // "Failure handling"), funneled on request.
  const int requested = requested_thread_level();
  int provided = MPI_THREAD_SINGLE;
  SD_MPI_CHECK(MPI_Init_thread(argc, argv, requested, &provided));
  owns_ = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < requested) {
    MPI_Finalize();  // the destructor will not run for a constructor that throws
    owns_ = false;
    throw RuntimeFault("SHAKEDOWN_MPI_THREAD asks for " + thread_level_name(requested) +
                       ", and the MPI library provides " + thread_level_name(provided) +
                       " only: unset it (single is the default) or use an MPI built with thread "
                       "support");
  }
}

MpiEnvironment::~MpiEnvironment() {
  if (owns_ && !finalized()) MPI_Finalize();
}

bool MpiEnvironment::initialized() {
  int flag = 0;
  MPI_Initialized(&flag);
  return flag != 0;
}

bool MpiEnvironment::finalized() {
  int flag = 0;
  MPI_Finalized(&flag);
  return flag != 0;
}

CommHandle::~CommHandle() {
  if (comm_ != MPI_COMM_NULL && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_SELF &&
      !MpiEnvironment::finalized()) {
    MPI_Comm_free(&comm_);
  }
}

CommHandle& CommHandle::operator=(CommHandle&& other) noexcept {
  if (this != &other) {
    CommHandle old(release());
    comm_ = other.release();
  }
  return *this;
}

int CommHandle::rank() const {
  return comm_rank(comm_);
}
int CommHandle::size() const {
  return comm_size(comm_);
}

CommHandle comm_dup(MPI_Comm comm) {
  MPI_Comm out = MPI_COMM_NULL;
  SD_MPI_CHECK(MPI_Comm_dup(comm, &out));
  SD_MPI_CHECK(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN));
  return CommHandle(out);
}

CommHandle comm_split(MPI_Comm comm, int color, int key) {
  MPI_Comm out = MPI_COMM_NULL;
  SD_MPI_CHECK(MPI_Comm_split(comm, color, key, &out));
  if (out != MPI_COMM_NULL) SD_MPI_CHECK(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN));
  return CommHandle(out);
}

int comm_rank(MPI_Comm comm) {
  int r = 0;
  SD_MPI_CHECK(MPI_Comm_rank(comm, &r));
  return r;
}

int comm_size(MPI_Comm comm) {
  int n = 0;
  SD_MPI_CHECK(MPI_Comm_size(comm, &n));
  return n;
}

namespace {

std::vector<int> displacements(const std::vector<int>& counts, int* total) {
  std::vector<int> displs(counts.size(), 0);
  long long sum = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    displs[i] = static_cast<int>(sum);
    sum += counts[i];
  }
  if (sum > 0x7fffffff)
    throw RuntimeFault("gathered records exceed 2 GiB; too many ranks for one gather");
  *total = static_cast<int>(sum);
  return displs;
}

std::vector<std::string> split_by_counts(const std::string& flat, const std::vector<int>& counts,
                                         const std::vector<int>& displs) {
  std::vector<std::string> out(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) {
    out[i] = flat.substr(static_cast<std::size_t>(displs[i]), static_cast<std::size_t>(counts[i]));
  }
  return out;
}

}  // namespace

std::vector<std::string> gather_strings(MPI_Comm comm, int root, const std::string& mine) {
  const int n = comm_size(comm);
  const bool is_root = comm_rank(comm) == root;
  int len = static_cast<int>(mine.size());
  std::vector<int> counts(is_root ? static_cast<std::size_t>(n) : 0);
  SD_MPI_CHECK(MPI_Gather(&len, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm));
  int total = 0;
  std::vector<int> displs = is_root ? displacements(counts, &total) : std::vector<int>{};
  std::string flat(static_cast<std::size_t>(total), '\0');
  SD_MPI_CHECK(MPI_Gatherv(mine.data(), len, MPI_CHAR, flat.data(), counts.data(), displs.data(),
                           MPI_CHAR, root, comm));
  if (!is_root) return {};
  return split_by_counts(flat, counts, displs);
}

std::vector<std::string> allgather_strings(MPI_Comm comm, const std::string& mine) {
  const int n = comm_size(comm);
  int len = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(n));
  SD_MPI_CHECK(MPI_Allgather(&len, 1, MPI_INT, counts.data(), 1, MPI_INT, comm));
  int total = 0;
  std::vector<int> displs = displacements(counts, &total);
  std::string flat(static_cast<std::size_t>(total), '\0');
  SD_MPI_CHECK(MPI_Allgatherv(mine.data(), len, MPI_CHAR, flat.data(), counts.data(), displs.data(),
                              MPI_CHAR, comm));
  return split_by_counts(flat, counts, displs);
}

std::string bcast_string(MPI_Comm comm, int root, std::string value) {
  unsigned long long len = value.size();
  SD_MPI_CHECK(MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG_LONG, root, comm));
  value.resize(static_cast<std::size_t>(len));
  if (len > 0) {
    SD_MPI_CHECK(MPI_Bcast(value.data(), static_cast<int>(len), MPI_CHAR, root, comm));
  }
  return value;
}

void idle_barrier(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  SD_MPI_CHECK(MPI_Ibarrier(comm, &request));
  int done = 0;
  SD_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
  std::chrono::microseconds pause(50);
  while (done == 0) {
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
    SD_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
  }
}

}  // namespace shakedown
