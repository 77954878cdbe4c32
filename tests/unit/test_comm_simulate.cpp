// Every collective simulated end to end on the host: each rank's input from fill_input, the data
// movement written out as plain loops over rank buffers (reductions done in the dtype itself),
// verify_output on every rank. Then the faults verify must catch: one flipped element, one flipped
// bit, a chunk from the wrong rank or offset, stale output.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "comm/collectives.hpp"
#include "comm/dtype.hpp"
#include "comm/pattern.hpp"
#include "comm/pattern_math.hpp"
#include "comm_support.hpp"
#include "core/error.hpp"

namespace shakedown {
namespace {

using testing_support::kAllDTypes;
using testing_support::kAllKinds;
constexpr int kSimulatedRankCounts[] = {1, 2, 3, 4, 5, 8};
constexpr std::uint64_t kSizes[] = {16, 96, 1000, 4096, 65536 + 48};

using Bytes = std::vector<unsigned char>;

struct World {
  CollectiveKind kind;
  PatternSpec spec;
  CollectiveCounts counts;
  std::size_t elem = 0;
  std::vector<Bytes> in, out;

  int n() const { return spec.nranks; }
  std::string label() const {
    return std::string(collective(kind).name) + " " + std::string(dtype_name(spec.dtype)) + " " +
           std::string(reduce_op_name(spec.op)) + " n=" + std::to_string(spec.nranks) +
           " unit=" + std::to_string(counts.unit) + " root=" + std::to_string(spec.root);
  }
  void copy(Bytes& dst, std::uint64_t dst_index, const Bytes& src, std::uint64_t src_index,
            std::uint64_t count) const {
    std::memcpy(dst.data() + dst_index * elem, src.data() + src_index * elem, count * elem);
  }
  // out[dst][d] = reduce over ranks of in[r][s], accumulated in the dtype (each partial stored).
  void reduce_into(Bytes& dst, std::uint64_t d, std::uint64_t s) const {
    const DType t = spec.dtype;
    double acc = load_element(in[0].data(), t, s);
    for (int r = 1; r < n(); ++r) {
      const double v = load_element(in[static_cast<std::size_t>(r)].data(), t, s);
      store_element(dst.data(), t, d, spec.op == ReduceOp::kSum ? acc + v : std::max(acc, v));
      acc = load_element(dst.data(), t, d);
    }
    store_element(dst.data(), t, d, acc);
  }
};

World make_world(CollectiveKind kind, DType t, ReduceOp op, int n, std::uint64_t bytes,
                 int root = 0, std::uint64_t seed = 2024) {
  World w;
  w.kind = kind;
  w.spec.seed = seed;
  w.spec.dtype = t;
  w.spec.op = op;
  w.spec.nranks = n;
  w.spec.root = root;
  w.elem = dtype_size(t);
  w.counts = collective(kind).counts(bytes, w.elem, n);
  for (int r = 0; r < n; ++r) {
    w.in.emplace_back(w.counts.send * w.elem + 1);  // +1: never a zero-size buffer
    w.out.emplace_back(w.counts.recv * w.elem + 1, 0xA5);
    fill_input(w.in.back().data(), kind, w.counts, w.spec, r);
  }
  return w;
}

// What each collective does, by hand.
void run(World& w) {
  const std::uint64_t unit = w.counts.unit;
  const int n = w.n();
  for (int rank = 0; rank < n; ++rank) {
    Bytes& out = w.out[static_cast<std::size_t>(rank)];
    const std::uint64_t ur = static_cast<std::uint64_t>(rank);
    switch (w.kind) {
      case CollectiveKind::kAllReduce:
        for (std::uint64_t i = 0; i < w.counts.recv; ++i) w.reduce_into(out, i, i);
        break;
      case CollectiveKind::kReduceScatter:
        for (std::uint64_t i = 0; i < unit; ++i) w.reduce_into(out, i, ur * unit + i);
        break;
      case CollectiveKind::kAllGather:
        for (int p = 0; p < n; ++p) {
          w.copy(out, static_cast<std::uint64_t>(p) * unit, w.in[static_cast<std::size_t>(p)], 0,
                 unit);
        }
        break;
      case CollectiveKind::kBroadcast:
        w.copy(out, 0, w.in[static_cast<std::size_t>(w.spec.root)], 0, w.counts.recv);
        break;
      case CollectiveKind::kAllToAll:
        for (int p = 0; p < n; ++p) {
          w.copy(out, static_cast<std::uint64_t>(p) * unit, w.in[static_cast<std::size_t>(p)],
                 ur * unit, unit);
        }
        break;
      case CollectiveKind::kSendRecv:
        w.copy(out, 0, w.in[static_cast<std::size_t>((rank + n - 1) % n)], 0, w.counts.recv);
        break;
    }
  }
}

VerifyResult verify(const World& w, int rank) {
  return verify_output(w.out[static_cast<std::size_t>(rank)].data(), w.kind, w.counts, w.spec,
                       rank);
}

std::vector<ReduceOp> ops_for(CollectiveKind kind) {
  if (collective(kind).reduces) return {ReduceOp::kSum, ReduceOp::kMax};
  return {ReduceOp::kSum};
}

TEST(CommSimulate, EveryCollectiveVerifiesClean) {
  for (CollectiveKind kind : kAllKinds) {
    for (DType t : kAllDTypes) {
      for (ReduceOp op : ops_for(kind)) {
        for (int n : kSimulatedRankCounts) {
          for (std::uint64_t bytes : kSizes) {
            for (int root : {0, n - 1}) {
              if (root != 0 && kind != CollectiveKind::kBroadcast) continue;
              World w = make_world(kind, t, op, n, bytes, root);
              if (w.counts.unit == 0) continue;
              run(w);
              for (int r = 0; r < n; ++r) {
                const VerifyResult v = verify(w, r);
                ASSERT_EQ(v.wrong, 0u) << w.label() << " rank " << r << ": first " << v.first_wrong
                                       << " expected " << v.expected << " got " << v.got;
                ASSERT_EQ(v.first_wrong, -1);
              }
            }
          }
        }
      }
    }
  }
}

// A non-reducing collective with op = max (what a sweep passes along) verifies the same.
TEST(CommSimulate, OpIsIgnoredWhereNothingReduces) {
  for (CollectiveKind kind : kAllKinds) {
    if (collective(kind).reduces) continue;
    World w = make_world(kind, DType::kBFloat16, ReduceOp::kMax, 4, 4096);
    run(w);
    for (int r = 0; r < 4; ++r) EXPECT_EQ(verify(w, r).wrong, 0u) << w.label();
  }
}

TEST(CommSimulate, OneWrongElementIsFoundExactly) {
  for (CollectiveKind kind : kAllKinds) {
    for (DType t : kAllDTypes) {
      for (ReduceOp op : ops_for(kind)) {
        for (int n : {1, 2, 3, 8}) {
          World w = make_world(kind, t, op, n, 4096);
          run(w);
          const int rank = n - 1;
          Bytes& out = w.out[static_cast<std::size_t>(rank)];
          for (std::uint64_t idx : {std::uint64_t{0}, w.counts.recv / 2 + 1, w.counts.recv - 1}) {
            const double before = load_element(out.data(), t, idx);
            store_element(out.data(), t, idx, corrupted_value(t, before));
            const VerifyResult v = verify(w, rank);
            EXPECT_EQ(v.wrong, 1u) << w.label() << " index " << idx;
            EXPECT_EQ(v.first_wrong, static_cast<std::int64_t>(idx)) << w.label();
            EXPECT_EQ(v.expected, before) << w.label();
            EXPECT_EQ(v.got, corrupted_value(t, before)) << w.label();
            store_element(out.data(), t, idx, before);
            EXPECT_EQ(verify(w, rank).wrong, 0u) << w.label();
          }
        }
      }
    }
  }
}

// Any single bit flip in any byte of an element is caught (NaN codes and -0 included).
TEST(CommSimulate, EveryBitFlipIsCaught) {
  for (DType t : kAllDTypes) {
    for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather}) {
      World w = make_world(kind, t, ReduceOp::kSum, 3, 1024);
      run(w);
      Bytes& out = w.out[1];
      const std::uint64_t elements = std::min<std::uint64_t>(w.counts.recv, 64);
      for (std::uint64_t idx = 0; idx < elements; ++idx) {
        for (std::size_t byte = 0; byte < w.elem; ++byte) {
          for (int bit = 0; bit < 8; ++bit) {
            unsigned char& b = out[idx * w.elem + byte];
            b = static_cast<unsigned char>(b ^ (1u << bit));
            const VerifyResult v = verify(w, 1);
            ASSERT_EQ(v.wrong, 1u)
                << w.label() << " index " << idx << " byte " << byte << " bit " << bit;
            ASSERT_EQ(v.first_wrong, static_cast<std::int64_t>(idx));
            b = static_cast<unsigned char>(b ^ (1u << bit));
          }
        }
      }
    }
  }
}

