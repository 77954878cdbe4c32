#include "telemetry/xid.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace shakedown::telemetry {

std::optional<XidEvent> parse_xid(std::string_view line) {
  constexpr std::string_view kMark = "NVRM: Xid (PCI:";
  const auto at = line.find(kMark);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + kMark.size());
  const auto close = rest.find(')');
  if (close == std::string_view::npos) return std::nullopt;
  XidEvent e;
  e.bus = std::string(rest.substr(0, close));
  rest = rest.substr(close + 1);
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  rest = rest.substr(colon + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  int code = 0;
  std::size_t digits = 0;
  while (digits < rest.size() && digits < 6 && rest[digits] >= '0' && rest[digits] <= '9') {
    code = code * 10 + (rest[digits] - '0');
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  e.code = code;
  e.text = std::string(line.substr(at + 6));  // from "Xid"
  while (!e.text.empty() && (e.text.back() == '\n' || e.text.back() == '\r')) e.text.pop_back();
  return e;
}

bool xid_from_application(int code) {
  return code == 13 || code == 31 || code == 43 || code == 45;
}

XidReader::XidReader(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    why_ = path + ": " + std::strerror(errno);
    return;
  }
  // Only what is written from now on: /dev/kmsg takes SEEK_END as "after the last record".
  if (::lseek(fd_, 0, SEEK_END) < 0) {
    why_ = path + ": cannot seek to its end: " + std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
  }
}

XidReader::XidReader(XidReader&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      why_(std::move(other.why_)),
      partial_(std::move(other.partial_)) {}

XidReader::~XidReader() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<XidEvent> XidReader::poll() {
  std::vector<XidEvent> out;
  if (fd_ < 0) return out;
  char buf[8192];
  for (int reads = 0; reads < 4096; ++reads) {  // bounded: a flood of log lines cannot stall it
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    // EPIPE: /dev/kmsg overwrote records before we read them; the next read goes on.
    if (n < 0 && errno == EPIPE) continue;
    if (n <= 0) break;  // EAGAIN: nothing new; 0: end of a plain file
    partial_.append(buf, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (auto e = parse_xid(std::string_view(partial_).substr(start, nl - start))) {
        out.push_back(std::move(*e));
      }
    }
    partial_.erase(0, start);
    if (partial_.size() > 65536) partial_.clear();  // not a log of lines
  }
  return out;
}

}  // namespace shakedown::telemetry
