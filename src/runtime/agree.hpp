#pragma once
// Set-up steps that every rank runs on its own data (its copy of the config file, its view of the
// layout) must fail the same way everywhere: otherwise the ranks that succeeded wait forever in
// the next collective for the one that threw. `agreed` runs a step on every rank and, if it threw
// anywhere, throws the lowest failing rank's error on every rank, naming that rank.
#include <exception>
#include <optional>
#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "runtime/mpi.hpp"

namespace shakedown {

// Collective over `comm`. `code` 0 = this rank succeeded. Throws the first failure everywhere,
// as an AgreedError.
void raise_first_failure(MPI_Comm comm, int code, const std::string& message);

template <class F>
auto agreed(MPI_Comm comm, F&& fn) -> decltype(fn()) {
  using Result = decltype(fn());
  int code = 0;
  std::string message;
  std::optional<std::conditional_t<std::is_void_v<Result>, int, Result>> result;
  try {
    if constexpr (std::is_void_v<Result>) {
      fn();
    } else {
      result.emplace(fn());
    }
  } catch (const Error& e) {
    code = static_cast<int>(e.code());
    message = e.what();
  } catch (const std::exception& e) {
    code = static_cast<int>(ExitCode::kInternal);
    message = std::string("internal error: ") + e.what();
  }
  raise_first_failure(comm, code, message);
  if constexpr (!std::is_void_v<Result>) return std::move(*result);
}

}  // namespace shakedown