// Data in the wrong place: verify reports it, starting at the first displaced element.
TEST(CommSimulate, MisroutedDataIsCaught) {
  for (DType t : kAllDTypes) {
    for (int n : {2, 3, 5, 8}) {
      const std::uint64_t bytes = 2048;
      // all_gather: two ranks' chunks swapped on rank 0.
      {
        World w = make_world(CollectiveKind::kAllGather, t, ReduceOp::kSum, n, bytes);
        run(w);
        const std::uint64_t u = w.counts.unit;
        Bytes& out = w.out[0];
        Bytes chunk(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(u * w.elem));
        w.copy(out, 0, out, (static_cast<std::uint64_t>(n) - 1) * u, u);
        w.copy(out, (static_cast<std::uint64_t>(n) - 1) * u, chunk, 0, u);
        const VerifyResult v = verify(w, 0);
        EXPECT_GE(v.wrong, u) << w.label();  // nearly every element of both chunks
        EXPECT_LE(v.first_wrong, 2) << w.label();
      }
      // all_to_all: rank 1 received peer 0's chunk meant for rank 0.
      {
        World w = make_world(CollectiveKind::kAllToAll, t, ReduceOp::kSum, n, bytes);
        run(w);
        const std::uint64_t u = w.counts.unit;
        w.copy(w.out[1], 0, w.in[0], 0, u);
        const VerifyResult v = verify(w, 1);
        EXPECT_GE(v.wrong, u / 2) << w.label();
        EXPECT_LE(v.first_wrong, 2) << w.label();
      }
      // send_recv: rank 0 got its own data back instead of rank n-1's (or, n == 2, shifted by
      // one element).
      {
        World w = make_world(CollectiveKind::kSendRecv, t, ReduceOp::kSum, n, bytes);
        run(w);
        if (n > 2) {
          w.copy(w.out[0], 0, w.in[0], 0, w.counts.recv);
        } else {
          w.copy(w.out[0], 0, w.in[1], 1, w.counts.recv - 1);
        }
        const VerifyResult v = verify(w, 0);
        EXPECT_GE(v.wrong, w.counts.recv / 2) << w.label();
        EXPECT_LE(v.first_wrong, 2) << w.label();
      }
      // broadcast from the wrong root.
      {
        World w = make_world(CollectiveKind::kBroadcast, t, ReduceOp::kSum, n, bytes, 0);
        run(w);
        w.copy(w.out[n - 1], 0, w.in[1], 0, w.counts.recv);
        const VerifyResult v = verify(w, n - 1);
        EXPECT_GE(v.wrong, w.counts.recv / 2) << w.label();
        EXPECT_LE(v.first_wrong, 2) << w.label();
      }
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
        // reduce_scatter: rank 0 got rank 1's chunk.
        {
          World w = make_world(CollectiveKind::kReduceScatter, t, op, n, bytes);
          run(w);
          w.copy(w.out[0], 0, w.out[1], 0, w.counts.unit);
          const VerifyResult v = verify(w, 0);
          EXPECT_GE(v.wrong, w.counts.unit / 4) << w.label();
          EXPECT_LE(v.first_wrong, 8) << w.label();
        }
        // all_reduce where the last rank contributed another rank's buffer.
        {
          World w = make_world(CollectiveKind::kAllReduce, t, op, n, bytes);
          w.in[static_cast<std::size_t>(n - 1)] = w.in[0];
          run(w);
          const VerifyResult v = verify(w, 0);
          EXPECT_GE(v.wrong, 1u) << w.label();
          if (op == ReduceOp::kSum) {
            EXPECT_GE(v.wrong, w.counts.recv / 4) << w.label();
          }
        }
        // all_reduce that never ran: the output still holds the input (stale, in place).
        {
          World w = make_world(CollectiveKind::kAllReduce, t, op, n, bytes);
          for (int r = 0; r < n; ++r) {
            w.copy(w.out[static_cast<std::size_t>(r)], 0, w.in[static_cast<std::size_t>(r)], 0,
                   w.counts.recv);
          }
          for (int r = 0; r < n; ++r) EXPECT_GE(verify(w, r).wrong, 1u) << w.label();
        }
      }
      // Output left all zeros.
      for (CollectiveKind kind : kAllKinds) {
        World w = make_world(kind, t, ReduceOp::kSum, n, bytes);
        for (Bytes& b : w.out) std::fill(b.begin(), b.end(), 0);
        for (int r = 0; r < n; ++r) EXPECT_GE(verify(w, r).wrong, w.counts.recv / 4) << w.label();
      }
    }
  }
}

