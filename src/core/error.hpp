#pragma once
// Errors and exit codes shared by every module (docs/architecture.md "Exit codes").
#include <stdexcept>
#include <string>
#include <utility>

namespace shakedown {

enum class ExitCode : int {
  kPass = 0,         // every check passed
  kCheckFailed = 1,  // a check failed; the verdict names it
  kUsage = 2,        // usage or configuration error
  kRuntime = 3,      // timeout/hang, rank failure, I/O error, data corruption
  kInternal = 4,     // a bug in shakedown
};

// what() is the one-line message a user reads first: what failed, where, what to do. detail()
// is optional diagnostic text for the end of the report (a library's whole error stack).
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message, std::string detail = {})
      : std::runtime_error(message), code_(code), detail_(std::move(detail)) {}
  ExitCode code() const noexcept { return code_; }
  const std::string& detail() const noexcept { return detail_; }

 private:
  ExitCode code_;
  std::string detail_;
};

// Bad command line, bad config, contradictory settings: exit 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(ExitCode::kUsage, message) {}
};

// Timeouts, failed ranks, I/O errors, wrong data: exit 3.
class RuntimeFault : public Error {
 public:
  explicit RuntimeFault(const std::string& message, std::string detail = {})
      : Error(ExitCode::kRuntime, message, std::move(detail)) {}
};

// An allocation failed (host or device): a sweep records the size as skipped and goes on.
class OutOfMemory : public RuntimeFault {
 public:
  using RuntimeFault::RuntimeFault;
};

// The same error on every rank (runtime/agree.hpp): one rank reporting it is enough. `reporter`
// is true on that one rank (rank 0 of the communicator that agreed), decided where the error is
// raised, while MPI still says who is who: the launcher's environment (OMPI_COMM_WORLD_RANK,
// SLURM_PROCID) can carry a rank from an enclosing job step and is not evidence.
class AgreedError : public Error {
 public:
  AgreedError(ExitCode code, const std::string& message, bool reporter, bool names_rank = false)
      : Error(code, message), reporter_(reporter), names_rank_(names_rank) {}
  bool reporter() const noexcept { return reporter_; }
  // The message begins with the failing rank's name ("rank 3 (host b): ..."), which is not the
  // reporter's: whoever reports it must not put its own name in front.
  bool names_rank() const noexcept { return names_rank_; }

 private:
  bool reporter_;
  bool names_rank_;
};

// Library call failed in a way we did not expect: exit 4 unless the caller knows better.
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message) : Error(ExitCode::kInternal, message) {}
};

}  // namespace shakedown
