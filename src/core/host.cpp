#include "core/host.hpp"

#include <malloc.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

namespace shakedown {

std::string local_hostname() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return 0;
}

const char* stderr_line_start() {
  return isatty(STDERR_FILENO) == 1 ? "\r\033[K" : "";
}

int cpu_share(int host_ranks) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return 1;
  const int mine = CPU_COUNT(&mask);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const int ranks = std::max(1, host_ranks);
  if (online > 0 && static_cast<long>(mine) * ranks <= online) return std::max(1, mine);
  return std::max(1, mine / ranks);
}

void release_free_memory() {
  malloc_trim(0);
}

}  // namespace shakedown
