#pragma once
// What a checkpoint shard holds and how it is checked: deterministic bytes per (writer rank,
// step) - so any rank can say what a byte should have been without keeping a copy - checksummed
// per block with xxh3, and the checkpoint's metadata.json, whose presence is its commit.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace shakedown::storage {

// The content seed of the shard `rank` writes in checkpoint step `step`.
std::uint64_t shard_seed(int rank, int step);
// Fills `out` with the shard's bytes from byte `offset` of the shard on (any offset: a piece
// regenerated alone equals the same bytes of the whole).
void fill_shard(std::span<std::byte> out, std::uint64_t seed, std::uint64_t offset);
// xxh3 of each `block` bytes of `data` (the last block may be shorter).
std::vector<std::uint64_t> block_checksums(std::span<const std::byte> data, std::uint64_t block);
// Index of the first byte where `a` and `b` differ; a.size() when they do not.
std::uint64_t first_difference(std::span<const std::byte> a, std::span<const std::byte> b);

struct ShardMeta {
  int rank = 0;      // the writer
  std::string host;  // where it ran
  std::string file;  // relative to the step's folder
  std::uint64_t offset = 0, bytes = 0;
  std::vector<std::uint64_t> checksums;  // per block
  friend bool operator==(const ShardMeta&, const ShardMeta&) = default;
};

struct CheckpointMeta {
  std::string run;  // the run file's name
  int step = 0;
  std::string layout, api;
  std::uint64_t block_size = 0;
  std::vector<ShardMeta> shards;  // index = writer rank
  friend bool operator==(const CheckpointMeta&, const CheckpointMeta&) = default;
};

std::string to_json(const CheckpointMeta& meta);
// Throws RuntimeFault naming `path` when the text is not a checkpoint's metadata.
CheckpointMeta parse_meta(const std::string& text, const std::filesystem::path& path);

}  // namespace shakedown::storage
