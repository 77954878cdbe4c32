#pragma once
// Small string helpers every module uses: trimming, splitting, joining, and "did you mean" hints.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shakedown {

// "a, b or c": the accepted values for a message.
std::string join_choices(const std::vector<std::string_view>& choices);
// Items joined with `separator`.
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

// The candidate a typo most likely meant, if any is close enough to be worth suggesting.
std::optional<std::string_view> closest_match(std::string_view word,
                                              const std::vector<std::string_view>& candidates);

// `; did you mean "iters"?` or "" when nothing is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates);

std::string_view trim(std::string_view text);
std::string lowercase(std::string_view text);
std::vector<std::string_view> split(std::string_view text, char separator);

}  // namespace shakedown
