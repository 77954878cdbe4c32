#pragma once
// Which network device each rank's end of the link scan uses (linkscan.rails: auto): the NIC
// nearest the rank (its GPU's, else its CPUs'; topology/discovery) as UCX names it.
#include <string>
#include <vector>

namespace shakedown::fabric {

// UCX's name for an RDMA device hwloc calls `nic` ("mlx5_0" -> "mlx5_0:1"): the device and its
// first ACTIVE port under <sys_root>/class/infiniband/<nic>/ports, else its first port, else
// port 1. "" when `nic` is not an RDMA device (an Ethernet interface, or none): UCX then chooses.
std::string ucx_device_of(const std::string& nic, const std::string& sys_root = "/sys");

// What a rail's ranks used, for the record: the one device when they agree ("" = UCX's choice),
// else "node 0: mlx5_0:1, node 1: mlx5_2:1" in rail order.
std::string describe_devices(const std::vector<int>& nodes,
                             const std::vector<std::string>& devices);

}  // namespace shakedown::fabric
