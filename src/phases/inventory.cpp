// The inventory phase: one rank per node describes its node (CPU, memory, OS, GPUs, NICs,
// library versions); rank 0 records one row per node.
#include "phases/phase.hpp"
#include "topology/discovery.hpp"

namespace shakedown {

void run_inventory(PhaseEnv& env) {
  const Context& ctx = env.ctx;
  // Only local rank 0 of each node looks; the others send an empty record that is dropped.
  NodeInventory mine;
  mine.node_index = -1;
  if (ctx.local_rank() == 0) mine = discover_node(ctx.node_index());
  std::vector<NodeInventory> rows = env.recorder.gather(mine);
  std::erase_if(rows, [](const NodeInventory& n) { return n.node_index < 0; });
  env.recorder.write([&](RunWriter& w) { w.write_inventory(rows); });
}

}  // namespace shakedown
