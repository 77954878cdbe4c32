#include "telemetry/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <type_traits>
#include <utility>

#include "core/error.hpp"

namespace shakedown::telemetry {
namespace {

double median_of(std::vector<double>& v) {
  const std::size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
  const double upper = v[n / 2];
  if (n % 2 == 1) return upper;
  return 0.5 *
         (upper + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2)));
}

// A little-endian byte stream in a std::string (MPI moves it as characters).
class Writer {
 public:
  template <class T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void put(const std::string& s) {
    put(static_cast<std::uint64_t>(s.size()));
    out_ += s;
  }
  void put(const std::vector<double>& v) {
    put(static_cast<std::uint64_t>(v.size()));
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  }
  void put(const std::vector<std::string>& v) {
    put(static_cast<std::uint64_t>(v.size()));
    for (const auto& s : v) put(s);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T value;
    std::memcpy(&value, in_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  std::string text() {
    const auto n = count(1);
    std::string s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  std::vector<double> numbers() {
    const auto n = count(sizeof(double));
    std::vector<double> v(n);
    if (n > 0) std::memcpy(v.data(), in_.data() + at_, n * sizeof(double));
    at_ += n * sizeof(double);
    return v;
  }
  std::vector<std::string> texts() {
    const auto n = count(sizeof(std::uint64_t));
    std::vector<std::string> v;
    for (std::size_t i = 0; i < n; ++i) v.push_back(text());
    return v;
  }

 private:
  std::size_t count(std::size_t each) {
    const auto n = get<std::uint64_t>();
    if (n > (in_.size() - at_) / each) need(in_.size() + 1);
    return static_cast<std::size_t>(n);
  }
  void need(std::size_t bytes) const {
    if (at_ + bytes > in_.size()) {
      throw InternalError("telemetry: a node's message ends early (" + std::to_string(in_.size()) +
                          " bytes)");
    }
  }
  const std::string& in_;
  std::size_t at_ = 0;
};

}  // namespace

bool is_error_counter(const std::string& signal) {
  return signal == gpu::kEccUncorrected || signal == gpu::kRemappedUncorrectable ||
         signal == gpu::kXidCount || is_link_error(signal);
}

NodeSummarizer::NodeSummarizer(std::vector<Channel> channels, double window_us, bool keep_all,
                               std::size_t max_rows)
    : channels_(std::move(channels)),
      window_us_(window_us),
      max_rows_(std::max<std::size_t>(1, max_rows)),
      keep_all_(keep_all),
      base_(channels_.size(), kNaN),
      last_(channels_.size(), 0.0) {}

NodePhase NodeSummarizer::summarize(const std::string& name, double start_us, double end_us,
                                    const Batch& batch) {
  const std::size_t nc = channels_.size();
  const std::size_t nt = batch.time_us.size();
  NodePhase out;
  out.phase = name;
  out.start_us = start_us;
  out.end_us = end_us;
  out.samples = static_cast<int>(nt);
  // Counters as their increase since the first reading.
  std::vector<double> values = batch.values;
  for (std::size_t c = 0; c < nc; ++c) {
    if (channels_[c].kind != Kind::kCounter) continue;
    for (std::size_t t = 0; t < nt; ++t) {
      double& v = values[t * nc + c];
      if (!std::isfinite(v)) continue;
      // The Xid count starts at the run (the sampler's own count): an Xid in the first sample is
      // one of the run's, not a value from before it.
      if (!std::isfinite(base_[c])) base_[c] = channels_[c].signal == gpu::kXidCount ? 0.0 : v;
      v -= base_[c];
    }
  }
  out.stats.assign(nc * 3, kNaN);
  std::vector<std::string> events;
  std::vector<double> column;
  for (std::size_t c = 0; c < nc; ++c) {
    column.clear();
    unsigned long long bits = 0;
    for (std::size_t t = 0; t < nt; ++t) {
      const double v = values[t * nc + c];
      if (!std::isfinite(v)) continue;
      column.push_back(v);
      if (channels_[c].kind == Kind::kBits) bits |= bits_of(v);
    }
    if (column.empty()) continue;
    const auto [lo, hi] = std::minmax_element(column.begin(), column.end());
    out.stats[c * 3] = *lo;
    out.stats[c * 3 + 2] = *hi;
    const double high = *hi;
    out.stats[c * 3 + 1] = median_of(column);
    const Channel& ch = channels_[c];
    if (ch.signal == gpu::kClockReasons && (bits & kThrottleBits) != 0) {
      events.push_back(ch.device + " throttled (" + throttle_reasons_text(bits) + ")");
    } else if ((ch.signal == gpu::kRemapPending || ch.signal == gpu::kRemapFailed) && bits != 0) {
      events.push_back(ch.device + " " + ch.signal);
    } else if (ch.kind == Kind::kCounter && is_error_counter(ch.signal) && high > last_[c]) {
      events.push_back(ch.device + " " + ch.signal + " +" +
                       std::to_string(static_cast<long long>(high - last_[c])));
      last_[c] = high;
    }
  }
  for (const auto& e : events) out.events += (out.events.empty() ? "" : "; ") + e;

  // Decimated: one row per window, counted from the phase's first sample.
  // A phase longer than max_rows windows gets wider ones: the file's share stays bounded
  // however long the run (bench/RESULTS.md, "Telemetry at scale").
  double window = window_us_;
  if (nt > 1) {
    const double span = batch.time_us.back() - batch.time_us.front();
    window = std::max(window, span / static_cast<double>(max_rows_) * (1 + 1e-9));
  }
  std::map<long long, std::vector<std::size_t>> windows;
  for (std::size_t t = 0; t < nt; ++t) {
    windows[static_cast<long long>(std::floor((batch.time_us[t] - batch.time_us.front()) / window))]
        .push_back(t);
  }
  for (const auto& [w, rows] : windows) {
    out.decimated_time_us.push_back(batch.time_us[rows.front()]);
    for (std::size_t c = 0; c < nc; ++c) {
      double sum = 0, last = kNaN;
      unsigned long long bits = 0;
      int n = 0;
      for (std::size_t t : rows) {
        const double v = values[t * nc + c];
        if (!std::isfinite(v)) continue;
        sum += v;
        last = v;
        bits |= bits_of(v);
        ++n;
      }
      double acc = kNaN;
      if (n > 0) {
        switch (channels_[c].kind) {
          case Kind::kGauge:
            acc = sum / n;
            break;
          case Kind::kCounter:
            acc = last;
            break;
          case Kind::kBits:
            acc = static_cast<double>(bits);
            break;
        }
      }
      out.decimated.push_back(acc);
    }
  }
  if (keep_all_ || !out.events.empty()) {
    out.full_time_us = batch.time_us;
    out.full = std::move(values);
  }
  return out;
}

std::string pack(const NodeMessage& m) {
  Writer w;
  w.put(static_cast<std::int64_t>(m.node));
  w.put(m.host);
  w.put(static_cast<std::uint8_t>(m.with_header ? 1 : 0));
  if (m.with_header) {
    w.put(static_cast<std::uint64_t>(m.channels.size()));
    for (const Channel& c : m.channels) {
      w.put(c.device);
      w.put(c.signal);
      w.put(c.unit);
      w.put(std::string(kind_name(c.kind)));
    }
    w.put(m.base);
    w.put(m.bus_ids);
  }
  w.put(m.notes);
  w.put(m.sample_cost_us);
  w.put(m.sampler_cpus);
  const NodePhase& p = m.phase;
  w.put(p.phase);
  w.put(p.start_us);
  w.put(p.end_us);
  w.put(static_cast<std::int64_t>(p.samples));
  w.put(p.stats);
  w.put(p.decimated_time_us);
  w.put(p.decimated);
  w.put(p.full_time_us);
  w.put(p.full);
  w.put(p.events);
  return w.take();
}

NodeMessage unpack(const std::string& bytes) {
  Reader r(bytes);
  NodeMessage m;
  m.node = static_cast<int>(r.get<std::int64_t>());
  m.host = r.text();
  m.with_header = r.get<std::uint8_t>() != 0;
  if (m.with_header) {
    const auto n = r.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < n; ++i) {
      Channel c;
      c.device = r.text();
      c.signal = r.text();
      c.unit = r.text();
      c.kind = parse_kind(r.text());
      m.channels.push_back(std::move(c));
    }
    m.base = r.numbers();
    m.bus_ids = r.texts();
  }
  m.notes = r.texts();
  m.sample_cost_us = r.get<double>();
  m.sampler_cpus = r.text();
  NodePhase& p = m.phase;
  p.phase = r.text();
  p.start_us = r.get<double>();
  p.end_us = r.get<double>();
  p.samples = static_cast<int>(r.get<std::int64_t>());
  p.stats = r.numbers();
  p.decimated_time_us = r.numbers();
  p.decimated = r.numbers();
  p.full_time_us = r.numbers();
  p.full = r.numbers();
  p.events = r.text();
  return m;
}

}  // namespace shakedown::telemetry
