#pragma once
// The watchdog's out-of-band channel: one TCP connection from every other rank to rank 0, set up
// over MPI at start-up (as NCCL bootstraps its own sockets). The watchdog threads talk over it, so
// only the main thread calls MPI and MPI runs at MPI_THREAD_SINGLE: the measured path pays for
// no thread-safe MPI (docs/architecture.md "Failure handling").
//
// Rank 0 listens on an ephemeral port of every IPv4 address; the others try all of rank 0's
// addresses at once (loopback last) and keep the first connection that opens. Messages are
// framed (type, length, payload); sends queue and never block, so a frozen rank 0 cannot stall
// a rank's watchdog thread. A closed connection tells rank 0 that the process at the other end
// has ended (its kernel closed the socket), on any host.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/mpi.hpp"

namespace shakedown {

class OobChannel {
 public:
  enum class Type : std::uint32_t {
    kPosition = 1,  // the others -> rank 0: where this rank is (Watchdog's PositionMessage)
    kFail,          // the others -> rank 0: exit code (int), then the failing rank's message
    kAbort,         // rank 0 -> the others: run your local aborts
    kAbortAck,      // the others -> rank 0: local aborts done
    kInterrupt,     // the others -> rank 0: this rank got a signal (int)
    kPing,          // rank 0 -> the others: report your position now
    kAbortReport,   // the others -> rank 0: a piece of this rank's abort report (Watchdog)
  };
  // The longest payload a message may carry; send() refuses a longer one.
  static constexpr std::size_t kMaxPayload = std::size_t{1} << 16;

  struct Message {
    int peer = 0;  // who sent it
    Type type = Type::kPosition;
    std::string payload;
  };

  // Collective over `comm` (main thread). `names[r]` is how errors name rank r. The other ranks
  // connect within `timeout_s`; a rank that cannot is named on every rank (AgreedError, exit 3).
  OobChannel(MPI_Comm comm, const std::vector<std::string>& names, double timeout_s);
  ~OobChannel();
  OobChannel(const OobChannel&) = delete;
  OobChannel& operator=(const OobChannel&) = delete;

  // Queues a message to `peer` (rank 0, on the other ranks) and sends what the socket takes now.
  // False when the connection is closed or its queue is full (the peer reads nothing: frozen).
  bool send(int peer, Type type, const void* data, std::size_t size);
  bool send(int peer, Type type, const std::string& payload) {
    return send(peer, type, payload.data(), payload.size());
  }
  // Waits up to `timeout_s` until every queued byte is sent; false if some are still queued.
  bool flush(double timeout_s);
  // Sends what is queued and reads what has arrived, without blocking. Any thread.
  void pump();
  // Takes the messages that have arrived (all of them, or those of one type).
  std::vector<Message> take();
  std::vector<Message> take(Type type);
  // The connection to `peer` has closed: its process ended (or the connection broke).
  bool closed(int peer) const;

 private:
  struct Connection {
    int fd = -1;
    std::string in;   // bytes read, not yet a whole message
    std::string out;  // bytes queued, not yet sent
    bool closed = true;
  };
  // The other ranks: connects to rank 0's "<port> <token> <address>..." and says hello.
  void connect_to_root(const std::string& endpoint, double timeout_s);
  void flush_locked(Connection& c);
  void read_locked(int peer, Connection& c);

  int rank_ = 0;
  int size_ = 1;
  mutable std::mutex mutex_;
  std::vector<Connection> conns_;  // by rank: rank 0 holds one per other rank, the others one
  std::vector<Message> inbox_;
};

}  // namespace shakedown
