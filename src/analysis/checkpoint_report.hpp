#pragma once
// The checkpoint phase's findings and summary block, from the run file alone (/checkpoint):
//  - checkpoint.coverage: what was written and restored, by whom, on which file system;
//  - checkpoint.verify: every restored shard against its committed checksums and content; a
//    wrong byte names the shard, its writer and reader (rank and host) and the offset
//    (corruption: exit 3);
//  - checkpoint.storage: a node-local file system under a checkpoint of several hosts (a restore
//    elsewhere cannot read it), a warning said only then (coverage names the file system);
//  - checkpoint.bandwidth: aggregate write and read GB/s (IOR's rule) against
//    checkpoint.expected_write_gbps / expected_read_gbps;
//  - checkpoint.stragglers: ranks whose write or read is consistently slower than the others'
//    (the noise-aware rule of analysis/stragglers.hpp): a slow node, link or storage target.
#include <string>
#include <vector>

#include "analysis/run_facts.hpp"
#include "record/findings.hpp"
#include "record/reader.hpp"

namespace shakedown {

struct CheckpointSummary {
  std::string layout, api, fs_type, dir, kept;
  std::size_t iters = 0, world = 0;
  double bytes_per_rank = 0, total_bytes = 0;  // the largest shard; all of them
  std::string shards;  // "4 x 8 MiB", or "8 shards of 12 MiB to 48 MiB" (checkpoint.from_train)
  double write_gbps = 0, read_gbps = 0;  // aggregate, median over iterations
  double restore_s = 0;                  // the whole checkpoint read back, median
  // Medians over every rank's iterations, seconds.
  double open_s = 0, write_s = 0, fsync_s = 0, close_s = 0, read_s = 0;
  // checkpoint.async: medians over every rank's checkpoints.
  bool async = false;
  double blocked_s = 0;           // training blocked: the snapshot to the host buffer
  double background_write_s = 0;  // the write the thread did meanwhile (open .. close)
  double step_before_ms = 0, step_during_ms = 0;  // the stand-in step, NaN: none during
  double steps_during = 0;
  int slowest_writer = -1, slowest_reader = -1;  // largest median write (open..close) / read
  double slowest_write_s = 0, slowest_read_s = 0;
};

struct CheckpointFindings {
  bool ran = false;  // the file has /checkpoint
  CheckpointSummary summary;
  std::vector<Finding> findings;
};

CheckpointFindings checkpoint_findings(const RunFile& file, const RunFacts& facts);
// "checkpoint (posix file_per_process on ext4; 4 x 64 MiB; 2 iterations)"
std::string checkpoint_title(const CheckpointFindings& findings);
// The summary block, "" when the run has no /checkpoint.
std::string format_checkpoint(const CheckpointFindings& findings, const RunFacts& facts,
                              bool explain);

}  // namespace shakedown
