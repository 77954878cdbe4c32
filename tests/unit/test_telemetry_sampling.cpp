// The telemetry readers on their own: NVML through the scripted stand-in (tests/support/
// fake_nvml.cpp, loaded by the same dlopen path as libnvidia-ml.so.1), the host's signals from a
// /sys and /proc tree laid out as the kernel's, and the sampler thread over both.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <tuple>

#include "telemetry/channels.hpp"
#include "telemetry/host.hpp"
#include "telemetry/nvml.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/xid.hpp"
#include "temp_dir.hpp"

namespace {

using namespace shakedown::telemetry;

// The environment the stand-in reads at nvmlInit, restored after each test.
class FakeNvmlEnv {
 public:
  FakeNvmlEnv() { clear(); }
  ~FakeNvmlEnv() { clear(); }
  void set(const char* name, const char* value) { setenv(name, value, 1); }

 private:
  static void clear() {
    for (const char* name :
         {"FAKE_NVML_GPUS", "FAKE_NVML_INIT", "FAKE_NVML_UNSUPPORTED", "FAKE_NVML_THROTTLE",
          "FAKE_NVML_ECC", "FAKE_NVML_PCIE", "FAKE_NVML_NVLINK_DOWN", "FAKE_NVML_AFTER",
          "FAKE_NVML_XID", "FAKE_NVML_KERNEL_LOG", "FAKE_NVML_EVENTS_REFUSED",
          "FAKE_NVML_EVENTS_LOST"}) {
      unsetenv(name);
    }
  }
};

std::size_t slot(const char* signal) {
  const auto& s = gpu_signals();
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i].signal == signal) return i;
  }
  ADD_FAILURE() << "no GPU signal " << signal;
  return 0;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(TelemetryNvml, ReadsEverySignalOfEachGpu) {
  FakeNvmlEnv env;
  env.set("FAKE_NVML_GPUS", "3");
  Nvml nvml = Nvml::open(SHAKEDOWN_FAKE_NVML);
  ASSERT_TRUE(nvml.loaded()) << nvml.why();
  ASSERT_EQ(nvml.count(), 3);
  EXPECT_EQ(nvml.bus_id(0), "0000:1b:00.0");  // NVML's 8-digit domain, as sysfs writes it
  EXPECT_EQ(nvml.bus_id(2), "0000:1d:00.0");
  std::vector<double> v(gpu_signals().size());
  nvml.read(1, v);
  EXPECT_DOUBLE_EQ(v[slot(gpu::kUtilization)], 90);
  EXPECT_DOUBLE_EQ(v[slot(gpu::kMemoryUsed)], 20);  // GiB
  EXPECT_DOUBLE_EQ(v[slot(gpu::kPower)], 360);      // W from mW
  EXPECT_DOUBLE_EQ(v[slot(gpu::kPowerLimit)], 700);
  EXPECT_DOUBLE_EQ(v[slot(gpu::kTemperature)], 46);
  EXPECT_DOUBLE_EQ(v[slot(gpu::kSmClock)], 1980);
  EXPECT_DOUBLE_EQ(v[slot(gpu::kMemoryClock)], 2619);
  EXPECT_DOUBLE_EQ(v[slot(gpu::kClockReasons)], 0);
  EXPECT_DOUBLE_EQ(v[slot(gpu::kEccUncorrected)], 0);
  EXPECT_DOUBLE_EQ(v[slot(gpu::kPcieGen)], 5);
  EXPECT_DOUBLE_EQ(v[slot(gpu::kPcieMaxWidth)], 16);
  EXPECT_DOUBLE_EQ(v[slot(gpu::kNvlinkActive)], 18);
  EXPECT_DOUBLE_EQ(v[slot(gpu::kMigMode)], 0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string& signal = gpu_signals()[i].signal;
    // The Xid signals come from the kernel log (the sampler's), not from NVML.
    const bool from_nvml = signal != gpu::kXidCount && signal != gpu::kXidLast;
    EXPECT_EQ(std::isfinite(v[i]), from_nvml) << signal;
  }
  EXPECT_TRUE(nvml.unavailable().empty());
}

