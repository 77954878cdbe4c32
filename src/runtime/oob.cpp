#include "runtime/oob.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "runtime/agree.hpp"
#include "runtime/clock.hpp"

namespace shakedown {

namespace {

constexpr std::uint32_t kMagic = 0x53445744;  // "SDWD"
constexpr std::size_t kMaxQueued = 1 << 20;   // per connection; past it the peer reads nothing
constexpr int kSpareFiles = 64;               // rank 0's files besides the connections

struct Hello {
  std::uint32_t magic;
  std::int32_t rank;
  std::uint64_t token;  // this job's: a stray connection (another job, a port scan) is dropped
};
struct Header {
  std::uint32_t type;
  std::uint32_t size;
};

// Owns a socket.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

std::string errno_text() {
  return std::strerror(errno);
}

// This host's IPv4 addresses that are up, loopback last: rank 0's candidates for the others.
std::vector<std::string> local_ipv4_addresses() {
  std::vector<std::string> outer, loopback;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
      if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_RUNNING) == 0) continue;
      sockaddr_in in{};
      std::memcpy(&in, a->ifa_addr, sizeof in);
      char text[INET_ADDRSTRLEN] = {};
      if (inet_ntop(AF_INET, &in.sin_addr, text, sizeof text) == nullptr) continue;
      auto& into = (a->ifa_flags & IFF_LOOPBACK) != 0 ? loopback : outer;
      if (std::find(into.begin(), into.end(), text) == into.end()) into.emplace_back(text);
    }
    freeifaddrs(list);
  }
  outer.insert(outer.end(), loopback.begin(), loopback.end());
  if (outer.empty()) outer.emplace_back("127.0.0.1");
  return outer;
}

// Rank 0 keeps one connection per other rank open: make sure it may.
void ensure_file_limit(int size) {
  const auto needed = static_cast<rlim_t>(size) + kSpareFiles;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= needed) return;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed) {
    throw RuntimeFault("rank 0 needs " + std::to_string(needed) +
                       " open files for the watchdog's connections to the other " +
                       std::to_string(size - 1) + " ranks, and its hard limit is " +
                       std::to_string(limit.rlim_max) +
                       " (ulimit -Hn): raise it on rank 0's node (limits.conf, or the "
                       "launcher's propagated limits)");
  }
  limit.rlim_cur = needed;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    throw RuntimeFault("rank 0 cannot raise its open-file limit to " + std::to_string(needed) +
                       " for the watchdog's connections: " + errno_text());
  }
}

// Rank 0's listening socket on every IPv4 address, an ephemeral port.
Socket listen_any(int* port) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (s.get() < 0) throw RuntimeFault("rank 0: cannot open the watchdog's socket: " + errno_text());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(s.get(), SOMAXCONN) != 0) {
    throw RuntimeFault("rank 0: cannot listen for the watchdog's connections: " + errno_text());
  }
  socklen_t len = sizeof addr;
  if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw RuntimeFault("rank 0: cannot read the watchdog's port: " + errno_text());
  }
  *port = ntohs(addr.sin_port);
  return s;
}

void set_nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Rank 0's side of the start-up: accepts connections and reads each one's hello until every
// other rank is known (or it is told to stop, or the deadline passes). Calls no MPI: it runs
// beside the main thread's collectives.
class Acceptor {
 public:
  Acceptor(Socket listener, int size, std::uint64_t token, double deadline_us)
      : listener_(std::move(listener)),
        size_(size),
        token_(token),
        deadline_us_(deadline_us),
        by_rank_(static_cast<std::size_t>(size)) {
    thread_ = std::thread([this] { run(); });
  }
  ~Acceptor() {
    hurry(0);
    finish();
  }
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  // Brings the deadline forward to `deadline_us` at the latest.
  void hurry(double deadline_us) {
    double d = deadline_us_.load();
    while (deadline_us < d && !deadline_us_.compare_exchange_weak(d, deadline_us)) {
    }
  }
  // Waits for the thread; then the connections, by rank (-1: none), are the caller's.
  std::vector<Socket>& finish() {
    if (thread_.joinable()) thread_.join();
    return by_rank_;
  }