// Different seeds give different data: a stale buffer from an earlier iteration is caught.
TEST(CommSimulate, StaleSeedIsCaught) {
  for (CollectiveKind kind : kAllKinds) {
    for (DType t : kAllDTypes) {
      World w = make_world(kind, t, ReduceOp::kSum, 4, 4096, 0, 1);
      run(w);
      PatternSpec next = w.spec;
      next.seed = 2;
      const VerifyResult v = verify_output(w.out[2].data(), kind, w.counts, next, 2);
      EXPECT_GE(v.wrong, w.counts.recv / 4) << w.label();
    }
  }
}

TEST(CommSimulate, BadArgumentsThrow) {
  CollectiveCounts c = collective(CollectiveKind::kBroadcast).counts(64, 4, 4);
  std::vector<unsigned char> buf(64);
  PatternSpec s;
  s.nranks = 4;
  EXPECT_THROW(fill_input(buf.data(), CollectiveKind::kBroadcast, c, s, 4), InternalError);
  EXPECT_THROW(fill_input(buf.data(), CollectiveKind::kBroadcast, c, s, -1), InternalError);
  EXPECT_THROW(fill_input(nullptr, CollectiveKind::kBroadcast, c, s, 0), InternalError);
  s.root = 4;
  EXPECT_THROW(verify_output(buf.data(), CollectiveKind::kBroadcast, c, s, 0), InternalError);
  s.root = 0;
  s.nranks = 0;
  EXPECT_THROW(verify_output(buf.data(), CollectiveKind::kBroadcast, c, s, 0), InternalError);
  // Nothing to do: fine with a null buffer.
  s.nranks = 4;
  CollectiveCounts none;
  EXPECT_NO_THROW(fill_input(nullptr, CollectiveKind::kAllGather, none, s, 0));
  EXPECT_EQ(verify_output(nullptr, CollectiveKind::kAllGather, none, s, 0).wrong, 0u);
}

