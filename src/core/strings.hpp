#pragma once
// Small string helpers every module uses: trimming, splitting, joining, and "did you mean" hints.
#include <concepts>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shakedown {

// "a, b or c": the accepted values for a message.
std::string join_choices(const std::vector<std::string_view>& choices);
// `word` as a POSIX shell reads it back: unchanged when it holds only safe characters, else in
// single quotes ('it'\''s'). For recording a command line that can be pasted and run again.
std::string shell_quote(std::string_view word);

// `text` with every byte that is not part of a well-formed UTF-8 sequence replaced by '?' (a
// damaged file's strings, a host's odd name), for formats that must be UTF-8 (XML, Prometheus).
std::string valid_utf8(std::string_view text);

// "1 rank", "3 ranks"; `many` where the plural is not `one` + "s".
std::string plural(std::size_t n, const std::string& one, const std::string& many = "");
// Items joined with `separator`.
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");
// The first `most` items joined with `separator`, then "<separator>and N more" for the rest: a
// list that stays readable on 1,000 nodes.
std::string join_limited(const std::vector<std::string>& items, std::string_view separator,
                         std::size_t most = 8);

// The candidate a typo most likely meant, if any is close enough to be worth suggesting.
std::optional<std::string_view> closest_match(std::string_view word,
                                              const std::vector<std::string_view>& candidates);

// `; did you mean "iters"?` or "" when nothing is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates);

// trim and split return views into `text`: the caller keeps it alive. Handing them a temporary
// std::string is refused at compile time (the overloads below), because the views would dangle
// as soon as the full expression ends, e.g. in `for (auto part : split(lowercase(s), 'x'))`,
// where the range-for keeps the vector alive but not the string the views point into.
std::string_view trim(std::string_view text);
std::string lowercase(std::string_view text);
std::vector<std::string_view> split(std::string_view text, char separator);

template <class S>
requires std::same_as<S, std::string> std::string_view trim(S&& text)
= delete;
template <class S>
requires std::same_as<S, std::string> std::vector<std::string_view> split(S&& text, char separator)
= delete;

}  // namespace shakedown
