#pragma once
// Facts about the process's host that every layer may need.
#include <string>

namespace shakedown {

// gethostname(), or "unknown". Used for messages and records only: node identity comes from the
// Context (shared-memory split), never from this name.
std::string local_hostname();

// The rank as the launcher announces it before MPI is up (Open MPI, PMIx, PMI, Slurm); 0 when
// unknown. Lets processes decide who prints before MPI can be asked.
int launcher_rank();

// What a message on stderr starts with so it begins on a line of its own: on a terminal, where
// the progress line (runtime/progress.hpp) may be drawn without a newline, a return and a
// clear-line; elsewhere nothing (there, progress lines end with a newline).
const char* stderr_line_start();

// How many CPUs this process may keep busy for untimed host work (pattern fills and checks)
// without taking them from the other ranks on the host: its whole affinity mask when the
// `host_ranks` ranks' masks can be disjoint (bound ranks), else its even share of the mask
// (unbound ranks all see every CPU). At least 1.
int cpu_share(int host_ranks);

// Hands the memory this process freed back to the system (glibc's malloc_trim: free pages inside
// the heaps too, not only at their tops). glibc keeps freed memory for reuse, and raises its
// threshold for keeping it to twice the largest block it has freed, so a rank that allocates and
// frees megabyte buffers between measurements (a collective sweep's, a GEMM shape's) would hold
// tens of MB it no longer uses: rank 0's peak in the CPU smoke run varied 55-77 MB with it and
// stays at 48-52 MB trimmed. Takes about 0.1-0.3 ms; call it between measured units, never inside
// a timed region (it locks each malloc arena while it walks it).
void release_free_memory();

}  // namespace shakedown
