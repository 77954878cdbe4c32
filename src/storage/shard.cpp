#include "storage/shard.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace shakedown::storage {

namespace {

constexpr const char* kFormat = "shakedown-checkpoint 1";

// splitmix64: a cheap, well-mixed stream; one word per 8 bytes of the shard.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t shard_seed(int rank, int step) {
  return mix((static_cast<std::uint64_t>(static_cast<std::uint32_t>(rank)) << 32) ^
             static_cast<std::uint32_t>(step));
}

void fill_shard(std::span<std::byte> out, std::uint64_t seed, std::uint64_t offset) {
  std::uint64_t pos = offset;
  for (std::size_t i = 0; i < out.size();) {
    const std::uint64_t v = mix(seed ^ ((pos / 8) * 0xD6E8FEB86659FD93ull));
    const std::size_t within = static_cast<std::size_t>(pos % 8);
    const std::size_t take = std::min<std::size_t>(8 - within, out.size() - i);
    std::memcpy(out.data() + i, reinterpret_cast<const std::byte*>(&v) + within, take);
    i += take;
    pos += take;
  }
}

std::vector<std::uint64_t> block_checksums(std::span<const std::byte> data, std::uint64_t block) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t at = 0; at < data.size(); at += block) {
    const std::uint64_t n = std::min<std::uint64_t>(block, data.size() - at);
    out.push_back(XXH3_64bits(data.data() + at, n));
  }
  return out;
}

std::uint64_t first_difference(std::span<const std::byte> a, std::span<const std::byte> b) {
  const std::size_t n = std::min(a.size(), b.size());
  const auto it = std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin());
  return static_cast<std::uint64_t>(it.first - a.begin()) == n && a.size() == b.size()
             ? a.size()
             : static_cast<std::uint64_t>(it.first - a.begin());
}

std::string to_json(const CheckpointMeta& meta) {
  nlohmann::json j;
  j["format"] = kFormat;
  j["run"] = meta.run;
  j["step"] = meta.step;
  j["layout"] = meta.layout;
  j["api"] = meta.api;
  j["block_size"] = meta.block_size;
  j["shards"] = nlohmann::json::array();
  for (const ShardMeta& s : meta.shards) {
    nlohmann::json sj;
    sj["rank"] = s.rank;
    sj["host"] = s.host;
    sj["file"] = s.file;
    sj["offset"] = s.offset;
    sj["bytes"] = s.bytes;
    sj["xxh3"] = s.checksums;
    j["shards"].push_back(std::move(sj));
  }
  return j.dump(1) + "\n";
}

CheckpointMeta parse_meta(const std::string& text, const std::filesystem::path& path) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.at("format").get<std::string>() != kFormat) {
      throw RuntimeFault(path.string() + ": not a shakedown checkpoint (format \"" +
                         j.at("format").get<std::string>() + "\")");
    }
    CheckpointMeta m;
    m.run = j.at("run").get<std::string>();
    m.step = j.at("step").get<int>();
    m.layout = j.at("layout").get<std::string>();
    m.api = j.at("api").get<std::string>();
    m.block_size = j.at("block_size").get<std::uint64_t>();
    for (const auto& sj : j.at("shards")) {
      ShardMeta s;
      s.rank = sj.at("rank").get<int>();
      s.host = sj.at("host").get<std::string>();
      s.file = sj.at("file").get<std::string>();
      s.offset = sj.at("offset").get<std::uint64_t>();
      s.bytes = sj.at("bytes").get<std::uint64_t>();
      s.checksums = sj.at("xxh3").get<std::vector<std::uint64_t>>();
      if (s.file.empty() || s.file.find('/') != std::string::npos || s.file[0] == '.') {
        throw RuntimeFault(path.string() + ": shard file name \"" + s.file +
                           "\" is not a plain name in the step's folder");
      }
      m.shards.push_back(std::move(s));
    }
    if (m.block_size == 0) throw RuntimeFault(path.string() + ": block_size 0");
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw RuntimeFault(path.string() + ": damaged checkpoint metadata (" + e.what() + ")");
  }
}

}  // namespace shakedown::storage
