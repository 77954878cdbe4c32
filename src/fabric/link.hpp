#pragma once
// One rank's end of the link scan's point-to-point tests (docs/linkscan.md). The scan pairs two
// ranks on different nodes; both ends make the matching calls in the same order, the lower
// node's rank as the initiator. Transports: UCX's tag API (the default: what carries MPI and
// NCCL traffic between nodes) and MPI send/receive (for systems without UCX).
//  - bandwidth (as ucx_perftest's tag_bw): the receiver posts `window` receives of `bytes` and
//    says so; the sender then sends `window` messages and the receiver acknowledges them all
//    with one byte: bytes x window / (first send -> acknowledgement), timed by the sender;
//  - bidirectional bandwidth: both ends post `window` receives, say so, then send `window`
//    messages each at once and acknowledge; 2 x bytes x window / (first send -> the peer's
//    acknowledgement), timed by the initiator (the figure counts both directions);
//  - latency (as tag_lat): one round trip of a small message; half of it is the latency.
// The buffers are reused by every message of a window, as ucx_perftest does: the scan measures
// the link, not the data (collectives check data).
#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace shakedown::fabric {

// The messages of a pair test, as MPI tags (kTagBase + value) or UCX tags (value << 32 | sender).
enum class Message : int { kData = 1, kReady = 2, kAck = 3, kPing = 4, kPong = 5 };

// Monotonic seconds, for the pair tests' timings.
inline double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class Link {
 public:
  Link() = default;
  virtual ~Link() = default;
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  virtual std::string kind() const = 0;  // "ucx" | "mpi"
  // Where the bandwidth messages live: "host" or "cuda" (the rank's GPU memory), and, when
  // linkscan.memory auto chose host, why ("" otherwise).
  virtual std::string memory() const { return "host"; }
  virtual std::string memory_note() const { return ""; }
  // Connects to world rank `peer` (both ends call it in the same round; a no-op when connected).
  virtual void connect(int peer) = 0;
  // What carries the traffic to `peer`, once connected: "mpi", or UCX's lanes,
  // "tcp/eth0" or "posix/memory,sysv/memory" (transport/device, as ucp_ep_print_info says).
  virtual std::string transport_to(int peer) = 0;
  // One bandwidth window: the sender returns its seconds, the receiver 0.
  virtual double window_send(int peer) = 0;
  virtual void window_recv(int peer) = 0;
  // One window each way at once (both ends call it): the initiator returns its seconds, the
  // other end 0.
  virtual double window_both(int peer, bool initiator) = 0;
  // One round trip: the initiator returns its seconds, the responder 0.
  virtual double ping(int peer) = 0;
  virtual void pong(int peer) = 0;
};

struct LinkOptions {
  std::size_t bytes = 4u << 20;  // each bandwidth message
  int window = 32;               // messages in flight per window
  std::size_t lat_bytes = 8;     // each latency message
  std::string net_devices;       // UCX_NET_DEVICES for this rank's rail ("" = UCX's choice)
  bool bidirectional = false;    // window_both is used: a second buffer for the peer's window
  // linkscan.memory: "host", "cuda" (this rank's GPU, cuda_device, for the bandwidth messages)
  // or "auto" (cuda where it can be, else host). UCX only; MPI uses host memory.
  std::string memory = "host";
  int cuda_device = -1;       // this rank's GPU, -1 none
  std::string no_gpu_reason;  // why cuda_device is -1
};

// Over a duplicate of `world`.
std::unique_ptr<Link> make_mpi_link(MPI_Comm world, const LinkOptions& options);
// Loads UCX (libucp.so.0), makes a context and worker, and exchanges worker addresses over
// `world` (collective). GPU memory for the bandwidth messages (options.memory cuda, or auto on a
// world where every rank has a GPU and UCX reports CUDA memory in ucp_context_query's
// memory_types) is detected, never assumed: cuda where it cannot be is a UsageError naming
// linkscan.memory and the rank. Throws UsageError on every rank, naming the rank and what failed,
// when UCX cannot be loaded or started anywhere.
std::unique_ptr<Link> make_ucx_link(MPI_Comm world, const LinkOptions& options);

}  // namespace shakedown::fabric
