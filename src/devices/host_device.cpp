// The devices phase's CPU path: this rank's share of host memory bandwidth (STREAM's copy and
// triad over arrays well beyond the caches, threads on the rank's own cores) and copies from the
// node's other ranks' memory through an MPI shared-memory window.
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "core/error.hpp"
#include "devices/device.hpp"
#include "runtime/clock.hpp"
#include "runtime/mpi.hpp"

namespace shakedown::devices {

namespace {

struct FreeDeleter {
  void operator()(void* p) const noexcept { std::free(p); }
};
using HostBuffer = std::unique_ptr<double[], FreeDeleter>;

HostBuffer allocate(std::uint64_t bytes, const char* what) {
  const std::uint64_t rounded = (bytes + 4095) / 4096 * 4096;
  void* p = std::aligned_alloc(4096, rounded);
  if (p == nullptr) {
    throw OutOfMemory("devices: cannot allocate " + std::to_string(bytes) +
                      " bytes of host memory for the " + what +
                      " (lower devices.host_bytes or devices.copy_bytes)");
  }
  return HostBuffer(static_cast<double*>(p));
}

// Runs fn(first, last) over [0, n) split into `threads` slices, the calling thread taking the
// first. Slices are the same on every call, so each thread touches the pages it first wrote
// (Linux places a page on the NUMA node of the CPU that first writes it).
template <class Fn>
void parallel_slices(std::size_t n, int threads, Fn fn) {
  const auto t = static_cast<std::size_t>(threads < 1 ? 1 : threads);
  std::vector<std::thread> pool;
  pool.reserve(t - 1);
  for (std::size_t i = 1; i < t; ++i) {
    pool.emplace_back([&, i] { fn(n * i / t, n * (i + 1) / t); });
  }
  fn(0, n / t);
  for (auto& th : pool) th.join();
}

class SharedWindow {
 public:
  SharedWindow() = default;
  SharedWindow(const SharedWindow&) = delete;
  SharedWindow& operator=(const SharedWindow&) = delete;
  // Not freed on an exception path: MPI_Win_free is collective, and the job is ending anyway.
  ~SharedWindow() = default;

  void open(MPI_Comm comm, std::uint64_t bytes) {
    comm_ = comm;
    void* base = nullptr;
    SD_MPI_CHECK(MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, comm,
                                         &base, &win_));
    mine_ = static_cast<unsigned char*>(base);
  }
  unsigned char* mine() const { return mine_; }
  const unsigned char* peer(int local) const {
    MPI_Aint size = 0;
    int disp = 0;
    void* p = nullptr;
    SD_MPI_CHECK(MPI_Win_shared_query(win_, local, &size, &disp, &p));
    return static_cast<const unsigned char*>(p);
  }
  void close() {
    if (win_ != MPI_WIN_NULL) SD_MPI_CHECK(MPI_Win_free(&win_));
    mine_ = nullptr;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  unsigned char* mine_ = nullptr;
};

class HostDevice final : public Device {
 public:
  HostDevice(std::uint64_t array_bytes, std::uint64_t copy_bytes, int threads)
      : n_(array_bytes / sizeof(double)),
        copy_bytes_(copy_bytes),
        threads_(threads < 1 ? 1 : threads),
        a_(allocate(n_ * sizeof(double), "copy and triad")),
        b_(allocate(n_ * sizeof(double), "copy and triad")),
        c_(allocate(n_ * sizeof(double), "copy and triad")),
        dst_(allocate(copy_bytes, "pair copies")) {
    double* a = a_.get();
    double* b = b_.get();
    double* c = c_.get();
    parallel_slices(n_, threads_, [=](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i) {
        a[i] = 1.0;
        b[i] = 2.0;
        c[i] = 0.0;
      }
    });
    std::memset(dst_.get(), 0, copy_bytes_);
    const double array = static_cast<double>(n_ * sizeof(double));
    tests_ = {{"copy", 2 * array, "read + written (STREAM)"},
              {"triad", 3 * array, "read + written (STREAM)"}};
  }

  std::string kind() const override { return "cpu"; }
  std::string describe() const override {
    return "host memory, " + std::to_string(threads_) + (threads_ == 1 ? " thread" : " threads");
  }
  const std::vector<MemoryTest>& tests() const override { return tests_; }

