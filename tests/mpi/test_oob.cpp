// The watchdog's TCP channel (runtime/oob.hpp) under real MPI: set up over MPI, then messages
// both ways in order, nothing lost that a send accepted, a full queue refused rather than
// blocking, a closed connection seen by rank 0, and a rank that cannot connect named everywhere.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "runtime/clock.hpp"
#include "runtime/oob.hpp"

using namespace shakedown;
using Type = OobChannel::Type;

namespace {

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (int r = 0; r < comm_size(MPI_COMM_WORLD); ++r) out.push_back("rank " + std::to_string(r));
  return out;
}

// Rank 0: pumps until `want` messages have arrived or 20 s passed.
std::vector<OobChannel::Message> collect(OobChannel& channel, std::size_t want) {
  std::vector<OobChannel::Message> got;
  const double deadline = now_us() + 20e6;
  while (got.size() < want && now_us() < deadline) {
    channel.pump();
    for (auto& m : channel.take()) got.push_back(std::move(m));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return got;
}

}  // namespace

TEST(OobChannel, MessagesArriveWholeAndInOrderBothWays) {
  const int me = comm_rank(MPI_COMM_WORLD);
  const int size = comm_size(MPI_COMM_WORLD);
  OobChannel channel(MPI_COMM_WORLD, names(), 30);
  constexpr int kCount = 500;
  if (me != 0) {
    // Sizes 0 .. 4,999 bytes: frames split and joined across reads.
    for (int i = 0; i < kCount; ++i) {
      std::string payload(static_cast<std::size_t>(i * 10), static_cast<char>('a' + me % 26));
      if (!payload.empty()) std::memcpy(payload.data(), &i, std::min(sizeof i, payload.size()));
      ASSERT_TRUE(channel.send(0, Type::kPosition, payload));
    }
    EXPECT_TRUE(channel.flush(10));
  }
  if (me == 0) {
    const auto got = collect(channel, static_cast<std::size_t>(kCount * (size - 1)));
    ASSERT_EQ(got.size(), static_cast<std::size_t>(kCount * (size - 1)));
    std::vector<int> next(static_cast<std::size_t>(size), 0);
    for (const auto& m : got) {
      ASSERT_GT(m.peer, 0);
      ASSERT_LT(m.peer, size);
      const int i = next[static_cast<std::size_t>(m.peer)]++;
      EXPECT_EQ(m.type, Type::kPosition);
      ASSERT_EQ(m.payload.size(), static_cast<std::size_t>(i * 10)) << "from rank " << m.peer;
      if (m.payload.size() >= sizeof i) {
        int seen = -1;
        std::memcpy(&seen, m.payload.data(), sizeof seen);
        EXPECT_EQ(seen, i);
        EXPECT_EQ(m.payload.back(), static_cast<char>('a' + m.peer % 26));
      }
    }
    for (int r = 1; r < size; ++r) {
      const int word = 1000 + r;
      EXPECT_TRUE(channel.send(r, Type::kPing, &word, sizeof word));
    }
    EXPECT_TRUE(channel.flush(10));
  } else {
    std::vector<OobChannel::Message> got;
    const double deadline = now_us() + 20e6;
    while (got.empty() && now_us() < deadline) {
      channel.pump();
      got = channel.take(Type::kPing);
    }
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].peer, 0);
    int word = 0;
    ASSERT_EQ(got[0].payload.size(), sizeof word);
    std::memcpy(&word, got[0].payload.data(), sizeof word);
    EXPECT_EQ(word, 1000 + me);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// While rank 0 reads nothing (frozen), a rank's sends are refused once its queue is full, never
// blocking it; every send that was accepted arrives once rank 0 reads again.
TEST(OobChannel, AFullQueueRefusesWithoutBlockingAndLosesNothingAccepted) {
  const int me = comm_rank(MPI_COMM_WORLD);
  const int size = comm_size(MPI_COMM_WORLD);
  OobChannel channel(MPI_COMM_WORLD, names(), 30);
  int accepted = 0;
  if (me != 0) {
    const std::string payload(60000, 'x');
    const double started = now_us();
    while (accepted < 100000 && channel.send(0, Type::kPosition, payload)) ++accepted;
    EXPECT_LT(accepted, 100000) << "a queue that never fills";
    EXPECT_LT((now_us() - started) * 1e-6, 10.0);
  }
  int total = 0;
  MPI_Reduce(&accepted, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0) {
    const auto got = collect(channel, static_cast<std::size_t>(total));
    EXPECT_EQ(got.size(), static_cast<std::size_t>(total));
    for (int r = 1; r < size; ++r) EXPECT_FALSE(channel.closed(r));
  } else {
    EXPECT_TRUE(channel.flush(20));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// A rank whose process (here: its channel) goes away is seen as closed by rank 0, on any host.
TEST(OobChannel, RankZeroSeesAClosedConnection) {
  const int me = comm_rank(MPI_COMM_WORLD);
  const int size = comm_size(MPI_COMM_WORLD);
  std::optional<OobChannel> channel;
  channel.emplace(MPI_COMM_WORLD, names(), 30);
  if (me == 0) {
    for (int r = 1; r < size; ++r) EXPECT_FALSE(channel->closed(r));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == size - 1 && me != 0) channel.reset();
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0 && size > 1) {
    const double deadline = now_us() + 10e6;
    while (!channel->closed(size - 1) && now_us() < deadline) {
      channel->pump();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(channel->closed(size - 1));
    for (int r = 1; r < size - 1; ++r) EXPECT_FALSE(channel->closed(r));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// No time to connect: every rank throws the same error, naming the first rank that could not.
TEST(OobChannel, ARankThatCannotConnectIsNamedOnEveryRank) {
  const int me = comm_rank(MPI_COMM_WORLD);
  if (comm_size(MPI_COMM_WORLD) == 1) GTEST_SKIP() << "needs 2 ranks or more";
  try {
    OobChannel channel(MPI_COMM_WORLD, names(), 0);
    ADD_FAILURE() << "connected with no time to connect";
  } catch (const AgreedError& e) {
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
    EXPECT_EQ(e.reporter(), me == 0);
    const std::string text = e.what();
    EXPECT_NE(text.find("rank 1 (host "), std::string::npos) << text;
    EXPECT_NE(text.find("cannot connect to rank 0's watchdog on port "), std::string::npos) << text;
    EXPECT_NE(text.find("check firewalls"), std::string::npos) << text;
  }
  // The world is still usable.
  MPI_Barrier(MPI_COMM_WORLD);
}