 private:
  void run() {
    struct Pending {
      Socket socket;
      Hello hello{};
      std::size_t got = 0;
    };
    std::vector<Pending> pending;
    int known = 0;
    while (known < size_ - 1 && now_us() < deadline_us_.load()) {
      std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
      for (const Pending& p : pending) fds.push_back({p.socket.get(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
      for (std::size_t i = pending.size(); i-- > 0;) {
        if (fds[i + 1].revents == 0) continue;
        Pending& p = pending[i];
        const ssize_t n = ::recv(p.socket.get(), reinterpret_cast<char*>(&p.hello) + p.got,
                                 sizeof p.hello - p.got, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n > 0) p.got += static_cast<std::size_t>(n);
        bool keep = n > 0;
        if (p.got == sizeof p.hello) {
          const int r = p.hello.rank;
          keep = false;
          if (p.hello.magic == kMagic && p.hello.token == token_ && r > 0 && r < size_ &&
              by_rank_[static_cast<std::size_t>(r)].get() < 0) {
            by_rank_[static_cast<std::size_t>(r)] = std::move(p.socket);
            ++known;
          }
        }
        if (!keep) pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
      }
      if ((fds[0].revents & POLLIN) != 0) {
        for (;;) {
          const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) break;
          pending.push_back(Pending{Socket(fd)});
        }
      }
    }
  }

  Socket listener_;
  int size_;
  std::uint64_t token_;
  std::atomic<double> deadline_us_;
  std::vector<Socket> by_rank_;
  std::thread thread_;
};

}  // namespace

OobChannel::OobChannel(MPI_Comm comm, const std::vector<std::string>& names, double timeout_s) {
  rank_ = comm_rank(comm);
  size_ = comm_size(comm);
  conns_.resize(static_cast<std::size_t>(size_));
  if (size_ == 1) return;
  auto name = [&](int r) {
    return static_cast<std::size_t>(r) < names.size() ? names[static_cast<std::size_t>(r)]
                                                      : "rank " + std::to_string(r);
  };
  const double deadline_us = now_us() + timeout_s * 1e6;
  // Rank 0 listens before it says where, so a connection is never refused for being early.
  std::string endpoint;  // "<port> <token> <address>...", or "!<why rank 0 cannot listen>"
  std::optional<Acceptor> acceptor;
  if (rank_ == 0) {
    try {
      ensure_file_limit(size_);
      int port = 0;
      Socket listener = listen_any(&port);
      std::random_device entropy;
      const std::uint64_t token = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
      std::ostringstream os;
      os << port << ' ' << token;
      for (const std::string& a : local_ipv4_addresses()) os << ' ' << a;
      endpoint = os.str();
      acceptor.emplace(std::move(listener), size_, token, deadline_us);
    } catch (const Error& e) {
      endpoint = std::string("!") + e.what();
    }
  }
  endpoint = bcast_string(comm, 0, endpoint);
  if (!endpoint.empty() && endpoint[0] == '!') {
    throw AgreedError(ExitCode::kRuntime, endpoint.substr(1), rank_ == 0);
  }
  int code = 0;
  std::string message;
  if (rank_ != 0) {
    try {
      connect_to_root(endpoint, timeout_s);
    } catch (const Error& e) {
      code = static_cast<int>(e.code());
      message = e.what();
    }
  }
  raise_first_failure(comm, code, message);  // a rank that could not connect, named everywhere
  if (rank_ == 0) {
    acceptor->hurry(now_us() + 10e6);  // every rank connected and said hello: it is on its way
    std::vector<Socket>& accepted = acceptor->finish();
    std::vector<std::string> missing;
    for (int r = 1; r < size_; ++r) {
      Connection& c = conns_[static_cast<std::size_t>(r)];
      c.fd = accepted[static_cast<std::size_t>(r)].release();
      c.closed = c.fd < 0;
      if (c.closed) {
        missing.push_back(name(r));
      } else {
        set_nodelay(c.fd);
      }
    }
    if (!missing.empty()) {
      code = static_cast<int>(ExitCode::kRuntime);
      message = "rank 0's watchdog never heard from " + std::to_string(missing.size()) +
                " rank(s) that connected to it (first: " + missing.front() +
                "): a proxy or NAT between the nodes? The watchdog needs direct TCP from every "
                "node to rank 0's node";
    }
  }
  raise_first_failure(comm, code, message);
}

OobChannel::~OobChannel() {
  for (Connection& c : conns_) Socket close(c.fd);
}

void OobChannel::connect_to_root(const std::string& endpoint, double timeout_s) {
  std::istringstream is(endpoint);
  int port = 0;
  std::uint64_t token = 0;
  is >> port >> token;
  struct Attempt {
    std::string address;
    Socket socket;
    std::string error;  // why it failed; empty while it may still open
  };
  std::vector<Attempt> attempts;
  for (std::string address; is >> address;) {
    Attempt a{address, Socket(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)),
              ""};
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (a.socket.get() < 0) {
      a.error = errno_text();
    } else if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
      a.error = "not an IPv4 address";
    } else if (::connect(a.socket.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) !=
                   0 &&
               errno != EINPROGRESS) {
      a.error = errno_text();
    }
    if (!a.error.empty()) a.socket.reset();
    attempts.push_back(std::move(a));
  }
  // Every address at once: the first that opens wins (an unreachable one costs no time).
  const double deadline_us = now_us() + timeout_s * 1e6;
  Socket winner;
  while (winner.get() < 0 && now_us() < deadline_us) {
    std::vector<pollfd> fds;
    std::vector<Attempt*> open;
    for (Attempt& a : attempts) {
      if (a.socket.get() < 0) continue;
      fds.push_back({a.socket.get(), POLLOUT, 0});
      open.push_back(&a);
    }
    if (fds.empty()) break;
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (std::size_t i = 0; i < fds.size() && winner.get() < 0; ++i) {
      if (fds[i].revents == 0) continue;
      int error = 0;
      socklen_t len = sizeof error;
      if (::getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = errno;
      if (error == 0) {
        winner = std::move(open[i]->socket);
      } else {
        open[i]->error = std::strerror(error);
        open[i]->socket.reset();
      }
    }
  }
  if (winner.get() < 0) {
    std::ostringstream os;
    os << "cannot connect to rank 0's watchdog on port " << port << " (";
    for (std::size_t i = 0; i < attempts.size(); ++i) {
      os << (i ? "; " : "") << attempts[i].address << ": ";
      if (attempts[i].error.empty()) {
        os << "no answer within " << timeout_s << " s (timeouts.init_s)";
      } else {
        os << attempts[i].error;
      }
    }
    os << "). The watchdog needs TCP from every node to rank 0's node: check firewalls";
    throw RuntimeFault(os.str());
  }
  set_nodelay(winner.get());
  const Hello hello{kMagic, rank_, token};
  if (::send(winner.get(), &hello, sizeof hello, MSG_NOSIGNAL) !=
      static_cast<ssize_t>(sizeof hello)) {
    throw RuntimeFault("cannot greet rank 0's watchdog: " + errno_text());
  }
  Connection& c = conns_[0];
  c.fd = winner.release();
  c.closed = false;
}