// The host fill and verify take table shortcuts for large buffers of the small formats: they must
// agree element for element with the formulas a kernel runs (store/load_element, input_value,
// expected_output), clean and with a fault.
TEST(CommSimulate, HostShortcutsMatchTheFormulas) {
  for (DType t : kAllDTypes) {
    for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather}) {
      const std::size_t elem = dtype_size(t);
      const CollectiveCounts c = collective(kind).counts(300000 * elem * 2, elem, 2);
      PatternSpec s;
      s.dtype = t;
      s.nranks = 2;
      s.seed = 99;
      Bytes filled(c.send * elem), formula(c.send * elem);
      fill_input(filled.data(), kind, c, s, 1);
      for (std::uint64_t i = 0; i < c.send; ++i) {
        store_element(formula.data(), t, i, input_value(kind, s, 1, i));
      }
      ASSERT_EQ(filled, formula) << dtype_name(t);

      Bytes out(c.recv * elem);
      for (std::uint64_t i = 0; i < c.recv; ++i) {
        store_element(out.data(), t, i, expected_output(kind, s, c, 0, i));
      }
      const std::uint64_t bad = c.recv - 12345;
      store_element(out.data(), t, bad, corrupted_value(t, load_element(out.data(), t, bad)));
      VerifyResult manual;
      for (std::uint64_t i = 0; i < c.recv; ++i) {
        const double got = load_element(out.data(), t, i);
        const double want = expected_output(kind, s, c, 0, i);
        if (!matches(got, want) && manual.wrong++ == 0) {
          manual.first_wrong = static_cast<std::int64_t>(i);
          manual.expected = want;
          manual.got = got;
        }
      }
      const VerifyResult v = verify_output(out.data(), kind, c, s, 0);
      EXPECT_EQ(manual.wrong, 1u);
      EXPECT_EQ(v.wrong, manual.wrong) << dtype_name(t);
      EXPECT_EQ(v.first_wrong, manual.first_wrong) << dtype_name(t);
      EXPECT_EQ(v.first_wrong, static_cast<std::int64_t>(bad)) << dtype_name(t);
      EXPECT_EQ(v.expected, manual.expected) << dtype_name(t);
      EXPECT_EQ(v.got, manual.got) << dtype_name(t);
    }
  }
}

