#include "core/dynamic_library.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shakedown {

namespace {

std::string last_dl_error(const std::string& fallback) {
  const char* e = dlerror();
  return e != nullptr ? e : fallback;
}

}  // namespace

DynamicLibrary DynamicLibrary::open(const std::string& name) {
  DynamicLibrary lib;
  (void)dlerror();
  lib.name_ = name;
  lib.handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib.handle_ == nullptr) lib.error_ = last_dl_error("cannot load " + name);
  return lib;
}

DynamicLibrary DynamicLibrary::open_first(const std::vector<std::string>& candidates) {
  std::string tried;
  for (const std::string& name : candidates) {
    DynamicLibrary lib = open(name);
    if (lib.loaded()) return lib;
    tried += (tried.empty() ? "" : "; ") + lib.error();
  }
  DynamicLibrary none;
  none.error_ = tried.empty() ? "no library named" : tried;
  return none;
}

DynamicLibrary DynamicLibrary::if_loaded(const std::string& name) {
  DynamicLibrary lib;
  (void)dlerror();
  lib.name_ = name;
  lib.handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (lib.handle_ == nullptr) lib.error_ = name + " is not loaded";
  (void)dlerror();
  return lib;
}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    name_ = std::move(other.name_);
    error_ = std::move(other.error_);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* DynamicLibrary::address(const char* symbol) {
  if (handle_ == nullptr) return nullptr;
  (void)dlerror();
  void* p = dlsym(handle_, symbol);
  if (p == nullptr) error_ = last_dl_error(std::string("no symbol ") + symbol);
  return p;
}

namespace {

// Reads both pipes until the child closes them or the deadline passes; false on the deadline.
bool drain(int out_fd, int err_fd, std::string& out, std::string& err,
           std::chrono::steady_clock::time_point deadline) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const int ready = poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return true;  // nothing more can be read; the exit status tells the rest
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[512];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_fds;
        continue;
      }
      if (sinks[i]->size() < (1u << 20)) sinks[i]->append(buf, static_cast<std::size_t>(n));
    }
  }
  return true;
}

// The first non-empty line of what the child printed on stderr, for the report.
std::string first_line(const std::string& text) {
  std::size_t start = text.find_first_not_of("\r\n ");
  if (start == std::string::npos) return "";
  return text.substr(start, text.find('\n', start) - start);
}

}  // namespace

ChildProbe probe_in_child(const std::function<std::string()>& fn,
                          std::chrono::milliseconds timeout) {
  int out[2];
  int err[2];
  if (pipe(out) != 0) return {false, std::string("cannot create a pipe: ") + std::strerror(errno)};
  if (pipe(err) != 0) {
    close(out[0]);
    close(out[1]);
    return {false, std::string("cannot create a pipe: ") + std::strerror(errno)};
  }
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    return {false, std::string("cannot fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a child stuck in a library dies with its parent
    close(out[0]);
    close(err[0]);
    dup2(err[1], STDERR_FILENO);  // what a crashing library prints is the parent's to report
    std::string text;
    try {
      text = fn();
    } catch (...) {
      _exit(3);
    }
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = write(out[1], text.data() + done, text.size() - done);
      if (n <= 0) _exit(4);
      done += static_cast<std::size_t>(n);
    }
    _exit(0);  // no atexit handlers, no destructors of the parent's objects
  }
  close(out[1]);
  close(err[1]);
  std::string text, errors;
  const bool finished =
      drain(out[0], err[0], text, errors, std::chrono::steady_clock::now() + timeout);
  close(out[0]);
  close(err[0]);
  if (!finished) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string said = first_line(errors);
  const std::string tail = said.empty() ? "" : ": " + said;
  if (!finished) {
    return {false, "did not finish within " + std::to_string(timeout.count()) + " ms" + tail};
  }
  if (WIFSIGNALED(status)) {
    return {false, std::string("crashed (") + strsignal(WTERMSIG(status)) + ")" + tail};
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return {false, "failed (exit " + std::to_string(WEXITSTATUS(status)) + ")" + tail};
  }
  return {true, text};
}

}  // namespace shakedown