TEST(TelemetryNvml, ScriptedFaultsAppearFromTheirSample) {
  FakeNvmlEnv env;
  env.set("FAKE_NVML_THROTTLE", "1");
  env.set("FAKE_NVML_ECC", "0");
  env.set("FAKE_NVML_PCIE", "1");
  env.set("FAKE_NVML_AFTER", "2");
  Nvml nvml = Nvml::open(SHAKEDOWN_FAKE_NVML);
  ASSERT_TRUE(nvml.loaded()) << nvml.why();
  std::vector<double> g0(gpu_signals().size()), g1(gpu_signals().size());
  nvml.read(0, g0);
  nvml.read(1, g1);
  EXPECT_DOUBLE_EQ(g0[slot(gpu::kEccUncorrected)], 0) << "first sample: not yet";
  EXPECT_DOUBLE_EQ(g1[slot(gpu::kClockReasons)], 0);
  nvml.read(0, g0);
  nvml.read(1, g1);
  EXPECT_DOUBLE_EQ(g0[slot(gpu::kEccUncorrected)], 1);
  EXPECT_DOUBLE_EQ(g1[slot(gpu::kClockReasons)], 0x8 | 0x4);
  EXPECT_DOUBLE_EQ(g1[slot(gpu::kPcieGen)], 3);
  EXPECT_DOUBLE_EQ(g1[slot(gpu::kPcieWidth)], 8);
  EXPECT_DOUBLE_EQ(g0[slot(gpu::kPcieGen)], 5) << "only GPU 1's link is down-trained";
  EXPECT_EQ(throttle_reasons_text(0x8 | 0x4 | 0x1), "sw_power_cap, hw_slowdown");
}

TEST(TelemetryNvml, UnsupportedSignalsAreNaNWithTheReasonOnce) {
  FakeNvmlEnv env;
  env.set("FAKE_NVML_GPUS", "1");
  env.set("FAKE_NVML_UNSUPPORTED", "temperature,ecc");
  Nvml nvml = Nvml::open(SHAKEDOWN_FAKE_NVML);
  ASSERT_TRUE(nvml.loaded()) << nvml.why();
  std::vector<double> v(gpu_signals().size());
  nvml.read(0, v);
  nvml.read(0, v);
  EXPECT_TRUE(std::isnan(v[slot(gpu::kTemperature)]));
  EXPECT_TRUE(std::isnan(v[slot(gpu::kEccCorrected)]));
  EXPECT_TRUE(std::isnan(v[slot(gpu::kEccUncorrected)]));
  EXPECT_DOUBLE_EQ(v[slot(gpu::kPower)], 350);
  const std::vector<std::string> expected = {"gpu0 temperature: Not Supported",
                                             "gpu0 ecc_corrected: Not Supported",
                                             "gpu0 ecc_uncorrected: Not Supported"};
  EXPECT_EQ(nvml.unavailable(), expected) << "each signal once, not once per sample";
}

TEST(TelemetryNvml, MissingOrFailingNvmlIsNotFatal) {
  FakeNvmlEnv env;
  Nvml none = Nvml::open("libshakedown-no-such-nvml.so.1");
  EXPECT_FALSE(none.loaded());
  EXPECT_NE(none.why().find("libshakedown-no-such-nvml.so.1 not loadable"), std::string::npos)
      << none.why();
  EXPECT_EQ(none.count(), 0);
  std::vector<double> v(gpu_signals().size(), 0.0);
  none.read(0, v);
  EXPECT_TRUE(std::isnan(v[0]));

  env.set("FAKE_NVML_INIT", "9");
  Nvml failed = Nvml::open(SHAKEDOWN_FAKE_NVML);
  EXPECT_FALSE(failed.loaded());
  EXPECT_EQ(failed.why(), "nvmlInit: Driver Not Loaded");

  Nvml absent = Nvml::absent("no NVIDIA driver");
  EXPECT_FALSE(absent.loaded());
  EXPECT_EQ(absent.why(), "no NVIDIA driver");
}

