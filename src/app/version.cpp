#include <sstream>

#include "app/app.hpp"
#include "core/build_info.hpp"
#include "topology/versions.hpp"

namespace shakedown {

std::string version_text() {
  const LibraryVersions v = library_versions();
  std::ostringstream os;
  os << "shakedown " << SHAKEDOWN_VERSION << " (git " << SHAKEDOWN_GIT_HASH << ", "
     << SHAKEDOWN_BUILD_TYPE << ")\n"
     << "backends: cuda " << (v.cuda_built ? "yes" : "no") << ", nccl " << v.nccl << ", mpi "
     << v.mpi << "\n"
     << "cuda runtime " << v.cuda_runtime << ", cuda driver " << v.cuda_driver << "\n"
     << "hdf5 " << v.hdf5 << ", ucx " << v.ucx << ", hwloc " << v.hwloc << ", openblas "
     << v.openblas << "\n";
  return os.str();
}

}  // namespace shakedown
