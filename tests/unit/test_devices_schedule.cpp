// The devices phase's pair schedule: every ordered pair once per mode, the right copies at once.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "devices/device.hpp"
#include "devices/schedule.hpp"
#include "temp_dir.hpp"

namespace shakedown::devices {
namespace {

std::map<PairMode, std::multiset<std::pair<int, int>>> copies_by_mode(
    const std::vector<PairStep>& steps) {
  std::map<PairMode, std::multiset<std::pair<int, int>>> out;
  for (const PairStep& s : steps) {
    for (const PairCopy& c : s.copies) out[s.mode].insert({c.src, c.dst});
  }
  return out;
}

TEST(PairSchedule, AllMeasuresEveryOrderedPairOncePerMode) {
  for (int g : {2, 3, 4, 8}) {
    const auto steps = pair_schedule(g, "all");
    const auto by = copies_by_mode(steps);
    std::multiset<std::pair<int, int>> every;
    for (int s = 0; s < g; ++s) {
      for (int d = 0; d < g; ++d) {
        if (s != d) every.insert({s, d});
      }
    }
    for (PairMode m :
         {PairMode::kUnidirectional, PairMode::kBidirectional, PairMode::kConcurrent}) {
      EXPECT_EQ(by.at(m), every) << "g " << g << " mode " << pair_mode_name(m);
    }
    std::size_t uni = 0, bi = 0, conc = 0;
    for (const PairStep& s : steps) {
      std::set<int> dsts;
      for (const PairCopy& c : s.copies) {
        EXPECT_NE(c.src, c.dst);
        EXPECT_TRUE(dsts.insert(c.dst).second) << "a device issues two copies in one step";
      }
      switch (s.mode) {
        case PairMode::kUnidirectional:
          EXPECT_EQ(s.copies.size(), 1u);
          ++uni;
          break;
        case PairMode::kBidirectional:
          ASSERT_EQ(s.copies.size(), 2u);
          EXPECT_EQ(s.copies[0].src, s.copies[1].dst);
          EXPECT_EQ(s.copies[0].dst, s.copies[1].src);
          ++bi;
          break;
        case PairMode::kConcurrent:
          EXPECT_EQ(s.copies.size(), static_cast<std::size_t>(g));
          ++conc;
          break;
      }
    }
    EXPECT_EQ(uni, static_cast<std::size_t>(g * (g - 1)));
    EXPECT_EQ(bi, static_cast<std::size_t>(g * (g - 1) / 2));
    EXPECT_EQ(conc, static_cast<std::size_t>(g - 1));
  }
}

TEST(PairSchedule, RingOnlyNeighboursAndNoneNothing) {
  const auto by = copies_by_mode(pair_schedule(8, "ring"));
  for (const auto& [s, d] : by.at(PairMode::kUnidirectional)) {
    EXPECT_TRUE((s - d + 8) % 8 == 1 || (d - s + 8) % 8 == 1) << s << "->" << d;
  }
  EXPECT_EQ(by.at(PairMode::kUnidirectional).size(), 16u);  // 8 links, both ways
  EXPECT_EQ(by.at(PairMode::kConcurrent).size(), 16u);      // shifts 1 and 7
  EXPECT_TRUE(pair_schedule(8, "none").empty());
  EXPECT_TRUE(pair_schedule(1, "all").empty());
  // Two devices: ring is all.
  EXPECT_EQ(copies_by_mode(pair_schedule(2, "ring")), copies_by_mode(pair_schedule(2, "all")));
}

TEST(PairSchedule, CopyOfNamesTheIssuingDevice) {
  const PairStep step{PairMode::kBidirectional, {{0, 1}, {1, 0}}};
  ASSERT_NE(copy_of(step, 1), nullptr);
  EXPECT_EQ(copy_of(step, 1)->src, 0);
  EXPECT_EQ(copy_of(step, 2), nullptr);
}

TEST(PcieLink, ReadFromSysfsAndUnknownWhenMissing) {
  testing_support::TempDir root;
  const auto dir = root.path() / "sys/bus/pci/devices/0000:19:00.0";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "current_link_speed") << "16.0 GT/s PCIe\n";
  std::ofstream(dir / "max_link_speed") << "32.0 GT/s PCIe\n";
  std::ofstream(dir / "current_link_width") << "8\n";
  std::ofstream(dir / "max_link_width") << "16\n";
  const LinkState s = read_pcie_link(root.path().string(), "0000:19:00.0", "GPU");
  EXPECT_EQ(s.current_gts, 16.0);
  EXPECT_EQ(s.max_gts, 32.0);
  EXPECT_EQ(s.current_width, 8.0);
  EXPECT_EQ(s.max_width, 16.0);
  const LinkState none = read_pcie_link(root.path().string(), "0000:aa:00.0", "GPU");
  EXPECT_TRUE(std::isnan(none.current_gts) && std::isnan(none.max_width));
}

// As the kernel lays it out: /sys/bus/pci/devices/<id> links into /sys/devices/pci0000:00/<port>/
// <id>, and the port has link files of its own. A Gen5 x16 GPU behind a Gen4 x16 port: its link
// can reach 16 GT/s x16, no more; below that it trained down.
TEST(PcieLink, TheMaximumIsTheLowerOfTheDeviceAndItsUpstreamPort) {
  testing_support::TempDir root;
  const auto port = root.path() / "sys/devices/pci0000:00/0000:00:01.0";
  const auto gpu = port / "0000:01:00.0";
  std::filesystem::create_directories(gpu);
  std::filesystem::create_directories(root.path() / "sys/bus/pci/devices");
  std::filesystem::create_directory_symlink("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0",
                                            root.path() / "sys/bus/pci/devices/0000:01:00.0");
  std::ofstream(port / "max_link_speed") << "16.0 GT/s PCIe\n";
  std::ofstream(port / "max_link_width") << "16\n";
  std::ofstream(gpu / "current_link_speed") << "16.0 GT/s PCIe\n";
  std::ofstream(gpu / "max_link_speed") << "32.0 GT/s PCIe\n";
  std::ofstream(gpu / "current_link_width") << "16\n";
  std::ofstream(gpu / "max_link_width") << "16\n";
  const LinkState s = read_pcie_link(root.path().string(), "0000:01:00.0", "GPU");
  EXPECT_EQ(s.upstream, "0000:00:01.0");
  EXPECT_EQ(s.device_max_gts, 32.0);
  EXPECT_EQ(s.max_gts, 16.0);  // what it can train to in this slot
  EXPECT_EQ(s.current_gts, 16.0);
  EXPECT_EQ(s.max_width, 16.0);
  // A port as narrow as x8: the maximum width follows it.
  std::ofstream(port / "max_link_width") << "8\n";
  EXPECT_EQ(read_pcie_link(root.path().string(), "0000:01:00.0", "GPU").max_width, 8.0);
  // A device straight on the root complex (its parent has no link files): its own maximum.
  const auto root_gpu = root.path() / "sys/devices/pci0000:80/0000:80:00.0";
  std::filesystem::create_directories(root_gpu);
  std::filesystem::create_directory_symlink("../../../devices/pci0000:80/0000:80:00.0",
                                            root.path() / "sys/bus/pci/devices/0000:80:00.0");
  std::ofstream(root_gpu / "max_link_speed") << "32.0 GT/s PCIe\n";
  const LinkState alone = read_pcie_link(root.path().string(), "0000:80:00.0", "GPU");
  EXPECT_EQ(alone.upstream, "");
  EXPECT_EQ(alone.max_gts, 32.0);
}

// A NIC's PCI function as sysfs links it: an InfiniBand device's folder is the PCI function; a
// virtio NIC's is a child of it; a NIC sysfs does not know (or a name that is not one) is "".
TEST(PcieLink, TheNicsPciFunctionFromSysfs) {
  testing_support::TempDir root;
  const auto port = root.path() / "sys/devices/pci0000:00/0000:00:02.0";
  std::filesystem::create_directories(port / "0000:3b:00.0");
  std::filesystem::create_directories(port / "0000:00:03.0/virtio2");
  std::filesystem::create_directories(root.path() / "sys/class/infiniband/mlx5_0");
  std::filesystem::create_directories(root.path() / "sys/class/net/eth0");
  std::filesystem::create_directories(root.path() / "sys/class/net/ib0");
  std::filesystem::create_directory_symlink("../../../devices/pci0000:00/0000:00:02.0/0000:3b:00.0",
                                            root.path() / "sys/class/infiniband/mlx5_0/device");
  std::filesystem::create_directory_symlink("../../../devices/pci0000:00/0000:00:02.0/0000:3b:00.0",
                                            root.path() / "sys/class/net/ib0/device");
  std::filesystem::create_directory_symlink(
      "../../../devices/pci0000:00/0000:00:02.0/0000:00:03.0/virtio2",
      root.path() / "sys/class/net/eth0/device");
  const std::string r = root.path().string();
  EXPECT_EQ(nic_pci_bus_id(r, "mlx5_0"), "0000:3b:00.0");
  EXPECT_EQ(nic_pci_bus_id(r, "ib0"), "0000:3b:00.0");
  EXPECT_EQ(nic_pci_bus_id(r, "eth0"), "0000:00:03.0") << "a virtio NIC: its parent";
  EXPECT_EQ(nic_pci_bus_id(r, "eth9"), "");
  EXPECT_EQ(nic_pci_bus_id(r, ""), "");
  EXPECT_EQ(nic_pci_bus_id(r, "../net/eth0"), "") << "a name, not a path";
}

TEST(StepModel, MemoryTestsInTurnThenTogetherAndPairStepsAtOnce) {
  StepModel m;
  m.test_run_s = {1.0, 2.0};
  m.pair_copy_s = 0.5;
  m.devices = 2;
  m.warmup = 1;
  m.trials = 1;
  m.per_trial_s = 0;
  // Per test: 2 devices in turn x 2 runs, then 2 runs at once; pairs of 2 devices: 2 ordered
  // pairs alone, 1 pair both ways, 1 shift of everyone at once.
  EXPECT_EQ(estimate_steps(m), (std::vector<double>{6.0, 12.0, 2.0, 1.0, 1.0}));
  // One shared memory (the CPU path): what runs at once divides it.
  m.shared = true;
  EXPECT_EQ(estimate_steps(m), (std::vector<double>{8.0, 16.0, 2.0, 2.0, 2.0}));
  // No pairs: the pair steps take nothing. A barrier per turn alone (2), per run together (2).
  m.pairs = "none";
  m.per_trial_s = 0.25;
  EXPECT_EQ(estimate_steps(m), (std::vector<double>{9.0, 17.0, 0.0, 0.0, 0.0}));
}

TEST(StepModel, DefaultSettingsFitAMinuteOnAnEightGpuNode) {
  // The defaults (devices.bytes 1 GiB, copy_bytes 64 MiB, warmup 1, trials 5, pairs all) on 8
  // GPUs at the h200-sxm platform's minimums (memory 3,900 GB/s, host 48 GB/s, pair 335 GB/s),
  // copies of 16 x 64 MiB per trial, and a pessimistic 2 ms barrier per trial: a model of the
  // phase (it has not run on GPUs), held to the 60 s.
  const double gib = 1024.0 * 1024 * 1024, copy = 16 * 64.0 * 1024 * 1024;
  StepModel m;
  m.test_run_s = {2 * gib / 3900e9, 3 * gib / 3900e9, 2 * gib / 3900e9, copy / 48e9,
                  copy / 48e9,      2 * copy / 48e9,  2 * copy / 48e9};
  m.pair_copy_s = copy / 335e9;
  m.devices = 8;
  m.warmup = 1;
  m.trials = 5;
  m.per_trial_s = 2e-3;
  const std::vector<double> steps = estimate_steps(m);
  ASSERT_EQ(steps.size(), 7u + kPairModes);
  double total = 0;
  for (double s : steps) total += s;
  EXPECT_LT(total, 60.0);
  EXPECT_GT(total, 5.0) << "the model lost a term: 56 ordered pairs alone take seconds";
}

}  // namespace
}  // namespace shakedown::devices
