// The inventory phase: one rank per node describes its node (CPU, memory, OS, GPUs, NICs,
// library versions); rank 0 records one row per node.
#include <cstdlib>

#include "phases/phase.hpp"
#include "topology/discovery.hpp"
#include "topology/node_facts.hpp"

namespace shakedown {

void run_inventory(PhaseEnv& env) {
  const Context& ctx = env.ctx;
  // Only local rank 0 of each node looks; the others send an empty record that is dropped.
  NodeInventory mine;
  mine.node_index = -1;
  if (ctx.local_rank() == 0) {
    mine = discover_node(ctx.node_index());
    // --inject drift: this node records another value for a field (the audit's self-test).
    for (const FaultSpec& f : env.faults.for_node("drift", ctx.node_index())) {
      std::string value = f.value;
      if (value.empty()) {
        for (const InventoryField& field : inventory_fields(mine)) {
          if (field.key == f.field) value = field.value;
        }
        for (const NodeFact& fact : mine.facts) {
          if (fact.key == f.field) value = fact.value;
        }
        // A number becomes another number (a count or size), text gets a suffix.
        char* end = nullptr;
        const double number = std::strtod(value.c_str(), &end);
        if (!value.empty() && end == value.c_str() + value.size()) {
          value = value.find('.') == std::string::npos ? std::to_string(static_cast<long>(number) + 1)
                                                       : std::to_string(number * 2);
        } else {
          value += "-drifted";
        }
      }
      override_inventory_field(mine, f.field, value);
    }
  }
  std::vector<NodeInventory> rows = env.recorder.gather(mine);
  std::erase_if(rows, [](const NodeInventory& n) { return n.node_index < 0; });
  env.recorder.write([&](RunWriter& w) { w.write_inventory(rows); });
}

}  // namespace shakedown