// The threaded fill and verify split a buffer into ranges (and at chunk boundaries); the bytes
// written and the result must not depend on the thread count, and a buffer filled for a larger
// size holds the input of every smaller one (the sweep fills once for its largest size).
TEST(CommSimulate, ThreadedFillAndVerifyMatchOneThread) {
  for (CollectiveKind kind : kAllKinds) {
    for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kFp8E4M3}) {
      // 2^20 + 3 elements: four 2^18-element ranges, and not a multiple of the rank count, so
      // chunked collectives end in a partial range.
      const std::uint64_t elements = (std::uint64_t{1} << 20) + 3;
      World w = make_world(kind, t, ReduceOp::kSum, 3, elements * dtype_size(t));
      for (int r = 0; r < w.n(); ++r) {
        Bytes threaded(w.in[static_cast<std::size_t>(r)].size());
        threaded.back() = w.in[static_cast<std::size_t>(r)].back();
        fill_input(threaded.data(), kind, w.counts, w.spec, r, 4);
        EXPECT_EQ(threaded, w.in[static_cast<std::size_t>(r)]) << w.label() << " rank " << r;
      }
      const CollectiveCounts smaller = collective(kind).counts(4096, w.elem, w.n());
      Bytes small(smaller.send * w.elem);
      fill_input(small.data(), kind, smaller, w.spec, 1);
      EXPECT_EQ(0, std::memcmp(small.data(), w.in[1].data(), small.size())) << w.label();

      run(w);
      const int rank = 2;
      const std::uint64_t n = w.counts.recv;
      EXPECT_EQ(verify_output(w.out[2].data(), kind, w.counts, w.spec, rank, 4).wrong, 0u)
          << w.label();
      for (std::uint64_t idx : {n - 1, n / 3 + 7, (3 * n) / 4}) {
        const double before = load_element(w.out[2].data(), t, idx);
        store_element(w.out[2].data(), t, idx, corrupted_value(t, before));
      }
      const VerifyResult one = verify_output(w.out[2].data(), kind, w.counts, w.spec, rank, 1);
      for (int threads : {2, 3, 4, 16}) {
        const VerifyResult many =
            verify_output(w.out[2].data(), kind, w.counts, w.spec, rank, threads);
        EXPECT_EQ(many.wrong, 3u) << w.label() << " threads " << threads;
        EXPECT_EQ(many.wrong, one.wrong) << w.label();
        EXPECT_EQ(many.first_wrong, static_cast<std::int64_t>(n / 3 + 7)) << w.label();
        EXPECT_EQ(many.first_wrong, one.first_wrong) << w.label();
        EXPECT_EQ(many.expected, one.expected) << w.label();
        EXPECT_EQ(many.got, one.got) << w.label();
      }
    }
  }
}

// The host reference must keep up with 64 MiB buffers: fill and verify one per dtype.
TEST(CommSimulate, LargeBuffers) {
  for (DType t : kAllDTypes) {
    const std::uint64_t bytes = 64ull << 20;
    const CollectiveCounts c =
        collective(CollectiveKind::kAllGather).counts(bytes, dtype_size(t), 2);
    PatternSpec s;
    s.dtype = t;
    s.nranks = 2;
    std::vector<unsigned char> out(c.recv * dtype_size(t));
    const auto start = std::chrono::steady_clock::now();
    fill_input(out.data(), CollectiveKind::kAllGather, c, s, 0);
    fill_input(out.data() + c.send * dtype_size(t), CollectiveKind::kAllGather, c, s, 1);
    const auto filled = std::chrono::steady_clock::now();
    const VerifyResult v = verify_output(out.data(), CollectiveKind::kAllGather, c, s, 0);
    const auto verified = std::chrono::steady_clock::now();
    EXPECT_EQ(v.wrong, 0u) << dtype_name(t);
    using ms = std::chrono::duration<double, std::milli>;
    std::printf("  64 MiB %-8s fill %6.0f ms, verify %6.0f ms\n",
                std::string(dtype_name(t)).c_str(), ms(filled - start).count(),
                ms(verified - filled).count());
  }
}

}  // namespace
}  // namespace shakedown
