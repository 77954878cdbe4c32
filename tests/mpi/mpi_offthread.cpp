// The MPI profiling interface: each MPI function below replaces the library's for this test
// binary, notes whether the calling thread is MPI's main thread, and calls the library's PMPI_
// version. The functions are the ones shakedown's threads could be tempted to call (point to
// point, probes, requests, collectives, communicator queries). MPI_Abort is not among them: it
// is the watchdog thread's one deliberate call (runtime/watchdog.cpp, abort_job).
#include "mpi_offthread.hpp"

#include <mpi.h>

#include <atomic>
#include <mutex>

namespace {

// Process-wide by nature: the interposed functions are free functions MPI calls by name.
std::atomic<int> off_main_calls{0};
std::mutex first_mutex;
std::string first_call;

void note(const char* name) {
  int is_main = 1;
  if (PMPI_Is_thread_main(&is_main) != MPI_SUCCESS || is_main) return;
  if (off_main_calls.fetch_add(1) == 0) {
    std::lock_guard lock(first_mutex);
    first_call = name;
  }
}

}  // namespace

namespace shakedown::testing_support {

int mpi_calls_off_main_thread() {
  return off_main_calls.load();
}

std::string first_mpi_call_off_main_thread() {
  std::lock_guard lock(first_mutex);
  return first_call;
}

}  // namespace shakedown::testing_support

extern "C" {

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  note("MPI_Send");
  return PMPI_Send(buf, count, type, dest, tag, comm);
}
int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  note("MPI_Isend");
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}
int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  note("MPI_Recv");
  return PMPI_Recv(buf, count, type, source, tag, comm, status);
}
int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request* request) {
  note("MPI_Irecv");
  return PMPI_Irecv(buf, count, type, source, tag, comm, request);
}
int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  note("MPI_Iprobe");
  return PMPI_Iprobe(source, tag, comm, flag, status);
}
int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
                MPI_Status* status) {
  note("MPI_Improbe");
  return PMPI_Improbe(source, tag, comm, flag, message, status);
}
int MPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) {
  note("MPI_Mrecv");
  return PMPI_Mrecv(buf, count, type, message, status);
}
int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  note("MPI_Test");
  return PMPI_Test(request, flag, status);
}
int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  note("MPI_Wait");
  return PMPI_Wait(request, status);
}
int MPI_Cancel(MPI_Request* request) {
  note("MPI_Cancel");
  return PMPI_Cancel(request);
}
int MPI_Request_free(MPI_Request* request) {
  note("MPI_Request_free");
  return PMPI_Request_free(request);
}
int MPI_Barrier(MPI_Comm comm) {
  note("MPI_Barrier");
  return PMPI_Barrier(comm);
}
int MPI_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  note("MPI_Bcast");
  return PMPI_Bcast(buf, count, type, root, comm);
}
int MPI_Allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  note("MPI_Allreduce");
  return PMPI_Allreduce(send, recv, count, type, op, comm);
}
int MPI_Gather(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
               MPI_Datatype recv_type, int root, MPI_Comm comm) {
  note("MPI_Gather");
  return PMPI_Gather(send, send_count, send_type, recv, recv_count, recv_type, root, comm);
}
int MPI_Allgather(const void* send, int send_count, MPI_Datatype send_type, void* recv,
                  int recv_count, MPI_Datatype recv_type, MPI_Comm comm) {
  note("MPI_Allgather");
  return PMPI_Allgather(send, send_count, send_type, recv, recv_count, recv_type, comm);
}
int MPI_Comm_rank(MPI_Comm comm, int* rank) {
  note("MPI_Comm_rank");
  return PMPI_Comm_rank(comm, rank);
}
int MPI_Comm_size(MPI_Comm comm, int* size) {
  note("MPI_Comm_size");
  return PMPI_Comm_size(comm, size);
}

}  // extern "C"
