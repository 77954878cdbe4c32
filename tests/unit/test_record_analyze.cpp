// scripts/analyze.py reads a file written by RunWriter (h5py + pandas must understand our layout).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/strings.hpp"
#include "record/writer.hpp"

namespace shakedown {
namespace {

int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The first interpreter that has h5py and pandas: $SHAKEDOWN_PYTHON, python3, /usr/bin/python3
// (a pyenv or venv python3 earlier on PATH often lacks them while the system one has them).
std::string find_python() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("SHAKEDOWN_PYTHON")) candidates.emplace_back(env);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  for (const std::string& py : candidates) {
    if (run(py + " -c 'import h5py, pandas' >/dev/null 2>&1") == 0) return py;
  }
  return "";
}

class RecordAnalyze : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("shakedown_record_analyze_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
};

std::filesystem::path write_sample(const std::filesystem::path& final_path) {
  RunMeta meta;
  meta.shakedown_version = "0.1.0";
  meta.command_line = "shakedown run";
  meta.config_yaml = "collectives:\n  iters: 2\n";
  meta.world_size = 2;
  meta.node_count = 1;
  meta.backend = "mpi";
  RunWriter w = RunWriter::create(final_path, meta, 4);
  std::vector<RankInfo> ranks(2);
  ranks[0].hostname = "nœud-1";
  ranks[1].rank = 1;
  ranks[1].local_rank = 1;
  ranks[1].hostname = "nœud-1";
  w.write_topology(ranks, {{"one_gpu_per_rank", CheckStatus::kSkip, "no GPUs"}});
  NodeInventory node;
  node.hostname = "nœud-1";
  node.gpus = {GpuInfo{0, "NVIDIA H200", "GPU-1", "0000:18:00.0", 1, 0, "0-3"}};
  node.nics = {NicInfo{"eth0", "ethernet", -1, ""}};
  w.write_inventory({node});
  w.write_clock(std::vector<double>{0.0, 1.5}, std::vector<double>{0.0, 3.0});
  w.write_array("/collectives/world/all_reduce/time_us", std::vector<double>(3 * 4 * 2, 1.0),
                {3, 4, 2});
  w.finish("complete");
  return final_path;
}

TEST_F(RecordAnalyze, ScriptReadsARunFile) {
  const std::string python = find_python();
  if (python.empty()) GTEST_SKIP() << "no python3 with h5py and pandas (set SHAKEDOWN_PYTHON)";
  const std::filesystem::path file = write_sample(dir_ / "run.h5");
  const std::string script = std::string(SHAKEDOWN_SOURCE_DIR) + "/scripts/analyze.py";
  const std::filesystem::path out = dir_ / "out.txt";
  const int rc = run(python + " " + shell_quote(script) + " " + shell_quote(file.string()) + " >" +
                     shell_quote(out.string()) + " 2>&1");
  std::string output;
  if (std::FILE* fp = std::fopen(out.c_str(), "r")) {
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), fp)) > 0) output.append(buf, n);
    std::fclose(fp);
  }
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("complete"), std::string::npos) << output;
  EXPECT_NE(output.find("nœud-1"), std::string::npos) << output;  // bytes decoded to str
  EXPECT_NE(output.find("one_gpu_per_rank"), std::string::npos) << output;
  EXPECT_NE(output.find("offset_us"), std::string::npos) << output;
}

TEST_F(RecordAnalyze, ScriptFailsClearlyOnAMissingFile) {
  const std::string python = find_python();
  if (python.empty()) GTEST_SKIP() << "no python3 with h5py and pandas (set SHAKEDOWN_PYTHON)";
  const std::string script = std::string(SHAKEDOWN_SOURCE_DIR) + "/scripts/analyze.py";
  const std::filesystem::path missing = dir_ / "missing.h5";
  EXPECT_NE(run(python + " " + shell_quote(script) + " " + shell_quote(missing.string()) +
                " >/dev/null 2>&1"),
            0);
}

}  // namespace
}  // namespace shakedown
