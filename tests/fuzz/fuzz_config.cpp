// The config loader: YAML text -> Config or a UsageError naming the key; a Config that loads
// must round-trip through to_yaml.
#include <cstdint>
#include <cstdlib>

#include "config/load.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shakedown;
  fuzz::expect_clean([&] {
    const Config config = load_config(fuzz::as_text(data, size), "fuzz.yaml");
    const std::string yaml = to_yaml(config);
    if (to_yaml(load_config(yaml, "round-trip.yaml")) != yaml) std::abort();
  });
  return 0;
}
