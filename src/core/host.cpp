#include "core/host.hpp"

#include <unistd.h>

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

}  // namespace shakedown
