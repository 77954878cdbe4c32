#pragma once
// NVML, loaded at first use (dlopen of libnvidia-ml.so.1; no nvml.h ships here, so the few
// functions used are declared by hand). A missing library, a failed nvmlInit, a function this
// driver lacks or one that answers NOT_SUPPORTED is recorded as unavailable, never fatal:
// telemetry explains slow ranks, it must not be the reason a run fails.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dynamic_library.hpp"

namespace shakedown::telemetry {

class Nvml {
 public:
  // Loads `library` (the soname by default; tests name their scripted stand-in) and initialises
  // NVML. Never throws for a missing or broken NVML: loaded() is false and why() says.
  static Nvml open(const std::string& library = "libnvidia-ml.so.1");
  // No NVML, for the reason given (a host without the NVIDIA driver is not asked).
  static Nvml absent(std::string why);

  Nvml(Nvml&& other) noexcept;
  Nvml& operator=(Nvml&&) = delete;
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml();  // nvmlShutdown when initialised

  bool loaded() const noexcept { return initialised_; }
  const std::string& why() const noexcept { return why_; }
  const std::string& library() const noexcept { return library_.name(); }
  int count() const noexcept { return static_cast<int>(devices_.size()); }
  // "0000:1b:00.0" (NVML's bus id, lower case), "" when NVML cannot say.
  const std::string& bus_id(int index) const {
    return bus_ids_.at(static_cast<std::size_t>(index));
  }

  // One reading of every signal of gpu_signals() for GPU `index` into `out` (one value per
  // signal; NaN where NVML gives none). The first failure of each signal on each GPU is kept in
  // unavailable(), so the record says why a dataset holds NaN.
  void read(int index, std::span<double> out);
  // "gpu0 temperature: Not Supported", one line per signal and GPU that gave no value.
  const std::vector<std::string>& unavailable() const noexcept { return unavailable_; }

  // Xid errors through NVML's event set (nvmlEventTypeXidCriticalError): registers every GPU
  // once and says which it watches (watching_xids(g)); a GPU NVML refuses (an old driver,
  // NOT_SUPPORTED, NO_PERMISSION) is left to the kernel log, and xid_notes() says why. NVML's
  // events need no access to the kernel log and name the device themselves.
  void watch_xids();
  bool watching_xids(int index) const {
    return index >= 0 && static_cast<std::size_t>(index) < xid_watched_.size() &&
           xid_watched_[static_cast<std::size_t>(index)];
  }
  const std::vector<std::string>& xid_notes() const noexcept { return xid_notes_; }
  struct Xid {
    int gpu;   // NVML index
    int code;  // the Xid
  };
  // The Xids delivered since the last call (never blocks: a wait of 0 ms until NVML has none).
  // A wait that fails (a GPU lost) gives the event set up: no GPU is watched from then on.
  std::vector<Xid> poll_xids();

  struct Functions;  // the resolved NVML entry points (nvml.cpp)

 private:
  Nvml() = default;
  void note_unavailable(int index, const char* signal, int rc);
  std::string error_text(int rc) const;

  DynamicLibrary library_;
  std::vector<void*> devices_;  // nvmlDevice_t
  std::vector<std::string> bus_ids_;
  std::vector<std::vector<bool>> noted_;  // [gpu][signal]: unavailability recorded
  std::vector<std::string> unavailable_;
  void* event_set_ = nullptr;      // nvmlEventSet_t, freed with the library
  std::vector<bool> xid_watched_;  // [gpu]: registered for Xid events
  std::vector<std::string> xid_notes_;
  std::string why_;
  bool initialised_ = false;
  std::unique_ptr<Functions> fn_;  // null until the library is loaded
};

}  // namespace shakedown::telemetry
