#pragma once
// The link scan's findings and summary block, from the run file alone (/linkscan):
//  - linkscan.coverage: how many nodes, rails and pairs were tested, with what, and the retests;
//  - linkscan.nodes: a node convicted (slow with at least two good partners, in the scan and
//    again in its retests) fails, named with its host for the drain list; a suspect the retests
//    could not settle is a warning saying what was missing;
//  - linkscan.links: a link convicted (slow again while both its nodes pass with good partners)
//    fails, naming both nodes (no one host to drain);
//  - linkscan.transport: a pair carried by another transport or device than the rail's other
//    pairs (tcp where the others use rc, a fallback) fails, naming the pair.
// The localisation itself is fabric/localise.hpp, recomputed here from the recorded numbers.
#include <string>
#include <vector>

#include "analysis/run_facts.hpp"
#include "fabric/localise.hpp"
#include "record/findings.hpp"
#include "record/reader.hpp"

namespace shakedown {

struct LinkscanPair {
  fabric::NodePair pair;  // scan positions
  int pass = 1, round = 0;
  std::vector<double> bw_GBps;  // per timed window
  double bw_median = 0, lat_us = 0, lat_p99_us = 0;
  std::string transport;
};

struct LinkscanRail {
  int rail = 0;
  std::string net_devices, skipped;
  std::vector<int> nodes, ranks;  // by scan position
  int budget = 0;
  int passes = 3;  // recorded: 1 scan, 2 retests, 3 repeats (files before the attribute: all)
  std::vector<LinkscanPair> pairs;  // the scan's (pass 1), the retests (2), the repeats (3)
  std::size_t scanned = 0;          // pairs of the first pass
  fabric::Reference reference;
  fabric::Suspects suspects;
  fabric::RetestPlan plan;
  std::vector<std::size_t> repeated;  // the plan's retests that failed and ran again
  fabric::Localisation localisation;
  std::vector<unsigned> reasons;  // per first-pass pair
};

struct LinkscanFindings {
  bool ran = false;
  std::string transport, schedule, rails_setting;
  double bytes = 0, lat_bytes = 0, bw_fraction = 0, lat_factor = 0;  // as applied
  // "linkscan.bw_fraction 0.93 and linkscan.lat_factor 2.1 widened on shared cores by ..." when
  // the applied thresholds are wider than the config's; else "".
  std::string widened;
  int window = 0, reps = 0, lat_iters = 0;
  bool bidirectional = false;   // both ends sent at once: figures count both directions
  std::string memory = "host";  // where the bandwidth messages lived: host or cuda
  std::string memory_note;      // why auto chose host
  bool concurrent = true;       // a round's pairs at once (false: one pair at a time)
  std::vector<LinkscanRail> rails;
  std::size_t pairs_tested = 0, nodes_tested = 0;  // first pass, over every rail
  std::vector<Finding> findings;
};

LinkscanFindings linkscan_findings(const RunFile& file, const RunFacts& facts);
// "linkscan (ucx, all_pairs; 1 MiB x 32 in flight, 3 windows per pair)"
std::string linkscan_title(const LinkscanFindings& findings);
// A rail's node x node matrix of first-pass medians, GB/s, row-major by scan position
// (symmetric: a pair is tested once; NaN on the diagonal and for pairs not tested).
std::vector<double> linkscan_matrix(const LinkscanRail& rail);
// One line per suspect node and link with its outcome and evidence ("node 3 (host b07):
// convicted; slow with ...").
std::vector<std::string> linkscan_outcomes(const LinkscanRail& rail, const RunFacts& facts);
// The summary block ("" without /linkscan): per rail the pair bandwidth matrix (up to 16 nodes),
// the convicted and unresolved suspects with their evidence; `detail` adds every pair.
std::string format_linkscan(const LinkscanFindings& findings, const RunFacts& facts, bool detail);

}  // namespace shakedown
