// The topology.blocks file (Slurm topology.conf syntax): a map or a UsageError naming the line;
// every listed node then finds its group.
#include <cstdint>
#include <cstdlib>

#include "fuzz_common.hpp"
#include "topology/network.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shakedown;
  fuzz::expect_clean([&] {
    const NetworkMap map = NetworkMap::parse(fuzz::as_text(data, size), "fuzz.conf");
    for (const auto& block : map.blocks()) {
      for (const auto& node : block.nodes) {
        if (map.block_of(node) == nullptr) std::abort();
      }
    }
  });
  return 0;
}
