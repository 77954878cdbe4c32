#pragma once
// The checkpoint phase's measurements as rank 0 stores them (schema.hpp /checkpoint): one writer
// for the phase and for tests that build a run file by hand.
#include <cstdint>
#include <string>
#include <vector>

#include "record/writer.hpp"

namespace shakedown {

struct CheckpointRecord {
  std::string layout, api, dir, fs_type, fs_mount, fs_options, kept;
  bool fs_node_local = false, fsync = true, direct_io = false;
  std::int64_t block_size = 0;
  std::uint64_t iters = 0, world = 0;
  std::vector<std::int64_t> bytes, reads_shard_of;  // [world]
  // [iters, world]
  std::vector<double> open_s, write_s, fsync_s, close_s, read_s;
  std::vector<double> write_start_s, write_end_s, read_start_s, read_end_s;
  std::vector<std::int64_t> verify_ok, bad_offset, cache_dropped;
  std::vector<double> write_gbps, read_gbps, restore_s;  // [iters]
  // checkpoint.async: [iters, world], written only then.
  bool async = false;
  std::vector<double> snapshot_s, step_ms_before, step_ms_during;
  std::vector<std::int64_t> steps_during;
};

void write_checkpoint(RunWriter& writer, const CheckpointRecord& record);

}  // namespace shakedown
