#include "analysis/collectives_data.hpp"

#include <algorithm>
#include <cmath>

#include "core/stats.hpp"
#include "record/schema.hpp"

namespace shakedown {

std::string attr_or(const RunFile& f, const std::string& path, const char* name) {
  return f.has_attr(path, name) ? f.attr_string(path, name) : "";
}

namespace {

// [S, columns] -> [S, world], `fill` where a rank has no column.
std::vector<std::int64_t> widen(const std::vector<std::int64_t>& by_column,
                                const std::vector<std::size_t>& columns, std::size_t world,
                                std::int64_t fill) {
  const std::size_t n = columns.size();
  if (n == 0) return {};
  const std::size_t rows = by_column.size() / n;
  std::vector<std::int64_t> out(rows * world, fill);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t c = 0; c < n; ++c) {
      if (columns[c] < world) out[i * world + columns[c]] = by_column[i * n + c];
    }
  }
  return out;
}

SweepData read_sweep(const RunFile& f, const std::string& path, const std::string& scope,
                     const std::string& op, const std::string& leaf, const std::string& mode,
                     std::size_t file_world) {
  namespace s = schema;
  SweepData d;
  d.path = path;
  d.scope = scope;
  d.op = op;
  d.leaf = leaf;
  d.mode = mode;
  d.unsupported = attr_or(f, path, s::coll::kAttrUnsupported);
  if (f.has_attr(path, s::coll::kAttrNranks)) {
    d.nranks = static_cast<int>(f.attr_int64(path, s::coll::kAttrNranks));
  }
  if (f.has_attr(path, s::coll::kAttrBusbwFactor)) {
    d.busbw_factor = f.attr_double(path, s::coll::kAttrBusbwFactor);
  }
  if (f.has_attr(path, s::coll::kAttrLinkGBps)) {
    d.link_GBps = f.attr_double(path, s::coll::kAttrLinkGBps);
  }
  if (!d.unsupported.empty() || !f.has(path, s::coll::kSizes)) return d;
  d.sizes = f.read(path, s::coll::kSizes);
  d.skipped = f.read(path, s::coll::kSkipped);
  if (f.has(path, s::coll::kCount)) d.count = f.read(path, s::coll::kCount);
  d.time_med_us = f.read(path, s::coll::kTimeMedUs);
  d.time_p95_us = f.read(path, s::coll::kTimeP95Us);
  d.algbw = f.read(path, s::coll::kAlgbwGBps);
  d.busbw = f.read(path, s::coll::kBusbwGBps);
  std::vector<std::uint64_t> dims;
  std::vector<std::int64_t> wrong = f.read(path, s::coll::kWrong, &dims);
  const std::size_t width = dims.size() == 2 ? dims[1] : 1;
  std::vector<std::int64_t> first;
  if (f.has(path, s::coll::kFirstWrong)) first = f.read(path, s::coll::kFirstWrong);
  if (f.has(path, s::coll::kRanks)) {  // schema 3: one column per rank that took part
    for (std::int64_t r : f.read(path, s::coll::kRanks)) {
      d.columns.push_back(r >= 0 ? static_cast<std::size_t>(r) : file_world);
    }
    if (d.columns.size() != width) {
      throw UsageError("'" + path + "': " + std::to_string(d.columns.size()) + " ranks for " +
                       std::to_string(width) + " columns");
    }
    d.world = std::max<std::size_t>(file_world, 1);
    d.wrong = widen(wrong, d.columns, d.world, 0);
    if (!first.empty()) d.first_wrong = widen(first, d.columns, d.world, -1);
  } else {  // schemas 1-2: a column for every rank
    d.world = width;
    for (std::size_t r = 0; r < width; ++r) d.columns.push_back(r);
    d.wrong = std::move(wrong);
    d.first_wrong = std::move(first);
  }
  // A run that died between appends may leave the per-size datasets one row apart: keep the
  // sizes every dataset has.
  std::size_t n = d.sizes.size();
  for (std::size_t m :
       {d.skipped.size(), d.time_med_us.size(), d.time_p95_us.size(), d.algbw.size(),
        d.busbw.size(), d.wrong.size() / std::max<std::size_t>(1, d.world)}) {
    n = std::min(n, m);
  }
  d.sizes.resize(n);
  if (!d.count.empty()) d.count.resize(n, 0);
  d.skipped.resize(n);
  d.time_med_us.resize(n);
  d.time_p95_us.resize(n);
  d.algbw.resize(n);
  d.busbw.resize(n);
  d.wrong.resize(n * d.world);
  return d;
}

}  // namespace

std::size_t SweepData::measured() const {
  std::size_t n = 0;
  for (auto s : skipped) n += s == schema::kSkipMeasured ? 1 : 0;
  return n;
}

long SweepData::largest() const {
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (skipped[i] == schema::kSkipMeasured) return static_cast<long>(i);
  }
  return -1;
}

long SweepData::smallest() const {
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (skipped[i] == schema::kSkipMeasured && sizes[i] > 0) return static_cast<long>(i);
  }
  return -1;
}

