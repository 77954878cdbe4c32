#pragma once
// Each phase's checks: typed Findings computed from the run file alone (docs/architecture.md
// "Timing and the verdict"). Every check a phase was asked for says what it covered: a phase that
// measured nothing fails its coverage check, whatever else passed.
#include <functional>
#include <string>
#include <vector>

#include "analysis/collectives_data.hpp"
#include "analysis/run_facts.hpp"
#include "record/findings.hpp"
#include "record/reader.hpp"

namespace shakedown {

// A finding about the whole run or a phase (subject_kind run / phase).
Finding run_finding(std::string check, CheckStatus status, std::string message);

// A finding about `subject` (of `subject_kind`) with what was measured, what it was held to and
// their unit.
Finding measured_finding(std::string check, CheckStatus status, std::string subject_kind,
                         std::string subject, double value, double expected, std::string unit);
// A finding about one rank: its node and host (for the drain list) from the topology.
Finding rank_finding(const RunFacts& facts, std::string check, CheckStatus status, int rank);

// A result at `ratio` of the platform's figure, below the pass mark `fraction`: FAIL; but on
// shared cores (facts.oversubscribed), where one descheduled rank halves a timing, only a WARN
// down to half the pass mark.
CheckStatus below_expected(const RunFacts& facts, double ratio, double fraction);
// What below_expected() adds to a message on shared cores ("" elsewhere).
std::string shared_cores_note(const RunFacts& facts, double ratio, double fraction);

// A compute straggler `excess` slower than the others (0.5: half again as slow): FAIL, worth
// draining, on cores of its own; a WARN when less slow, or on shared cores where the OS
// scheduler, not the hardware, may be the cause.
CheckStatus straggler_status(const RunFacts& facts, double excess);
// The finding of `check` for members find_stragglers found slower together on shared cores
// (Stragglers::together, not empty; each named by `label`, "rank N" without one; `how` says in
// what): "none named: rank 1, rank 2 slower than the others as a group, by up to 95% ...". A
// PASS that says what it saw instead of passing in silence: the scheduler slows such a group as
// often as a fault does (2 of 4 healthy runs of 4 ranks on 2 cores had one), and
// placement.oversubscription already warns that the run's timings are noisy.
Finding slower_together_finding(std::string check, const std::vector<StragglerEvidence>& together,
                                const std::function<std::string(int)>& label = nullptr,
                                const std::string& how = "slower than the others");
// Where a straggler check named someone (findings[from..] of `check` that do not pass), the
// group slower together goes into their evidence instead ("; also ..."): one line per check.
// Returns whether there was such a finding.
bool add_together_to_named(std::vector<Finding>& findings, std::size_t from,
                           const std::string& check, const Finding& together);
// The straggler check's word on a group slower together: into its named findings
// (add_together_to_named), or, when it named nobody, as its own PASS.
void add_slower_together(std::vector<Finding>& findings, std::size_t from, Finding together);

// <phase>.coverage for a phase the config asked for that left nothing in the file: FAIL, or SKIP
// when the run ended before it.
Finding not_recorded(const RunFacts& facts, const std::string& phase);

// placement.*: the checks recorded with the topology, as findings.
std::vector<Finding> placement_checks(const RunFacts& facts);
// run.coverage: what the ranks and nodes of this run could test at all (1 rank: no link; 1 node:
// no network; scopes that could not run).
std::vector<Finding> run_checks(const RunFacts& facts, const CollectivesData& collectives);
// inventory.coverage.
std::vector<Finding> inventory_checks(const RunFile& file, const RunFacts& facts);
// collectives.coverage, collectives.wrong_data, collectives.balance (one rail or one node's
// intra-node communicator well below its peers in the same run).
std::vector<Finding> collectives_checks(const RunFile& file, const RunFacts& facts,
                                        const CollectivesData& data);

// platform.match (the nodes' GPUs are the platform's), collectives.expected_busbw (busbw at the
// largest size against the platform's figure) and collectives.latency (median time at the
// smallest size against its ceiling). One SKIP saying why when no platform was chosen.
std::vector<Finding> platform_checks(const RunFacts& facts, const CollectivesData& data);

}  // namespace shakedown
