// linkscan.rails: auto (fabric/rails.hpp): the nearest NIC as UCX names it, read from a sysfs
// tree laid out as the kernel's /sys/class/infiniband (real files in a temporary folder).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fabric/rails.hpp"
#include "temp_dir.hpp"

namespace shakedown::fabric {
namespace {

using testing_support::TempDir;

void port(const TempDir& sys, const std::string& dev, int p, const std::string& state) {
  const auto dir = sys.path() / "class" / "infiniband" / dev / "ports" / std::to_string(p);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "state") << state << "\n";
}

TEST(FabricRails, AnRdmaDeviceIsNamedWithItsFirstActivePort) {
  TempDir sys;
  port(sys, "mlx5_0", 1, "4: ACTIVE");
  port(sys, "mlx5_1", 1, "1: DOWN");
  port(sys, "mlx5_1", 2, "4: ACTIVE");
  port(sys, "mlx5_2", 1, "1: DOWN");
  port(sys, "mlx5_2", 2, "1: DOWN");
  EXPECT_EQ(ucx_device_of("mlx5_0", sys.path()), "mlx5_0:1");
  EXPECT_EQ(ucx_device_of("mlx5_1", sys.path()), "mlx5_1:2");
  // No port up: its first port still names the rail (the scan then fails on it, by name).
  EXPECT_EQ(ucx_device_of("mlx5_2", sys.path()), "mlx5_2:1");
}

TEST(FabricRails, AnythingElseLeavesTheChoiceToUcx) {
  TempDir sys;
  port(sys, "mlx5_0", 1, "4: ACTIVE");
  EXPECT_EQ(ucx_device_of("eth0", sys.path()), "");  // an Ethernet interface
  EXPECT_EQ(ucx_device_of("", sys.path()), "");      // no NIC near the rank
  EXPECT_EQ(ucx_device_of("../mlx5_0", sys.path()), "");
  // A device without a ports folder: port 1.
  std::filesystem::create_directories(sys.path() / "class" / "infiniband" / "bnxt_re0");
  EXPECT_EQ(ucx_device_of("bnxt_re0", sys.path()), "bnxt_re0:1");
}

TEST(FabricRails, ARailsDevicesAreOneNameWhenTheyAgree) {
  EXPECT_EQ(describe_devices({0, 1, 2}, {"mlx5_0:1", "mlx5_0:1", "mlx5_0:1"}), "mlx5_0:1");
  EXPECT_EQ(describe_devices({0, 1}, {"", ""}), "");
  EXPECT_EQ(describe_devices({0, 3}, {"mlx5_0:1", "mlx5_2:1"}),
            "node 0: mlx5_0:1, node 3: mlx5_2:1");
  EXPECT_EQ(describe_devices({0, 1}, {"mlx5_0:1", ""}), "node 0: mlx5_0:1, node 1: UCX's choice");
}

}  // namespace
}  // namespace shakedown::fabric
