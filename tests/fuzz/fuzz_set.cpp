// --set key.path=value overrides, validated like the file: one override per input line.
#include <cstdint>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shakedown;
  std::vector<std::string> sets;
  std::string line;
  for (char c : fuzz::as_text(data, size)) {
    if (c == '\n') {
      sets.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (!line.empty()) sets.push_back(line);
  fuzz::expect_clean([&] { (void)default_config(sets); });
  return 0;
}
