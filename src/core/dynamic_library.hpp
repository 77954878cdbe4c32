#pragma once
// Optional libraries loaded at first use (UCX, NVML, ...), so a missing or broken one
// fails only what needs it, and a library whose load-time constructors can crash the process
// (libucs with a 64-character host name) cannot take down the subcommands that never use it.
#include <dlfcn.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shakedown {

// An owned dlopen handle (RTLD_NOW | RTLD_LOCAL), closed on destruction. Move-only.
class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  // Loads `name` (a soname such as "libucp.so.0"). Check loaded(); error() says why not.
  static DynamicLibrary open(const std::string& name);
  // The first of `candidates` (sonames or paths) that loads; error() names every attempt.
  static DynamicLibrary open_first(const std::vector<std::string>& candidates);
  // The handle of `name` if the process has loaded it already (RTLD_NOLOAD): no constructor runs.
  static DynamicLibrary if_loaded(const std::string& name);

  DynamicLibrary(DynamicLibrary&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)),
        name_(std::move(other.name_)),
        error_(std::move(other.error_)) {}
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary();

  bool loaded() const noexcept { return handle_ != nullptr; }
  const std::string& error() const noexcept { return error_; }
  // The soname or path it was opened with.
  const std::string& name() const noexcept { return name_; }
  // The symbol as a function pointer of type Fn, or nullptr (error() then says why).
  template <class Fn>
  Fn function(const char* symbol) {
    return reinterpret_cast<Fn>(address(symbol));
  }

 private:
  void* address(const char* symbol);
  void* handle_ = nullptr;
  std::string name_;
  std::string error_;
};

// What probe_in_child returns: the text the child produced, or why there is none.
struct ChildProbe {
  bool ok = false;
  std::string text;  // the child's result when ok, else what went wrong ("crashed: Aborted")
};
// Runs `fn` in a forked child process and returns the string it produced. A child that crashes,
// or does not finish within `timeout`, cannot harm this process: it is reported (and killed).
// For calls into a library whose loading alone may abort the process. The child must not touch
// MPI, CUDA or anything else shared with the parent; it only computes and writes the result.
ChildProbe probe_in_child(const std::function<std::string()>& fn,
                          std::chrono::milliseconds timeout);

}  // namespace shakedown
