// RunFile on mutated copies of real run files (seeds: files the real RunWriter wrote): what
// `shakedown summary` does - open, read every part, compute the verdict, format it as text, JSON,
// JUnit and Prometheus - and what `report` and `compare` add (the HTML page; the file against
// itself in every compare format) must end in the output or a UsageError/RuntimeFault naming the
// file, never a crash in shakedown.
//
// HDF5 1.10 itself crashes on some damaged files (a corrupt string heap: it copies past its
// buffers) and hangs on others. That is not ours to fix; `shakedown summary` reads in a child
// process for it. Here each input is first read in a child whose crash handler looks at the stack:
// when the innermost frame that is HDF5's or shakedown's is HDF5's, the input is one HDF5 cannot
// read and is skipped; otherwise it is read again in this process, where the sanitizers see our
// code and libFuzzer its coverage.
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "analysis/reporters/formats.hpp"
#include "analysis/reporters/summary_text.hpp"
#include "analysis/verdict.hpp"
#include "fuzz_common.hpp"
#include "record/reader.hpp"

namespace {

constexpr int kHdf5Crashed = 86;

void read_like_summary(const std::filesystem::path& path) {
  using namespace shakedown;
  fuzz::expect_clean([&] {
    const RunFile file = RunFile::open(path);
    // As `summary`, `summary --detail --recompute` and `summary --format F` read it.
    const RunAnalysis stored = analyze_stored(file);
    (void)format_summary(file, stored, /*detail=*/false);
    (void)format_summary(file, analyze(file), /*detail=*/true);
    for (ReportFormat f : {ReportFormat::kJson, ReportFormat::kJunit, ReportFormat::kPrometheus}) {
      (void)format_report(f, file, stored, /*detail=*/false);
    }
    // As `report`, `compare FILE FILE --format F` and `report --baseline FILE` read it (a file
    // without measurements is a UsageError from compare_runs).
    (void)format_html(file, stored, nullptr);
    const Comparison c = compare_runs(file, file, CompareOptions{});
    (void)format_html(file, stored, &c);
    for (ReportFormat f : {ReportFormat::kText, ReportFormat::kJson, ReportFormat::kJunit,
                           ReportFormat::kPrometheus}) {
      (void)format_compare(f, c, /*detail=*/true);
    }
  });
}

// In the child: which library the crash (or, on SIGALRM, the hang) is in, judged from the innermost
// frame that belongs to HDF5 or to shakedown (libc and the sanitizer's interceptors in between are
// skipped).
extern "C" void classify_crash(int /*signal*/, siginfo_t* /*info*/, void* /*context*/) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  for (int i = 0; i < n; ++i) {
    Dl_info info{};
    if (dladdr(frames[i], &info) == 0) continue;
    if (info.dli_fname != nullptr && std::strstr(info.dli_fname, "libhdf5") != nullptr) {
      _exit(kHdf5Crashed);
    }
    if (info.dli_sname != nullptr && (std::strstr(info.dli_sname, "9shakedown") != nullptr ||
                                      std::strstr(info.dli_sname, "LLVMFuzzer") != nullptr)) {
      _exit(1);
    }
  }
  _exit(1);
}

bool hdf5_crashes_on(const std::filesystem::path& path) {
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the fuzzer (a hang in HDF5 would)
    struct sigaction action {};
    action.sa_sigaction = classify_crash;
    action.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGALRM}) sigaction(s, &action, nullptr);
    // HDF5 also loops forever on some damaged files (a corrupt global heap); after 5 s the same
    // stack test says whose loop it is.
    alarm(5);
    std::freopen("/dev/null", "w", stderr);  // the report, if any, comes from the parent's run
    read_like_summary(path);
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == kHdf5Crashed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("shakedown-fuzz-runfile-" + std::to_string(getpid()) + ".h5");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  if (hdf5_crashes_on(path)) return -1;  // not an input libFuzzer should keep or build on
  read_like_summary(path);
  return 0;
}
