#include "fabric/rails.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace shakedown::fabric {

std::string ucx_device_of(const std::string& nic, const std::string& sys_root) {
  if (nic.empty() || nic.find('/') != std::string::npos) return "";
  namespace fs = std::filesystem;
  const fs::path ports = fs::path(sys_root) / "class" / "infiniband" / nic / "ports";
  std::error_code ec;
  if (!fs::is_directory(fs::path(sys_root) / "class" / "infiniband" / nic, ec)) return "";
  std::vector<int> numbers;
  for (fs::directory_iterator it(ports, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.empty() &&
        std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      numbers.push_back(std::stoi(name));
    }
  }
  std::sort(numbers.begin(), numbers.end());
  for (int p : numbers) {
    std::ifstream state(ports / std::to_string(p) / "state");
    std::string text;
    std::getline(state, text);
    if (text.find("ACTIVE") != std::string::npos) return nic + ":" + std::to_string(p);
  }
  return nic + ":" + std::to_string(numbers.empty() ? 1 : numbers.front());
}

std::string describe_devices(const std::vector<int>& nodes,
                             const std::vector<std::string>& devices) {
  if (devices.empty()) return "";
  if (std::all_of(devices.begin(), devices.end(),
                  [&](const std::string& d) { return d == devices.front(); })) {
    return devices.front();
  }
  std::string out;
  for (std::size_t i = 0; i < devices.size() && i < nodes.size(); ++i) {
    if (!out.empty()) out += ", ";
    out += "node " + std::to_string(nodes[i]) + ": " +
           (devices[i].empty() ? std::string("UCX's choice") : devices[i]);
  }
  return out;
}

}  // namespace shakedown::fabric
