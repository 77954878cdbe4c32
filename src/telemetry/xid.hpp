#pragma once
// Xid errors: the NVIDIA driver's reports of GPU faults, which it writes to the kernel log
// ("NVRM: Xid (PCI:0000:1b:00): 79, pid=..., GPU has fallen off the bus."). The sampler reads
// the log from its start on, so only Xids raised during the run count.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shakedown::telemetry {

struct XidEvent {
  std::string bus;  // "0000:1b:00" as the driver writes it (no function)
  int code = 0;
  std::string text;  // the rest of the line, for the record
};

// One kernel log line (a /dev/kmsg record "6,1234,5678,-;NVRM: ..." or a dmesg line) as an Xid,
// or nullopt when it is not one.
std::optional<XidEvent> parse_xid(std::string_view line);

// Whether an Xid usually comes from the application rather than the GPU (13 graphics engine
// exception, 31 MMU fault, 43 reset channel, 45 preemptive cleanup): a warning, not a fault.
bool xid_from_application(int code);

// New kernel log lines since construction. /dev/kmsg by default (needs CAP_SYSLOG or
// kernel.dmesg_restrict=0); any file works the same way, which is how the tests use it.
class XidReader {
 public:
  explicit XidReader(const std::string& path = "/dev/kmsg");
  XidReader(XidReader&& other) noexcept;
  XidReader& operator=(XidReader&&) = delete;
  XidReader(const XidReader&) = delete;
  XidReader& operator=(const XidReader&) = delete;
  ~XidReader();

  bool readable() const noexcept { return fd_ >= 0; }
  const std::string& why() const noexcept { return why_; }  // why it is not readable
  // The Xid lines written since the last poll (never blocks).
  std::vector<XidEvent> poll();

 private:
  int fd_ = -1;
  std::string why_;
  std::string partial_;  // a line read only in part (a plain file being written)
};

}  // namespace shakedown::telemetry
