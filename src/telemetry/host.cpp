#include "telemetry/host.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace shakedown::telemetry {
namespace {

namespace fs = std::filesystem;

// The first number in a file, or NaN.
double read_number(const std::string& path) {
  std::ifstream in(path);
  double value = kNaN;
  if (!(in >> value)) return kNaN;
  return value;
}

// MemAvailable from meminfo, in GiB.
double memory_available_gib(const std::string& meminfo) {
  std::ifstream in(meminfo);
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib / double(1 << 20);
  }
  return kNaN;
}

// "cpu MHz : 2994.374" lines of /proc/cpuinfo (a virtual machine without cpufreq has them).
std::vector<double> cpuinfo_mhz(const std::string& cpuinfo) {
  std::ifstream in(cpuinfo);
  std::vector<double> mhz;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    try {
      mhz.push_back(std::stod(line.substr(colon + 1)));
    } catch (const std::exception&) {
    }
  }
  return mhz;
}

// Numeric order of "cpu12" after "cpu2".
bool by_number(const fs::path& a, const fs::path& b) {
  const auto num = [](const fs::path& p) {
    const std::string name = p.filename().string();
    return std::strtol(name.c_str() + 3, nullptr, 10);
  };
  return num(a) < num(b);
}

std::vector<fs::path> sorted_children(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

HostReader::HostReader(const std::string& sys_root, const std::string& proc_root)
    : proc_root_(proc_root) {
  channels_ = {{"host", host::kLoad, "load", Kind::kGauge},
               {"host", host::kMemoryAvailable, "GiB", Kind::kGauge},
               {"host", host::kCpuMhzMin, "MHz", Kind::kGauge},
               {"host", host::kCpuMhzMedian, "MHz", Kind::kGauge},
               {"host", host::kCpuMhzMax, "MHz", Kind::kGauge}};
  std::vector<fs::path> cpus;
  for (const fs::path& p : sorted_children(fs::path(sys_root) / "devices/system/cpu")) {
    const std::string name = p.filename().string();
    if (name.size() > 3 && name.rfind("cpu", 0) == 0 &&
        std::all_of(name.begin() + 3, name.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        fs::exists(p / "cpufreq/scaling_cur_freq")) {
      cpus.push_back(p);
    }
  }
  std::sort(cpus.begin(), cpus.end(), by_number);
  for (const fs::path& p : cpus)
    cpufreq_files_.push_back((p / "cpufreq/scaling_cur_freq").string());
  if (cpufreq_files_.empty()) {
    notes_.push_back("no cpufreq under " + sys_root +
                     "/devices/system/cpu: the cores' clock is /proc/cpuinfo's cpu MHz");
  }

  static const std::pair<const char*, const char*> kCounters[] = {
      {ib::kXmitBytes, "port_xmit_data"},
      {ib::kRcvBytes, "port_rcv_data"},
      {ib::kSymbolError, "symbol_error"},
      {ib::kLinkDowned, "link_downed"},
      {ib::kRcvErrors, "port_rcv_errors"}};
  const fs::path ib_root = fs::path(sys_root) / "class/infiniband";
  for (const fs::path& dev : sorted_children(ib_root)) {
    for (const fs::path& port : sorted_children(dev / "ports")) {
      const std::string device = dev.filename().string() + ":" + port.filename().string();
      for (const auto& [signal, file] : kCounters) {
        const bool traffic = signal == ib::kXmitBytes || signal == ib::kRcvBytes;
        channels_.push_back({device, signal, traffic ? "GB" : "errors", Kind::kCounter});
        counter_files_.push_back((port / "counters" / file).string());
      }
    }
  }
  if (counter_files_.empty()) notes_.push_back("no InfiniBand ports under " + ib_root.string());
}

void HostReader::read(std::span<double> out) const {
  std::fill(out.begin(), out.end(), kNaN);
  std::size_t slot = 0;
  out[slot++] = read_number(proc_root_ + "/loadavg");
  out[slot++] = memory_available_gib(proc_root_ + "/meminfo");
  std::vector<double> mhz;
  if (cpufreq_files_.empty()) {
    mhz = cpuinfo_mhz(proc_root_ + "/cpuinfo");
  } else {
    for (const std::string& f : cpufreq_files_) {
      if (const double khz = read_number(f); std::isfinite(khz)) mhz.push_back(khz * 1e-3);
    }
  }
  if (!mhz.empty()) {
    std::sort(mhz.begin(), mhz.end());
    const std::size_t n = mhz.size();
    out[slot] = mhz.front();
    out[slot + 1] = n % 2 == 1 ? mhz[n / 2] : 0.5 * (mhz[n / 2 - 1] + mhz[n / 2]);
    out[slot + 2] = mhz.back();
  }
  slot += 3;
  for (std::size_t i = 0; i < counter_files_.size(); ++i, ++slot) {
    double value = read_number(counter_files_[i]);
    // port_xmit_data and port_rcv_data count octets divided by 4 (one per lane).
    const std::string& signal = channels_[slot].signal;
    if (signal == ib::kXmitBytes || signal == ib::kRcvBytes) value = value * 4.0 * 1e-9;
    out[slot] = value;
  }
}

}  // namespace shakedown::telemetry