void OobChannel::flush_locked(Connection& c) {
  std::size_t sent = 0;
  while (!c.closed && sent < c.out.size()) {
    const ssize_t n =
        ::send(c.fd, c.out.data() + sent, c.out.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      c.closed = true;
    }
  }
  c.out.erase(0, sent);
  if (c.closed) c.out.clear();
}

void OobChannel::read_locked(int peer, Connection& c) {
  char buffer[1 << 14];
  while (!c.closed) {
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n > 0) {
      c.in.append(buffer, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      c.closed = true;  // 0: the other end closed (its process ended); < 0: the link broke
    }
  }
  std::size_t at = 0;
  while (c.in.size() - at >= sizeof(Header)) {
    Header h{};
    std::memcpy(&h, c.in.data() + at, sizeof h);
    if (h.type < static_cast<std::uint32_t>(Type::kPosition) ||
        h.type > static_cast<std::uint32_t>(Type::kAbortReport) || h.size > kMaxPayload) {
      c.closed = true;  // not our protocol: nothing after this can be trusted
      c.in.clear();
      return;
    }
    if (c.in.size() - at - sizeof h < h.size) break;
    inbox_.push_back(Message{peer, static_cast<Type>(h.type), c.in.substr(at + sizeof h, h.size)});
    at += sizeof h + h.size;
  }
  c.in.erase(0, at);
}

bool OobChannel::send(int peer, Type type, const void* data, std::size_t size) {
  std::lock_guard lock(mutex_);
  if (peer < 0 || peer >= size_ || size > kMaxPayload) return false;
  Connection& c = conns_[static_cast<std::size_t>(peer)];
  if (c.closed || c.out.size() + sizeof(Header) + size > kMaxQueued) return false;
  const Header h{static_cast<std::uint32_t>(type), static_cast<std::uint32_t>(size)};
  c.out.append(reinterpret_cast<const char*>(&h), sizeof h);
  c.out.append(static_cast<const char*>(data), size);
  flush_locked(c);
  return !c.closed;
}

bool OobChannel::flush(double timeout_s) {
  const double deadline_us = now_us() + timeout_s * 1e6;
  for (;;) {
    bool queued = false;
    {
      std::lock_guard lock(mutex_);
      for (Connection& c : conns_) {
        if (c.closed || c.out.empty()) continue;
        flush_locked(c);
        queued = queued || !c.out.empty();
      }
    }
    if (!queued) return true;
    if (now_us() >= deadline_us) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void OobChannel::pump() {
  std::lock_guard lock(mutex_);
  std::vector<pollfd> fds;
  std::vector<int> peers;
  for (int r = 0; r < size_; ++r) {
    const Connection& c = conns_[static_cast<std::size_t>(r)];
    if (c.closed) continue;
    fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
    peers.push_back(r);
  }
  if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0) return;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    Connection& c = conns_[static_cast<std::size_t>(peers[i])];
    if ((fds[i].revents & POLLOUT) != 0) flush_locked(c);
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) read_locked(peers[i], c);
  }
}

std::vector<OobChannel::Message> OobChannel::take() {
  std::lock_guard lock(mutex_);
  std::vector<Message> out;
  out.swap(inbox_);
  return out;
}

std::vector<OobChannel::Message> OobChannel::take(Type type) {
  std::lock_guard lock(mutex_);
  std::vector<Message> out;
  auto keep = std::stable_partition(inbox_.begin(), inbox_.end(),
                                    [&](const Message& m) { return m.type != type; });
  std::move(keep, inbox_.end(), std::back_inserter(out));
  inbox_.erase(keep, inbox_.end());
  return out;
}

bool OobChannel::closed(int peer) const {
  std::lock_guard lock(mutex_);
  return peer < 0 || peer >= size_ || conns_[static_cast<std::size_t>(peer)].closed;
}

}  // namespace shakedown
