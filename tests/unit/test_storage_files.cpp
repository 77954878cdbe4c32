// The checkpoint's storage layer on a real file system: cleanup removes exactly what was
// recorded (never a symlink's target, never a folder that holds something else), the commit
// leaves the whole file and no temporary, failed calls name the path and errno, shard content is
// reproducible from (rank, step) and its checksums find a changed byte, and the metadata round-
// trips and refuses damage.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include <fstream>

#include "core/error.hpp"
#include "storage/files.hpp"
#include "storage/shard.hpp"
#include "temp_dir.hpp"

namespace shakedown::storage {
namespace {

using testing_support::TempDir;

std::string slurp(const std::filesystem::path& p) {
  return read_small_file(p, "");
}

TEST(StorageFiles, CleanupRemovesOnlyWhatItRecorded) {
  TempDir tmp;
  const auto root = tmp / "ckpt";
  Created made;
  ASSERT_TRUE(made.make_dir(root, ""));
  EXPECT_FALSE(made.make_dir(root, "")) << "an existing folder is not ours to record";
  const auto step = root / "step_1";
  ASSERT_TRUE(made.make_dir(step, ""));
  {
    File f(step / "rank_0.shard", O_WRONLY | O_CREAT, "");
    made.file(step / "rank_0.shard");
    const std::string data = "shard";
    f.pwrite_all(std::as_bytes(std::span(data.data(), data.size())), 0);
    f.close();
  }
  // What somebody else put there: a file, and a symlink pointing out of the tree.
  std::ofstream(tmp / "outside") << "precious";
  std::filesystem::create_symlink(tmp / "outside", step / "link");
  std::ofstream(root / "theirs") << "theirs";
  const std::vector<std::string> left = made.remove_all();
  EXPECT_FALSE(std::filesystem::exists(step / "rank_0.shard"));
  EXPECT_TRUE(std::filesystem::is_symlink(step / "link"));
  EXPECT_EQ(slurp(tmp / "outside"), "precious");
  EXPECT_EQ(slurp(root / "theirs"), "theirs");
  EXPECT_EQ(left.size(), 2u) << "both folders hold something else and stay";
}

TEST(StorageFiles, CleanupUnderOneFolderKeepsTheRest) {
  TempDir tmp;
  Created made;
  ASSERT_TRUE(made.make_dir(tmp / "a", ""));
  ASSERT_TRUE(made.make_dir(tmp / "a" / "s1", ""));
  ASSERT_TRUE(made.make_dir(tmp / "a" / "s10", ""));
  EXPECT_TRUE(made.remove_all(tmp / "a" / "s1").empty());
  EXPECT_FALSE(std::filesystem::exists(tmp / "a" / "s1"));
  EXPECT_TRUE(std::filesystem::exists(tmp / "a" / "s10")) << "s10 is not under s1";
  EXPECT_TRUE(made.remove_all().empty());
  EXPECT_FALSE(std::filesystem::exists(tmp / "a"));
}

TEST(StorageFiles, CommitLeavesTheWholeFileAndNoTemporary) {
  TempDir tmp;
  commit_file(tmp / "metadata.json", "{\"a\": 1}\n", "rank 0");
  EXPECT_EQ(slurp(tmp / "metadata.json"), "{\"a\": 1}\n");
  EXPECT_FALSE(std::filesystem::exists(tmp / "metadata.json.tmp"));
  EXPECT_EQ(read_small_file(tmp / "metadata.json", ""), "{\"a\": 1}\n");
}

TEST(StorageFiles, FailuresNameThePathAndErrno) {
  TempDir tmp;
  try {
    File f(tmp / "no" / "such", O_RDONLY, "rank 3 (host h)");
    FAIL() << "opened a missing file";
  } catch (const IoError& e) {
    EXPECT_EQ(e.err(), ENOENT);
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
    const std::string m = e.what();
    EXPECT_NE(m.find("rank 3 (host h): open " + (tmp / "no" / "such").string()), std::string::npos)
        << m;
    EXPECT_NE(m.find("(errno 2)"), std::string::npos) << m;
  }
  std::ofstream(tmp / "short") << "abc";
  File f(tmp / "short", O_RDONLY, "");
  std::vector<std::byte> buf(10);
  EXPECT_THROW(f.pread_all(buf, 0), RuntimeFault) << "a truncated shard is an error";
}

// A real short write: past RLIMIT_FSIZE the kernel writes what fits and returns the count, then
// the next call fails with EFBIG. pwrite_all must carry on after the short write (the file holds
// exactly the limit) and report the failure with its errno. In a child: the limit is per process.
TEST(StorageFiles, ShortWriteThenFailureIsReported) {
  TempDir tmp;
  const auto path = tmp / "limited";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1536 * 1024, 1536 * 1024};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(10);
    std::vector<std::byte> data(2 << 20, std::byte{7});
    try {
      File f(path, O_WRONLY | O_CREAT | O_TRUNC, "");
      f.pwrite_all(data, 0);
      ::_exit(11);  // no error: wrong
    } catch (const IoError& e) {
      ::_exit(e.err() == EFBIG ? 0 : 12);
    } catch (...) {
      ::_exit(13);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 setrlimit, 11 no error, 12 other errno, 13 other error";
  EXPECT_EQ(std::filesystem::file_size(path), 1536u * 1024) << "the short write's bytes are kept";
}

// EINTR is retried, not reported: open() of a FIFO blocks until a writer comes; a signal whose
// handler does not restart calls interrupts it (EINTR), and File must open it anyway once the
// writer is there. (A write to a regular file is not interruptible by a caught signal.)
std::atomic<int> g_signals{0};
void count_signal(int) {
  g_signals.fetch_add(1);
}

TEST(StorageFiles, InterruptedOpenIsRetried) {
  TempDir tmp;
  const auto fifo = tmp / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  struct sigaction act {
  }, old{};
  act.sa_handler = count_signal;  // no SA_RESTART: the blocked open returns EINTR
  sigemptyset(&act.sa_mask);
  ASSERT_EQ(::sigaction(SIGUSR1, &act, &old), 0);
  g_signals = 0;
  const pthread_t reader = ::pthread_self();
  std::thread helper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::pthread_kill(reader, SIGUSR1);  // interrupts the open below
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int w = ::open(fifo.c_str(), O_WRONLY);  // now the open can complete
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (w >= 0) ::close(w);
  });
  bool opened = false;
  try {
    File f(fifo, O_RDONLY, "");
    opened = f.fd() >= 0;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "an interrupted open was reported: " << e.what();
  }
  helper.join();
  ::sigaction(SIGUSR1, &old, nullptr);
  EXPECT_TRUE(opened);
  EXPECT_EQ(g_signals.load(), 1) << "the open was interrupted once";
}