CollectivesData read_collectives(const RunFile& f) {
  CollectivesData out;
  const std::string root = schema::kCollectivesGroup;
  if (!f.has(root)) return out;
  out.ran = true;
  const auto world = static_cast<std::size_t>(std::max<std::int64_t>(0, f.meta().world_size));
  out.backend = attr_or(f, root, schema::coll::kAttrBackend);
  if (f.has_attr(root, schema::coll::kAttrWrongTotal)) {
    out.wrong_total = static_cast<std::uint64_t>(f.attr_int64(root, schema::coll::kAttrWrongTotal));
  }
  // A run that died in the middle of a write (a full disk, a kill) can leave one object half
  // written: it is named as unreadable and everything else is read.
  auto guarded = [&](const std::string& path, const auto& read) {
    try {
      read();
    } catch (const Error& e) {
      out.unreadable.push_back(path + ": " + e.what());
    }
  };
  for (const auto& scope : f.children(root)) {
    const std::string sp = schema::join(root, scope);
    guarded(sp, [&] {
      if (const std::string skip = attr_or(f, sp, schema::coll::kAttrScopeSkipped); !skip.empty()) {
        out.skipped_scopes.emplace_back(scope, skip);
        return;
      }
      for (const auto& op : f.children(sp)) {
        for (const auto& leaf : f.children(schema::join(sp, op))) {
          const std::string lp = schema::join(schema::join(sp, op), leaf);
          for (const auto& mode : f.children(lp)) {
            const std::string path = schema::join(lp, mode);
            guarded(path, [&] {
              out.sweeps.push_back(read_sweep(f, path, scope, op, leaf, mode, world));
            });
          }
        }
      }
    });
  }
  return out;
}

namespace {

// Rows [first, first + count) of a [S, iters, columns] dataset, widened to [rows, iters, world]
// (NaN for ranks without a column); *iters = 0 when the dataset is missing or of another shape.
std::vector<double> read_widened(const RunFile& f, const SweepData& sweep,
                                 const schema::Dataset<float>& d, std::uint64_t first,
                                 std::uint64_t count, std::size_t* iters, std::size_t* rows) {
  *iters = 0;
  *rows = 0;
  if (!f.has(sweep.path, d)) return {};
  std::vector<std::uint64_t> dims;
  const std::vector<double> in = f.read_doubles_rows(d.path(sweep.path), first, count, &dims);
  const std::size_t n = sweep.columns.size();
  if (dims.size() != 3 || dims[2] != n || n == 0) return {};
  *rows = dims[0];
  *iters = dims[1];
  const std::size_t w = sweep.world, per = *iters;
  std::vector<double> out(*rows * per * w, std::nan(""));
  for (std::size_t z = 0; z < *rows; ++z) {
    for (std::size_t i = 0; i < per; ++i) {
      const double* src = &in[(z * per + i) * n];
      double* dst = &out[(z * per + i) * w];
      for (std::size_t c = 0; c < n; ++c) {
        if (sweep.columns[c] < w) dst[sweep.columns[c]] = src[c];
      }
    }
  }
  return out;
}

}  // namespace

std::vector<double> read_size_samples(const RunFile& f, const SweepData& sweep,
                                      const schema::Dataset<float>& d, std::size_t size,
                                      std::size_t* iters) {
  std::size_t rows = 0;
  std::vector<double> out = read_widened(f, sweep, d, size, 1, iters, &rows);
  if (rows != 1) {
    *iters = 0;
    return {};
  }
  return out;
}

std::vector<double> read_sweep_samples(const RunFile& f, const SweepData& sweep,
                                       const schema::Dataset<float>& d, std::size_t* iters,
                                       std::size_t* sizes) {
  return read_widened(f, sweep, d, 0, UINT64_MAX, iters, sizes);
}

std::vector<double> read_size_times(const RunFile& f, const SweepData& sweep, std::size_t size,
                                    std::size_t* iters) {
  return read_size_samples(f, sweep, schema::coll::kTimeUs, size, iters);
}

std::map<int, double> node_busbw(const RunFile& f, const SweepData& s, std::size_t size,
                                 const std::vector<RankInfo>& ranks) {
  std::map<int, double> out;
  if (size >= s.sizes.size() || s.skipped[size] != schema::kSkipMeasured) return out;
  std::size_t iters = 0;
  const std::vector<double> t = read_size_times(f, s, size, &iters);
  if (iters == 0) return out;
  std::map<int, std::vector<std::size_t>> members;
  for (const auto& r : ranks) {
    if (r.rank >= 0 && static_cast<std::size_t>(r.rank) < s.world) {
      members[r.node_index].push_back(static_cast<std::size_t>(r.rank));
    }
  }
  const double med_all = s.time_med_us[size];
  const double bw_all = s.busbw[size];
  if (!(med_all > 0) || !std::isfinite(bw_all)) return out;
  for (const auto& [node, list] : members) {
    if (list.size() < 2) continue;
    // busbw scales inversely with the time of the median iteration.
    const double med = median(iteration_durations(t, s.world, list));
    if (med > 0) out[node] = bw_all * med_all / med;
  }
  return out;
}

}  // namespace shakedown
