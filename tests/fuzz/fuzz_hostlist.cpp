// Slurm hostlist expressions: names or std::invalid_argument, never more than the limit.
#include <cstdint>
#include <cstdlib>

#include "fuzz_common.hpp"
#include "topology/hostlist.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shakedown;
  try {
    const auto names = expand_hostlist(fuzz::as_text(data, size), 10000);
    if (names.size() > 10000) std::abort();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