TEST(StorageFiles, FileSystemOfAFolder) {
  TempDir tmp;
  const FsInfo info = fs_info(tmp.path());
  EXPECT_FALSE(info.type.empty());
  EXPECT_FALSE(info.mount_point.empty());
  EXPECT_GT(info.dio_offset_align, 0u);
  EXPECT_EQ(fs_type_name(0xEF53), "ext4");
  EXPECT_EQ(fs_type_name(0x0BD00BD0), "lustre");
  EXPECT_EQ(fs_type_name(12345), "");
}

TEST(StorageShard, ContentIsReproducibleAndChecksumsFindAChangedByte) {
  std::vector<std::byte> a(3 * 4096 + 5), b(a.size());
  fill_shard(a, shard_seed(3, 2), 0);
  fill_shard(b, shard_seed(3, 2), 0);
  EXPECT_EQ(a, b);
  // Any piece can be regenerated alone, from its offset.
  std::vector<std::byte> piece(4096);
  fill_shard(piece, shard_seed(3, 2), 4096);
  EXPECT_TRUE(std::equal(piece.begin(), piece.end(), a.begin() + 4096));
  // Also from an offset that is not a multiple of 8 (any checkpoint.block_size).
  std::vector<std::byte> odd(1000);
  fill_shard(odd, shard_seed(3, 2), 4093);
  EXPECT_TRUE(std::equal(odd.begin(), odd.end(), a.begin() + 4093));
  fill_shard(b, shard_seed(3, 3), 0);
  EXPECT_NE(a, b) << "another step writes other bytes";
  fill_shard(b, shard_seed(2, 2), 0);
  EXPECT_NE(a, b) << "another rank writes other bytes";
  const auto sums = block_checksums(a, 4096);
  ASSERT_EQ(sums.size(), 4u);
  b = a;
  b[2 * 4096 + 17] ^= std::byte{1};
  const auto bad = block_checksums(b, 4096);
  EXPECT_EQ(bad[0], sums[0]);
  EXPECT_NE(bad[2], sums[2]);
  EXPECT_EQ(first_difference(a, b), 2u * 4096 + 17);
  EXPECT_EQ(first_difference(a, a), a.size());
}

TEST(StorageShard, MetadataRoundTripsAndRefusesDamage) {
  CheckpointMeta m;
  m.run = "run.h5";
  m.step = 2;
  m.layout = "file_per_process";
  m.api = "posix";
  m.block_size = 1 << 20;
  m.shards.push_back({0, "gpu-0", "rank_0.shard", 0, 4 << 20, {1, 2, 3, ~0ull}});
  m.shards.push_back({1, "gpu-1", "rank_1.shard", 0, 4 << 20, {5, 6, 7, 8}});
  EXPECT_EQ(parse_meta(to_json(m), "m.json"), m);
  EXPECT_THROW(parse_meta("{\"format\": 1", "m.json"), RuntimeFault);
  EXPECT_THROW(parse_meta("{\"format\": \"other\"}", "m.json"), RuntimeFault);
  CheckpointMeta evil = m;
  evil.shards[1].file = "../../etc/passwd";
  EXPECT_THROW(parse_meta(to_json(evil), "m.json"), RuntimeFault)
      << "a shard name must stay inside the step's folder";
}

}  // namespace
}  // namespace shakedown::storage
