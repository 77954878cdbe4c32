#pragma once
// --inject: planted faults for the validator's self-test. Each later phase that supports a fault
// kind looks up its plan here; the spec syntax is KIND:key=value,key=value.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shakedown {

struct FaultSpec {
  // stall: sleep `seconds` before the phase (or its step N); corrupt: change one element of the
  // rank's collective results before they are checked; fail: throw at the phase start (checks
  // that one rank's failure ends the job, named, with the file marked aborted); sdc: flip one
  // bit of the rank's GEMM output after the timed runs (all shapes, or only its step N), which
  // the cross-rank hash comparison must catch; slow: make the rank `factor` times slower (gemm:
  // it sleeps (factor - 1) x the measured GEMM time inside the timed region, so it steals no
  // CPU from ranks sharing its cores; collectives: it sleeps (factor - 1) x its previous
  // iteration before it arrives at the next one), which the straggler checks must name;
  // ioerror: the rank's first checkpoint write call fails with EIO (in every checkpoint, or its
  // N-th), which must end the run naming the path, errno and rank, without a hang; drift: node
  // `node`'s inventory records `value` for `field` (any fixed field or fact the audit compares),
  // which the audit's drift check must name.
  // linkscan: slow:node=N makes every transfer of node N `factor` times slower, slow:link=A-B
  // only those between nodes A and B (the scan's own code sleeps, on both ends).
  // An injected fault for a node (drift, a linkscan slow node or link) has rank -1.
  std::string kind;
  int rank = 0;                  // the rank that misbehaves
  std::string phase;             // the phase in which it does
  double seconds = 24 * 3600.0;  // stall length; default: longer than any timeout
  int step = 0;        // stall/sdc: the whole phase (0) or only the phase's N-th measured step
  double factor = 2;   // slow: how many times slower
  int node = -1;       // drift: the node made to differ; linkscan slow: the node, or a link's end
  int peer_node = -1;  // linkscan slow link: its other end (node < peer_node)
  std::string field;   // drift: which inventory field or fact
  std::string value;   // drift: what it records instead ("" = "<its value>-drifted")
  std::string text;    // the spec as written, for messages and the record
};

// The --inject syntax with every kind and where it applies (errors and --help say it).
std::string fault_syntax();

// Parses one --inject value. Throws UsageError naming the spec and what is accepted.
FaultSpec parse_fault(std::string_view spec);

// Checks the faults against the run: rank < world size, node < node count, phase among those
// that run.
void validate_faults(const std::vector<FaultSpec>& faults, int world_size, int node_count,
                     const std::vector<std::string>& phases_run);

class FaultPlan {
 public:
  FaultPlan() = default;
  explicit FaultPlan(std::vector<FaultSpec> faults) : faults_(std::move(faults)) {}
  // The fault of `kind` planted on `rank` in `phase`, if any.
  std::optional<FaultSpec> find(std::string_view kind, int rank, std::string_view phase) const;
  // The faults of `kind` planted on node `node` (drift: one per field).
  std::vector<FaultSpec> for_node(std::string_view kind, int node) const;
  const std::vector<FaultSpec>& all() const { return faults_; }

 private:
  std::vector<FaultSpec> faults_;
};

// Fault kinds this build understands.
const std::vector<std::string>& fault_kinds();

}  // namespace shakedown
