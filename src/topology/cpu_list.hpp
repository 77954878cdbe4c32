#pragma once
// CPU list strings as Linux and hwloc print them ("0-3,8,10-11"). Pure helpers: placement checks
// compare ranks' bindings from these strings, because records carry strings, not bitmaps.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shakedown {

// "0-3,8" -> {0,1,2,3,8} (sorted, unique). Empty or blank text -> empty vector.
// nullopt when the text is not a CPU list (callers treat that CPU set as unknown).
std::optional<std::vector<int>> parse_cpu_list(std::string_view text);

// {0,1,2,3,8} -> "0-3,8". Input need not be sorted; duplicates are ignored.
std::string format_cpu_list(std::vector<int> cpus);

}  // namespace shakedown
