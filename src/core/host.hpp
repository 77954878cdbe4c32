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

}  // namespace shakedown
