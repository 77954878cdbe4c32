// --inject specs: a FaultSpec or a UsageError saying what is accepted.
#include <cstdint>

#include "fuzz_common.hpp"
#include "runtime/inject.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shakedown;
  fuzz::expect_clean([&] {
    const FaultSpec spec = parse_fault(fuzz::as_text(data, size));
    validate_faults({spec}, 4, 2, {"inventory", "collectives", "gemm"});
  });
  return 0;
}
