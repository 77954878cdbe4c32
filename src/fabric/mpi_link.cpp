// The link scan over MPI point-to-point calls (linkscan.transport: mpi).
#include <vector>

#include "fabric/link.hpp"
#include "runtime/mpi.hpp"

namespace shakedown::fabric {

namespace {

constexpr int kTagBase = 7100;
constexpr int tag(Message m) {
  return kTagBase + static_cast<int>(m);
}
constexpr int kData = tag(Message::kData), kReady = tag(Message::kReady), kAck = tag(Message::kAck),
              kPing = tag(Message::kPing), kPong = tag(Message::kPong);

class MpiLink final : public Link {
 public:
  MpiLink(MPI_Comm world, const LinkOptions& o)
      : comm_(comm_dup(world)),
        options_(o),
        buffer_(o.bytes),
        small_(std::max<std::size_t>(o.lat_bytes, 1)),
        requests_(static_cast<std::size_t>(o.window), MPI_REQUEST_NULL) {}

  std::string kind() const override { return "mpi"; }
  void connect(int /*peer*/) override {}
  std::string transport_to(int /*peer*/) override { return "mpi"; }

  double window_send(int peer) override {
    char byte = 0;
    SD_MPI_CHECK(MPI_Recv(&byte, 1, MPI_CHAR, peer, kReady, comm_.get(), MPI_STATUS_IGNORE));
    const double start = seconds_now();
    for (auto& r : requests_) {
      SD_MPI_CHECK(MPI_Isend(buffer_.data(), count(), MPI_BYTE, peer, kData, comm_.get(), &r));
    }
    SD_MPI_CHECK(
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
    SD_MPI_CHECK(MPI_Recv(&byte, 1, MPI_CHAR, peer, kAck, comm_.get(), MPI_STATUS_IGNORE));
    return seconds_now() - start;
  }

  void window_recv(int peer) override {
    for (auto& r : requests_) {
      SD_MPI_CHECK(MPI_Irecv(buffer_.data(), count(), MPI_BYTE, peer, kData, comm_.get(), &r));
    }
    char byte = 0;
    SD_MPI_CHECK(MPI_Send(&byte, 1, MPI_CHAR, peer, kReady, comm_.get()));
    SD_MPI_CHECK(
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
    SD_MPI_CHECK(MPI_Send(&byte, 1, MPI_CHAR, peer, kAck, comm_.get()));
  }

  double window_both(int peer, bool initiator) override {
    inbox_.resize(buffer_.size());
    std::vector<MPI_Request> requests(2 * requests_.size(), MPI_REQUEST_NULL);
    const std::size_t w = requests_.size();
    for (std::size_t i = 0; i < w; ++i) {
      SD_MPI_CHECK(
          MPI_Irecv(inbox_.data(), count(), MPI_BYTE, peer, kData, comm_.get(), &requests[i]));
    }
    char mine = 0, theirs = 0;
    SD_MPI_CHECK(MPI_Sendrecv(&mine, 1, MPI_CHAR, peer, kReady, &theirs, 1, MPI_CHAR, peer, kReady,
                              comm_.get(), MPI_STATUS_IGNORE));
    const double start = seconds_now();
    for (std::size_t i = 0; i < w; ++i) {
      SD_MPI_CHECK(
          MPI_Isend(buffer_.data(), count(), MPI_BYTE, peer, kData, comm_.get(), &requests[w + i]));
    }
    SD_MPI_CHECK(
        MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
    SD_MPI_CHECK(MPI_Sendrecv(&mine, 1, MPI_CHAR, peer, kAck, &theirs, 1, MPI_CHAR, peer, kAck,
                              comm_.get(), MPI_STATUS_IGNORE));
    return initiator ? seconds_now() - start : 0;
  }

  double ping(int peer) override {
    const double start = seconds_now();
    SD_MPI_CHECK(MPI_Send(small_.data(), small_count(), MPI_BYTE, peer, kPing, comm_.get()));
    SD_MPI_CHECK(MPI_Recv(small_.data(), small_count(), MPI_BYTE, peer, kPong, comm_.get(),
                          MPI_STATUS_IGNORE));
    return seconds_now() - start;
  }

  void pong(int peer) override {
    SD_MPI_CHECK(MPI_Recv(small_.data(), small_count(), MPI_BYTE, peer, kPing, comm_.get(),
                          MPI_STATUS_IGNORE));
    SD_MPI_CHECK(MPI_Send(small_.data(), small_count(), MPI_BYTE, peer, kPong, comm_.get()));
  }

 private:
  int count() const { return static_cast<int>(buffer_.size()); }
  int small_count() const { return static_cast<int>(small_.size()); }

  CommHandle comm_;
  LinkOptions options_;
  std::vector<unsigned char> buffer_;
  std::vector<unsigned char> small_;
  std::vector<unsigned char> inbox_;  // what the peer sends in a bidirectional window
  std::vector<MPI_Request> requests_;
};

}  // namespace

std::unique_ptr<Link> make_mpi_link(MPI_Comm world, const LinkOptions& options) {
  return std::make_unique<MpiLink>(world, options);
}

}  // namespace shakedown::fabric
