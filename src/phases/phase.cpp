#include "phases/phase.hpp"

namespace shakedown {

const std::vector<PhaseEntry>& phase_table() {
  static const std::vector<PhaseEntry> kTable = {
      {"inventory", run_inventory},
      {"collectives", run_collectives},
      {"gemm", run_gemm},
  };
  return kTable;
}

const PhaseEntry* find_phase(const std::string& name) {
  for (const auto& p : phase_table()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace shakedown