TEST(TelemetryHost, ReadsLoadMemoryClocksAndPortCounters) {
  shakedown::testing_support::TempDir dir;
  const auto sys = dir / "sys";
  const auto proc = dir / "proc";
  write_file(sys / "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "2000000\n");
  write_file(sys / "devices/system/cpu/cpu1/cpufreq/scaling_cur_freq", "3000000\n");
  write_file(sys / "devices/system/cpu/cpu10/cpufreq/scaling_cur_freq", "1000000\n");
  write_file(sys / "devices/system/cpu/cpufreq/policy0/x", "");  // not a core
  write_file(proc / "loadavg", "1.50 0.80 0.40 2/300 1234\n");
  write_file(proc / "meminfo",
             "MemTotal: 8388608 kB\nMemFree: 1048576 kB\n"
             "MemAvailable: 2097152 kB\n");
  const auto port = sys / "class/infiniband/mlx5_0/ports/1/counters";
  write_file(port / "port_xmit_data", "250000000\n");  // x 4 octets = 1 GB
  write_file(port / "port_rcv_data", "500000000\n");
  write_file(port / "symbol_error", "3\n");
  write_file(port / "link_downed", "0\n");
  write_file(port / "port_rcv_errors", "0\n");

  const HostReader host(sys.string(), proc.string());
  const auto& ch = host.channels();
  ASSERT_EQ(ch.size(), 5u + 5u);
  EXPECT_EQ(ch[5].device, "mlx5_0:1");
  EXPECT_EQ(ch[5].signal, ib::kXmitBytes);
  EXPECT_EQ(ch[7].signal, ib::kSymbolError);
  EXPECT_EQ(ch[7].kind, Kind::kCounter);
  std::vector<double> v(ch.size());
  host.read(v);
  EXPECT_DOUBLE_EQ(v[0], 1.5);   // load
  EXPECT_DOUBLE_EQ(v[1], 2.0);   // GiB available
  EXPECT_DOUBLE_EQ(v[2], 1000);  // MHz: slowest core (cpu10)
  EXPECT_DOUBLE_EQ(v[3], 2000);
  EXPECT_DOUBLE_EQ(v[4], 3000);
  EXPECT_DOUBLE_EQ(v[5], 1.0);  // GB sent
  EXPECT_DOUBLE_EQ(v[6], 2.0);
  EXPECT_DOUBLE_EQ(v[7], 3);
  EXPECT_TRUE(host.notes().empty());
}

TEST(TelemetryHost, WithoutCpufreqOrInfinibandItSaysSo) {
  shakedown::testing_support::TempDir dir;
  write_file(dir / "proc/loadavg", "0.25 0 0 1/1 1\n");
  write_file(dir / "proc/meminfo", "MemAvailable: 1048576 kB\n");
  write_file(dir / "proc/cpuinfo",
             "processor : 0\ncpu MHz : 2400.5\n\nprocessor : 1\n"
             "cpu MHz : 2600.5\n");
  std::filesystem::create_directories(dir / "sys");
  const HostReader host((dir / "sys").string(), (dir / "proc").string());
  ASSERT_EQ(host.channels().size(), 5u);
  std::vector<double> v(5);
  host.read(v);
  EXPECT_DOUBLE_EQ(v[2], 2400.5);  // from /proc/cpuinfo
  EXPECT_DOUBLE_EQ(v[3], 2500.5);
  ASSERT_EQ(host.notes().size(), 2u);
  EXPECT_NE(host.notes()[0].find("no cpufreq"), std::string::npos);
  EXPECT_NE(host.notes()[1].find("no InfiniBand ports"), std::string::npos);
}

TEST(TelemetrySampler, SamplesHostAndGpusOnItsOwnThread) {
  FakeNvmlEnv env;
  env.set("FAKE_NVML_GPUS", "2");
  env.set("FAKE_NVML_UNSUPPORTED", "temperature");
  Sampler sampler(HostReader(), Nvml::open(SHAKEDOWN_FAKE_NVML), std::chrono::milliseconds(10));
  const std::size_t channels = HostReader().channels().size() + 2 * gpu_signals().size();
  ASSERT_EQ(sampler.channels().size(), channels);
  EXPECT_EQ(sampler.channels().back().device, "gpu1");
  EXPECT_EQ(sampler.gpu_bus_ids().size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  const Batch first = sampler.take();
  ASSERT_GE(first.time_us.size(), 3u);
  EXPECT_EQ(first.values.size(), first.time_us.size() * channels);
  for (std::size_t t = 1; t < first.time_us.size(); ++t) {
    EXPECT_GT(first.time_us[t], first.time_us[t - 1]);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const Batch second = sampler.take();
  ASSERT_FALSE(second.time_us.empty()) << "take() hands over only what came since";
  EXPECT_GT(second.time_us.front(), first.time_us.back());
  const auto notes = sampler.notes();
  EXPECT_NE(std::find(notes.begin(), notes.end(), "gpu1 temperature: Not Supported"), notes.end());
  EXPECT_GE(sampler.sample_cost_us(), 0.0);
}

// A phase shorter than the interval still gets a sample: take() asks the thread for one at once
// instead of handing over nothing (the phase would read as unsampled).
TEST(TelemetrySampler, TakeWithNothingSinceAsksForASampleAtOnce) {
  FakeNvmlEnv env;
  env.set("FAKE_NVML_GPUS", "1");
  Sampler sampler(HostReader(), Nvml::open(SHAKEDOWN_FAKE_NVML), std::chrono::milliseconds(400));
  const std::size_t channels = sampler.channels().size();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const Batch first = sampler.take();  // the sample taken at construction
  ASSERT_EQ(first.time_us.size(), 1u);
  for (int phase = 0; phase < 3; ++phase) {  // three short "phases", far inside one interval
    const auto t0 = std::chrono::steady_clock::now();
    const Batch b = sampler.take();
    const auto waited = std::chrono::steady_clock::now() - t0;
    ASSERT_EQ(b.time_us.size(), 1u) << "phase " << phase;
    EXPECT_EQ(b.values.size(), channels);
    EXPECT_LT(waited, std::chrono::milliseconds(300)) << "waited for the grid, not asked";
  }
}

TEST(TelemetryXid, ParsesTheDriversKernelLogLines) {
  const auto kmsg = parse_xid(
      "4,1234,5678,-;NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has "
      "fallen off the bus.");
  ASSERT_TRUE(kmsg);
  EXPECT_EQ(kmsg->bus, "0000:1b:00");
  EXPECT_EQ(kmsg->code, 79);
  EXPECT_EQ(kmsg->text.rfind("Xid (PCI:0000:1b:00): 79", 0), 0u) << kmsg->text;
  const auto dmesg = parse_xid("[ 1234.5] NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception");
  ASSERT_TRUE(dmesg);
  EXPECT_EQ(dmesg->code, 13);
  EXPECT_TRUE(xid_from_application(13));
  EXPECT_FALSE(xid_from_application(79));
  EXPECT_FALSE(parse_xid("NVRM: loading NVIDIA UNIX x86_64 Kernel Module"));
  EXPECT_FALSE(parse_xid("NVRM: Xid (PCI:0000:1b:00): no code"));
  EXPECT_FALSE(parse_xid("NVRM: Xid (PCI:0000:1b:00"));
}

TEST(TelemetryXid, ReadsOnlyWhatIsWrittenAfterItStarts) {
  shakedown::testing_support::TempDir dir;
  const std::string log = (dir / "kmsg").string();
  std::ofstream(log) << "NVRM: Xid (PCI:0000:1b:00): 48, before the run\n";
  XidReader reader(log);
  ASSERT_TRUE(reader.readable()) << reader.why();
  EXPECT_TRUE(reader.poll().empty()) << "what was logged before the run does not count";
  std::ofstream(log, std::ios::app) << "other line\nNVRM: Xid (PCI:0000:1c:00): 79, off the bus\n"
                                    << "NVRM: Xid (PCI:0000:1b:00): 9";  // unfinished line
  auto events = reader.poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].bus, "0000:1c:00");
  std::ofstream(log, std::ios::app) << "4, half a line\n";
  events = reader.poll();
  ASSERT_EQ(events.size(), 1u) << "the line finished by a later write is read whole";
  EXPECT_EQ(events[0].code, 94);
  XidReader none((dir / "no-such-log").string());
  EXPECT_FALSE(none.readable());
  EXPECT_NE(none.why().find("No such file"), std::string::npos) << none.why();
  EXPECT_TRUE(none.poll().empty());
}

// The last sample's Xid count and last code of `device` ("gpu1").
struct XidSeen {
  double count, last;
};
// The sampler's notes about Xids (the host's own notes depend on the machine).
std::vector<std::string> xid_notes(const Sampler& sampler) {
  std::vector<std::string> out;
  for (const std::string& note : sampler.notes()) {
    if (note.find("Xid") != std::string::npos) out.push_back(note);
  }
  return out;
}
XidSeen last_xid(const Sampler& sampler, const Batch& b, const std::string& device) {
  const auto& ch = sampler.channels();
  XidSeen seen{-1, -1};
  const std::size_t row = (b.time_us.size() - 1) * ch.size();
  for (std::size_t c = 0; c < ch.size(); ++c) {
    if (ch[c].device != device) continue;
    if (ch[c].signal == gpu::kXidCount) seen.count = b.values[row + c];
    if (ch[c].signal == gpu::kXidLast) seen.last = b.values[row + c];
  }
  return seen;
}

TEST(TelemetryXid, NvmlsEventSetDeliversEachGpusXids) {
  FakeNvmlEnv env;
  env.set("FAKE_NVML_XID", "1,48");
  env.set("FAKE_NVML_AFTER", "2");
  Nvml nvml = Nvml::open(SHAKEDOWN_FAKE_NVML);
  ASSERT_TRUE(nvml.loaded()) << nvml.why();
  nvml.watch_xids();
  EXPECT_TRUE(nvml.watching_xids(0));
  EXPECT_TRUE(nvml.watching_xids(1));
  EXPECT_FALSE(nvml.watching_xids(2));
  EXPECT_TRUE(nvml.xid_notes().empty());
  std::vector<double> row(gpu_signals().size());
  nvml.read(1, row);  // the first sample: nothing yet
  EXPECT_TRUE(nvml.poll_xids().empty());
  nvml.read(1, row);  // the second: the driver reports Xid 48 on GPU 1
  const auto xids = nvml.poll_xids();
  ASSERT_EQ(xids.size(), 1u);
  EXPECT_EQ(xids[0].gpu, 1);
  EXPECT_EQ(xids[0].code, 48);
  EXPECT_TRUE(nvml.poll_xids().empty()) << "each event is delivered once";
}

TEST(TelemetryXid, TheSamplerCountsEachGpusXidsOnceFromEitherSource) {
  FakeNvmlEnv env;
  shakedown::testing_support::TempDir dir;
  const std::string log = (dir / "kmsg").string();
  env.set("FAKE_NVML_XID", "1,79");
  env.set("FAKE_NVML_KERNEL_LOG", log.c_str());
  // The last sample's Xids of GPU 0 and GPU 1 with the script as set, the kernel log emptied.
  const auto run = [&](const std::string& kernel_log) {
    std::ofstream(log) << "";
    Sampler sampler(HostReader(), Nvml::open(SHAKEDOWN_FAKE_NVML), std::chrono::milliseconds(10),
                    {}, kernel_log);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    const Batch b = sampler.take();
    EXPECT_GE(b.time_us.size(), 2u);
    return std::tuple{last_xid(sampler, b, "gpu0"), last_xid(sampler, b, "gpu1"),
                      xid_notes(sampler)};
  };
  {
    // NVML watches both GPUs; the kernel log carries the same Xid: it counts once.
    const auto [gpu0, gpu1, notes] = run(log);
    EXPECT_DOUBLE_EQ(gpu1.count, 1);
    EXPECT_DOUBLE_EQ(gpu1.last, 79);
    EXPECT_DOUBLE_EQ(gpu0.count, 0);
    EXPECT_TRUE(std::isnan(gpu0.last));
    EXPECT_TRUE(notes.empty());
  }
  {
    // NVML's events alone: no readable kernel log is needed, and none is missed.
    const auto [gpu0, gpu1, notes] = run((dir / "no-such-log").string());
    EXPECT_DOUBLE_EQ(gpu1.count, 1);
    EXPECT_DOUBLE_EQ(gpu1.last, 79);
    EXPECT_TRUE(notes.empty()) << notes.front();
  }
  {
    // GPU 0 refused by NVML, so the kernel log is read for it; GPU 1's Xid, in both, counts
    // once (NVML has it).
    env.set("FAKE_NVML_EVENTS_REFUSED", "0");
    const auto [gpu0, gpu1, notes] = run(log);
    EXPECT_DOUBLE_EQ(gpu1.count, 1);
    EXPECT_DOUBLE_EQ(gpu0.count, 0);
    EXPECT_TRUE(notes.empty()) << notes.front();
  }
  {
    // GPU 1 refused: its Xid comes from the kernel log.
    env.set("FAKE_NVML_EVENTS_REFUSED", "1");
    const auto [gpu0, gpu1, notes] = run(log);
    EXPECT_DOUBLE_EQ(gpu1.count, 1);
    EXPECT_DOUBLE_EQ(gpu1.last, 79);
    EXPECT_DOUBLE_EQ(gpu0.count, 0);
    EXPECT_TRUE(notes.empty()) << notes.front();
  }
  {
    // Every GPU refused: the kernel log alone.
    env.set("FAKE_NVML_EVENTS_REFUSED", "-1");
    env.set("FAKE_NVML_UNSUPPORTED", "events");
    const auto [gpu0, gpu1, notes] = run(log);
    EXPECT_DOUBLE_EQ(gpu1.count, 1);
    EXPECT_DOUBLE_EQ(gpu1.last, 79);
    EXPECT_TRUE(notes.empty()) << notes.front();
  }
}

TEST(TelemetryXid, AnEventSetThatFailsHandsItsGpusToTheKernelLog) {
  FakeNvmlEnv env;
  shakedown::testing_support::TempDir dir;
  const std::string log = (dir / "kmsg").string();
  std::ofstream(log) << "";
  env.set("FAKE_NVML_XID", "1,79");
  env.set("FAKE_NVML_AFTER", "3");  // after the first wait has failed
  env.set("FAKE_NVML_KERNEL_LOG", log.c_str());
  env.set("FAKE_NVML_EVENTS_LOST", "1");
  {
    Sampler sampler(HostReader(), Nvml::open(SHAKEDOWN_FAKE_NVML), std::chrono::milliseconds(10),
                    {}, log);
    std::this_thread::sleep_for(std::chrono::milliseconds(80));
    const Batch b = sampler.take();
    ASSERT_GE(b.time_us.size(), 4u);
    EXPECT_DOUBLE_EQ(last_xid(sampler, b, "gpu1").count, 1) << "read from the kernel log";
    EXPECT_DOUBLE_EQ(last_xid(sampler, b, "gpu1").last, 79);
    const auto notes = xid_notes(sampler);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("nvmlEventSetWait: GPU is lost (NVML's events given up"),
              std::string::npos)
        << notes[0];
  }
  {
    // Without a readable kernel log the GPUs are no longer watched: NaN, not a count of 0.
    Sampler sampler(HostReader(), Nvml::open(SHAKEDOWN_FAKE_NVML), std::chrono::milliseconds(10),
                    {}, (dir / "no-such-log").string());
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    const Batch b = sampler.take();
    ASSERT_GE(b.time_us.size(), 2u);
    EXPECT_TRUE(std::isnan(last_xid(sampler, b, "gpu0").count));
    const auto notes = xid_notes(sampler);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("; no kernel log either: "), std::string::npos) << notes[0];
  }
}

TEST(TelemetryXid, WithNeitherSourceXidsAreUnwatchedAndTheNotesSayWhy) {
  FakeNvmlEnv env;
  env.set("FAKE_NVML_UNSUPPORTED", "events");
  Sampler sampler(HostReader(), Nvml::open(SHAKEDOWN_FAKE_NVML), std::chrono::milliseconds(10), {},
                  "/nonexistent/kmsg");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const Batch b = sampler.take();
  ASSERT_FALSE(b.time_us.empty());
  const auto& ch = sampler.channels();
  for (std::size_t c = 0; c < ch.size(); ++c) {
    if (ch[c].signal == gpu::kXidCount) {
      EXPECT_TRUE(std::isnan(b.values[c]));
    }
  }
  const auto notes = sampler.notes();
  for (const char* want : {"gpu0 Xid events: nvmlDeviceRegisterEvents: Insufficient Permissions",
                           "gpu1 Xid events: nvmlDeviceRegisterEvents: Insufficient Permissions",
                           "no Xid errors: /nonexistent/kmsg: No such file or directory"}) {
    EXPECT_NE(std::find(notes.begin(), notes.end(), want), notes.end()) << want;
  }
}

}  // namespace
