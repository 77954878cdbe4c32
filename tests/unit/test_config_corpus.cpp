// Corpus tests: every file in tests/data/config/bad/ must be rejected with a UsageError whose
// message names the file, the line (when the file's header gives one) and an expected substring;
// every file in tests/data/config/good/ must load and round-trip. Plus a mutation fuzz: no input
// may produce anything but a Config or a UsageError.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/load.hpp"
#include "core/error.hpp"

namespace shakedown {
namespace {

const std::filesystem::path kData = std::filesystem::path(SHAKEDOWN_TEST_DATA) / "config";

std::vector<std::filesystem::path> yaml_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "# expect: <substring>" on line 1 and "# line: <n>" (or "-") on line 2.
struct Expectation {
  std::string substring;
  std::string line;  // "" when the error has no meaningful line
};

Expectation read_expectation(const std::filesystem::path& path) {
  std::istringstream text(read_text(path));
  std::string first;
  std::string second;
  std::getline(text, first);
  std::getline(text, second);
  const std::string expect_tag = "# expect: ";
  const std::string line_tag = "# line: ";
  EXPECT_EQ(first.rfind(expect_tag, 0), 0u) << path << ": first line must be '# expect: ...'";
  EXPECT_EQ(second.rfind(line_tag, 0), 0u) << path << ": second line must be '# line: N|-'";
  Expectation expectation{first.substr(std::min(first.size(), expect_tag.size())),
                          second.substr(std::min(second.size(), line_tag.size()))};
  if (expectation.line == "-") expectation.line.clear();
  return expectation;
}

TEST(ConfigCorpus, BadFilesAreRejectedWithUsefulMessages) {
  const std::vector<std::filesystem::path> files = yaml_files(kData / "bad");
  EXPECT_GE(files.size(), 30u);
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    const Expectation expectation = read_expectation(path);
    try {
      const Config config = load_config_file(path.string());
      ADD_FAILURE() << "accepted; config:\n" << to_yaml(config);
    } catch (const UsageError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(path.string()), std::string::npos) << message;
      EXPECT_NE(message.find(expectation.substring), std::string::npos)
          << "expected \"" << expectation.substring << "\" in:\n"
          << message;
      if (!expectation.line.empty()) {
        const std::string located = path.string() + ":" + expectation.line + ":";
        EXPECT_NE(message.find(located), std::string::npos)
            << "expected \"" << located << "\" in:\n"
            << message;
      }
    } catch (const std::exception& error) {
      ADD_FAILURE() << "threw something other than UsageError: " << error.what();
    }
  }
}

TEST(ConfigCorpus, GoodFilesLoadAndRoundTrip) {
  const std::vector<std::filesystem::path> files = yaml_files(kData / "good");
  EXPECT_GE(files.size(), 5u);
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    try {
      const Config config = load_config_file(path.string());
      EXPECT_EQ(load_config(to_yaml(config), "<to_yaml>"), config);
    } catch (const std::exception& error) {
      ADD_FAILURE() << error.what();
    }
  }
}

TEST(ConfigCorpus, GoodFilesMeanWhatTheySay) {
  const Config sizes = load_config_file((kData / "good" / "shapes_and_sizes.yaml").string());
  EXPECT_EQ(sizes.phases, (std::vector<std::string>{"collectives", "gemm", "checkpoint"}));
  EXPECT_EQ(sizes.collectives.nccl_sizes.values,
            (std::vector<std::uint64_t>{8, 64, 1024, 1000000, 1048576}));
  EXPECT_EQ(sizes.collectives.iter_bytes_budget, 16ull << 30);
  ASSERT_EQ(sizes.gemm.shapes.size(), 3u);
  EXPECT_EQ(sizes.gemm.shapes[2], (GemmShape{16, 32, 64}));
  EXPECT_EQ(sizes.checkpoint.bytes_per_rank, 3ull << 29);
  EXPECT_EQ(sizes.checkpoint.block_size, 512000u);

  const Config crlf = load_config_file((kData / "good" / "crlf.yaml").string());
  EXPECT_EQ(crlf.train.heads, 32);
  const Config bom = load_config_file((kData / "good" / "bom.yaml").string());
  EXPECT_EQ(bom.phases, (std::vector<std::string>{"linkscan"}));
  const Config quoting = load_config_file((kData / "good" / "unicode_and_quoting.yaml").string());
  EXPECT_EQ(quoting.output.file, "run: #1.h5");
  EXPECT_EQ(quoting.topology.blocks, "");
  EXPECT_EQ(load_config_file((kData / "good" / "empty.yaml").string()), Config{});
}

// Random byte edits of full.yaml (flips, deletions, insertions of YAML-significant characters,
// truncations): each must load or be a UsageError. Deterministic, so a failure reproduces.
TEST(ConfigCorpus, MutationsNeverEscapeAsAnythingButUsageError) {
  const std::string original =
      read_text(std::filesystem::path(SHAKEDOWN_SOURCE_DIR) / "configs" / "full.yaml");
  ASSERT_FALSE(original.empty());
  static constexpr char kInteresting[] =
      ":-[]{},#&*!|>'\"%@`\t\n \x00\xff\xc3"
      "0123456789xKMGT.";
  const std::string interesting(kInteresting, sizeof(kInteresting) - 1);
  std::mt19937 random(12345);
  int accepted = 0;
  int rejected = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text = original;
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const std::size_t at = random() % text.size();
      const char c = interesting[random() % interesting.size()];
      switch (random() % 4) {
        case 0:
          text[at] = c;
          break;
        case 1:
          text.erase(at, 1 + random() % 8);
          break;
        case 2:
          text.insert(at, 1, c);
          break;
        default:
          text.resize(at);
          break;
      }
    }
    try {
      load_config(text, "fuzz.yaml");
      ++accepted;
    } catch (const UsageError& error) {
      ++rejected;
      EXPECT_EQ(std::string(error.what()).rfind("fuzz.yaml", 0), 0u) << error.what();
    } catch (const std::exception& error) {
      ADD_FAILURE() << "round " << round << ": " << error.what() << "\ninput:\n" << text;
    }
  }
  // Both outcomes must occur, or the mutations are not exercising anything.
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace shakedown