  double run(std::size_t test) override {
    double* a = a_.get();
    double* b = b_.get();
    double* c = c_.get();
    const double t0 = now_us();
    if (test == 0) {
      parallel_slices(n_, threads_, [=](std::size_t lo, std::size_t hi) {
        std::memcpy(c + lo, a + lo, (hi - lo) * sizeof(double));
      });
    } else {
      parallel_slices(n_, threads_, [=](std::size_t lo, std::size_t hi) {
        const double s = 3.0;
        for (std::size_t i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
      });
    }
    const double took = (now_us() - t0) * 1e-6;
    // Keep the result observable so the loops cannot be dropped.
    sink_ += a[n_ / 2] + c[n_ / 3];
    return took;
  }

  std::vector<std::string> open_peers(MPI_Comm node) override {
    window_.open(node, copy_bytes_);
    int rank = 0, size = 0;
    SD_MPI_CHECK(MPI_Comm_rank(node, &rank));
    SD_MPI_CHECK(MPI_Comm_size(node, &size));
    // Each rank's segment holds its own byte pattern, written by itself (its NUMA node).
    std::memset(window_.mine(), 0x40 + (rank & 0x3f), copy_bytes_);
    SD_MPI_CHECK(MPI_Barrier(node));
    peers_.assign(static_cast<std::size_t>(size), nullptr);
    for (int p = 0; p < size; ++p) peers_[static_cast<std::size_t>(p)] = window_.peer(p);
    return std::vector<std::string>(static_cast<std::size_t>(size));
  }

  double copy_from(int peer) override {
    const unsigned char* src = peers_.at(static_cast<std::size_t>(peer));
    auto* dst = reinterpret_cast<unsigned char*>(dst_.get());
    const double t0 = now_us();
    std::memcpy(dst, src, copy_bytes_);
    const double took = (now_us() - t0) * 1e-6;
    if (dst[copy_bytes_ / 2] != static_cast<unsigned char>(0x40 + (peer & 0x3f))) {
      throw RuntimeFault("devices: the copy from local rank " + std::to_string(peer) +
                         "'s shared memory did not bring its bytes (shared window broken)");
    }
    return took;
  }

  void close_peers() override {
    peers_.clear();
    window_.close();
  }
  double pair_bytes() const override { return static_cast<double>(copy_bytes_); }

 private:
  std::size_t n_;
  std::uint64_t copy_bytes_;
  int threads_;
  HostBuffer a_, b_, c_, dst_;
  std::vector<MemoryTest> tests_;
  SharedWindow window_;
  std::vector<const unsigned char*> peers_;
  double sink_ = 0;
};

std::string first_word(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  in >> word;
  return word;
}

double number_or_nan(const std::string& text) {
  if (text.empty()) return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end == text.c_str() ? std::numeric_limits<double>::quiet_NaN() : v;
}

}  // namespace

std::unique_ptr<Device> make_host_device(std::uint64_t array_bytes, std::uint64_t copy_bytes,
                                         int threads) {
  return std::make_unique<HostDevice>(array_bytes, copy_bytes, threads);
}

LinkState read_pcie_link(const std::string& root, const std::string& bus_id,
                         const std::string& label) {
  LinkState s;
  s.device = label;
  const std::string dir = root + "/sys/bus/pci/devices/" + bus_id + "/";
  // "32.0 GT/s PCIe" (older kernels: "32 GT/s"); widths are plain numbers.
  s.current_gts = number_or_nan(first_word(dir + "current_link_speed"));
  s.device_max_gts = number_or_nan(first_word(dir + "max_link_speed"));
  s.current_width = number_or_nan(first_word(dir + "current_link_width"));
  s.device_max_width = number_or_nan(first_word(dir + "max_link_width"));
  s.max_gts = s.device_max_gts;
  s.max_width = s.device_max_width;
  // The device folder is a link into /sys/devices/pci<domain>/<port>/.../<bus_id>: its parent is
  // the port the link trains with.
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(dir, ec);
  if (ec) return s;
  const std::filesystem::path port = real.parent_path();
  const std::string up = (port / "max_link_speed").string();
  const double up_gts = number_or_nan(first_word(up));
  const double up_width = number_or_nan(first_word((port / "max_link_width").string()));
  if (std::isnan(up_gts) && std::isnan(up_width)) return s;
  s.upstream = port.filename().string();
  if (up_gts < s.max_gts) s.max_gts = up_gts;
  if (up_width < s.max_width) s.max_width = up_width;
  return s;
}

namespace {

// "0000:3b:00.0": a PCI function's folder name in sysfs.
bool is_pci_bus_id(const std::string& name) {
  if (name.size() != 12 || name[4] != ':' || name[7] != ':' || name[10] != '.') return false;
  for (std::size_t i : {0u, 1u, 2u, 3u, 5u, 6u, 8u, 9u, 11u}) {
    if (std::isxdigit(static_cast<unsigned char>(name[i])) == 0) return false;
  }
  return true;
}

}  // namespace

std::string nic_pci_bus_id(const std::string& root, const std::string& nic) {
  if (nic.empty() || nic.find('/') != std::string::npos) return "";
  for (const char* cls : {"infiniband", "net"}) {
    std::error_code ec;
    std::filesystem::path p =
        std::filesystem::canonical(root + "/sys/class/" + cls + "/" + nic + "/device", ec);
    if (ec) continue;
    for (; !p.empty() && p != p.root_path(); p = p.parent_path()) {
      if (is_pci_bus_id(p.filename().string())) return p.filename().string();
    }
  }
  return "";
}

}  // namespace shakedown::devices
