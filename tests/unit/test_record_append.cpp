// RunWriter::append_rows: a dataset that grows by whole rows ([N, row_dims...], N unlimited),
// readable by RunFile after every append, refusing another row shape or element type.
#include <gtest/gtest.h>

#include "temp_dir.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "record/h5.hpp"
#include "record/reader.hpp"
#include "record/writer.hpp"

namespace shakedown {
namespace {

using testing_support::TempDir;
using Dims = std::vector<std::uint64_t>;

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

RunMeta append_meta() {
  RunMeta m;
  m.shakedown_version = "0.1.0";
  m.command_line = "shakedown run";
  m.world_size = 4;
  m.node_count = 1;
  m.backend = "mpi";
  return m;
}

// Values first + 0, first + 1, ... so every element of every row differs.
template <class T>
std::vector<T> iota_values(std::size_t n, T first) {
  std::vector<T> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

template <class T>
std::vector<T> concat(const std::vector<std::vector<T>>& parts) {
  std::vector<T> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

h5::DatasetLayout layout_of(const std::filesystem::path& file, const std::string& path) {
  h5::File f = h5::open_file(file, /*writable=*/false);
  return h5::dataset_layout(f.get(), path);
}

bool compressed(const std::filesystem::path& file, const std::string& path) {
  h5::File f = h5::open_file(file, /*writable=*/false);
  return h5::is_compressed(f.get(), path);
}

// Message of the exception `fn` throws as E ("" when it throws nothing).
template <class E, class Fn>
std::string thrown(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

TEST(RecordAppend, OneDimensionalRowsGrowOneThreeOne) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 0);
  const std::string path = "/collectives/world/all_reduce/busbw_per_rank";
  const Dims row{4};  // [world]
  const std::vector<double> a = iota_values<double>(4, 0.5);
  const std::vector<double> b = iota_values<double>(12, 100.25);
  const std::vector<double> c = iota_values<double>(4, -7.0);

  w.append_rows(path, a, row);
  Dims dims;
  EXPECT_EQ(RunFile::open(w.partial_path()).read_doubles(path, &dims), a);
  EXPECT_EQ(dims, (Dims{1, 4}));

  w.append_rows(path, b, row);
  EXPECT_EQ(RunFile::open(w.partial_path()).read_doubles(path, &dims), concat<double>({a, b}));
  EXPECT_EQ(dims, (Dims{4, 4}));

  w.append_rows(path, c, row);
  EXPECT_EQ(RunFile::open(w.partial_path()).read_doubles(path, &dims), concat<double>({a, b, c}));
  EXPECT_EQ(dims, (Dims{5, 4}));

  const h5::DatasetLayout layout = layout_of(w.partial_path(), path);
  EXPECT_EQ(layout.dims, (Dims{5, 4}));
  EXPECT_EQ(layout.max_dims, (Dims{kUnlimited, 4}));
  // 32-byte rows: 16 rows make a 512-byte chunk.
  EXPECT_EQ(layout.chunk, (Dims{h5::kAppendChunkMinBytes / 32, 4}));
  EXPECT_FALSE(compressed(w.partial_path(), path));  // compression 0

  // Still readable after finish() renamed the file, through the int64 conversion too.
  w.finish("complete");
  EXPECT_EQ(RunFile::open(w.final_path()).read_doubles(path, &dims).size(), 20U);
  EXPECT_EQ(RunFile::open(w.final_path()).read_int64(path)[4], 100);
}

TEST(RecordAppend, TwoDimensionalRowsCompressedAndRelativePath) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 4);
  const Dims row{3, 4};  // [iters, world]
  const std::vector<double> s0 = iota_values<double>(12, 1.0);
  const std::vector<double> s1to3 = iota_values<double>(36, 1000.0);
  const std::vector<double> s4 = iota_values<double>(12, 5000.0);

  w.append_rows("collectives/world/all_reduce/time_us", s0, row);  // relative to "/"
  const std::string path = "/collectives/world/all_reduce/time_us";
  const RunFile f = RunFile::open(w.partial_path());
  Dims dims;
  EXPECT_EQ(f.read_doubles(path, &dims), s0);
  EXPECT_EQ(dims, (Dims{1, 3, 4}));

  w.append_rows(path, s1to3, row);
  EXPECT_EQ(f.read_doubles(path, &dims), concat<double>({s0, s1to3}));
  EXPECT_EQ(dims, (Dims{4, 3, 4}));

  w.append_rows(path, s4, row);
  EXPECT_EQ(f.read_doubles(path, &dims), concat<double>({s0, s1to3, s4}));
  EXPECT_EQ(dims, (Dims{5, 3, 4}));

  const h5::DatasetLayout layout = layout_of(w.partial_path(), path);
  EXPECT_EQ(layout.max_dims, (Dims{kUnlimited, 3, 4}));
  EXPECT_EQ(layout.chunk, (Dims{h5::kAppendChunkMinBytes / 96 + 1, 3, 4}));  // 96-byte rows
  // A 576-byte chunk: below kAppendCompressMinBytes, stored as it is.
  EXPECT_FALSE(compressed(w.partial_path(), path));
}

TEST(RecordAppend, LargeRowsOneChunkEachCompressedAndFloat32) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 4);
  const Dims row{20, 64};  // [iters, world] of float32: 5 KiB rows
  std::vector<float> s0(20 * 64), s1(20 * 64);
  for (std::size_t i = 0; i < s0.size(); ++i) {
    s0[i] = 1.5f + static_cast<float>(i) * 0.25f;
    s1[i] = -static_cast<float>(i);
  }
  s1[7] = std::numeric_limits<float>::quiet_NaN();
  const std::string path = "/collectives/world/all_reduce/time_us";
  w.append_rows(path, s0, row);
  w.append_rows(path, s1, row);
  Dims dims;
  const std::vector<double> back = RunFile::open(w.partial_path()).read_doubles(path, &dims);
  EXPECT_EQ(dims, (Dims{2, 20, 64}));
  ASSERT_EQ(back.size(), 2 * s0.size());
  for (std::size_t i = 0; i < s0.size(); ++i) {
    EXPECT_EQ(back[i], static_cast<double>(s0[i]));
    if (i != 7) {
      EXPECT_EQ(back[s0.size() + i], static_cast<double>(s1[i]));
    }
  }
  EXPECT_TRUE(std::isnan(back[s0.size() + 7]));
  const h5::DatasetLayout layout = layout_of(w.partial_path(), path);
  EXPECT_EQ(layout.chunk, (Dims{1, 20, 64}));       // one row per chunk: an append writes one
  EXPECT_TRUE(compressed(w.partial_path(), path));  // a 5 KiB chunk is worth the filter
  // Rows of one element type only: doubles do not go into a float32 dataset.
  const std::vector<double> d(20 * 64, 1.0);
  EXPECT_THROW(w.append_rows(path, d, row), InternalError);
}

TEST(RecordAppend, IntegerOverloadsAndScalarRows) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 1);
  const std::string wrong = "/collectives/world/all_reduce/wrong";
  const std::vector<std::int64_t> w0{0, -1, 2, std::numeric_limits<std::int64_t>::min()};
  const std::vector<std::int64_t> w1{5, 6, 7, std::numeric_limits<std::int64_t>::max()};
  w.append_rows(wrong, w0, {4});
  w.append_rows(wrong, w1, {4});
  Dims dims;
  EXPECT_EQ(RunFile::open(w.partial_path()).read_int64(wrong, &dims),
            concat<std::int64_t>({w0, w1}));
  EXPECT_EQ(dims, (Dims{2, 4}));

  // row_dims {}: a 1-D [S] dataset growing by one scalar (or several) at a time.
  const std::string sizes = "/collectives/world/all_reduce/sizes";
  const std::vector<std::uint64_t> big{std::numeric_limits<std::uint64_t>::max()};
  w.append_rows(sizes, std::vector<std::uint64_t>{8}, {});
  w.append_rows(sizes, std::vector<std::uint64_t>{16, 32, 64}, {});
  w.append_rows(sizes, big, {});
  EXPECT_EQ(RunFile::open(w.partial_path()).read_uint64(sizes, &dims),
            (std::vector<std::uint64_t>{8, 16, 32, 64, std::numeric_limits<std::uint64_t>::max()}));
  EXPECT_EQ(dims, (Dims{5}));
  EXPECT_EQ(layout_of(w.partial_path(), sizes).max_dims, (Dims{kUnlimited}));
}

TEST(RecordAppend, ZeroRowsCreateAnEmptyDatasetThenGrow) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 0);
  w.append_rows("/g/x", std::vector<double>{}, {2});
  Dims dims;
  EXPECT_TRUE(RunFile::open(w.partial_path()).read_doubles("/g/x", &dims).empty());
  EXPECT_EQ(dims, (Dims{0, 2}));
  w.append_rows("/g/x", std::vector<double>{}, {2});  // no-op
  w.append_rows("/g/x", std::vector<double>{1.0, 2.0}, {2});
  EXPECT_EQ(RunFile::open(w.partial_path()).read_doubles("/g/x", &dims),
            (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(dims, (Dims{1, 2}));
}

TEST(RecordAppend, LargeRowsAreChunkedOneRowAtATimeAndSplit) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 1);
  // A 128 KiB row: one row per chunk.
  const Dims mid{2, 8192};
  w.append_rows("/mid", iota_values<double>(2 * 8192, 0.0), mid);
  w.append_rows("/mid", iota_values<double>(2 * 2 * 8192, 1e6), mid);
  const h5::DatasetLayout m = layout_of(w.partial_path(), "/mid");
  EXPECT_EQ(m.dims, (Dims{3, 2, 8192}));
  EXPECT_EQ(m.chunk, (Dims{1, 2, 8192}));
  EXPECT_EQ(
      RunFile::open(w.partial_path()).read_doubles("/mid"),
      concat<double>({iota_values<double>(2 * 8192, 0.0), iota_values<double>(2 * 2 * 8192, 1e6)}));

  // A 2.4 MB row ([iters, world] at a large world): split below 1 MiB, whole world rows kept.
  const Dims big{6, 50000};
  const std::vector<double> r0 = iota_values<double>(6 * 50000, 0.0);
  const std::vector<double> r1 = iota_values<double>(6 * 50000, -3e6);
  w.append_rows("/big", r0, big);
  w.append_rows("/big", r1, big);
  const h5::DatasetLayout b = layout_of(w.partial_path(), "/big");
  EXPECT_EQ(b.dims, (Dims{2, 6, 50000}));
  ASSERT_EQ(b.chunk.size(), 3U);
  EXPECT_EQ(b.chunk[0], 1U);
  EXPECT_EQ(b.chunk[2], 50000U);
  EXPECT_LE(b.chunk[0] * b.chunk[1] * b.chunk[2] * sizeof(double), h5::kChunkTargetBytes);
  EXPECT_EQ(RunFile::open(w.partial_path()).read_doubles("/big"), concat<double>({r0, r1}));
}

TEST(RecordAppend, RowShapeMismatchIsAnInternalErrorNamingThePath) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 0);
  const std::string path = "/collectives/world/all_gather/time_us";
  w.append_rows(path, iota_values<double>(6, 0.0), {2, 3});

  const std::string other = thrown<InternalError>([&] {
    w.append_rows(path, iota_values<double>(6, 0.0), Dims{3, 2});
  });
  EXPECT_NE(other.find(path), std::string::npos) << other;
  EXPECT_NE(other.find("[3, 2]"), std::string::npos) << other;
  EXPECT_THROW(w.append_rows(path, iota_values<double>(6, 0.0), Dims{6}), InternalError);
  EXPECT_THROW(w.append_rows(path, iota_values<double>(6, 0.0), Dims{1, 2, 3}), InternalError);

  // Values that are not whole rows, and rows without elements.
  const std::string partial = thrown<InternalError>([&] {
    w.append_rows(path, iota_values<double>(7, 0.0), Dims{2, 3});
  });
  EXPECT_NE(partial.find(path), std::string::npos) << partial;
  EXPECT_THROW(w.append_rows("/new", iota_values<double>(5, 0.0), Dims{2}), InternalError);
  EXPECT_THROW(w.append_rows("/new", std::vector<double>{}, Dims{0}), InternalError);

  // The refused calls changed nothing.
  Dims dims;
  EXPECT_EQ(RunFile::open(w.partial_path()).read_doubles(path, &dims), iota_values<double>(6, 0.0));
  EXPECT_EQ(dims, (Dims{1, 2, 3}));
  EXPECT_FALSE(RunFile::open(w.partial_path()).has("/new"));
}

TEST(RecordAppend, ElementTypeMismatchIsAnInternalErrorNamingThePath) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 0);
  w.append_rows("/d", std::vector<double>{1.0, 2.0}, {2});
  w.append_rows("/i", std::vector<std::int64_t>{1, 2}, {2});

  const std::string msg = thrown<InternalError>([&] {
    w.append_rows("/d", std::vector<std::int64_t>{1, 2}, {2});
  });
  EXPECT_NE(msg.find("'/d'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float64 values, these rows are int64"), std::string::npos) << msg;
  EXPECT_THROW(w.append_rows("/d", std::vector<std::uint64_t>{1, 2}, {2}), InternalError);
  EXPECT_THROW(w.append_rows("/i", std::vector<std::uint64_t>{1, 2}, {2}), InternalError);
  EXPECT_THROW(w.append_rows("/i", std::vector<double>{1.0, 2.0}, {2}), InternalError);
  EXPECT_EQ(RunFile::open(w.partial_path()).read_int64("/i"), (std::vector<std::int64_t>{1, 2}));
}

TEST(RecordAppend, FixedDatasetsAndGroupsDoNotGrow) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 0);
  w.write_array("/fixed", std::vector<double>{1.0, 2.0, 3.0, 4.0}, {2, 2});
  const std::string fixed = thrown<InternalError>([&] {
    w.append_rows("/fixed", std::vector<double>{5.0, 6.0}, {2});
  });
  EXPECT_NE(fixed.find("'/fixed'"), std::string::npos) << fixed;
  EXPECT_NE(fixed.find("fixed"), std::string::npos) << fixed;

  w.set_attr("/grp", "note", std::string_view{"a group"});
  const std::string group = thrown<InternalError>([&] {
    w.append_rows("/grp", std::vector<double>{5.0, 6.0}, {2});
  });
  EXPECT_NE(group.find("'/grp'"), std::string::npos) << group;

  // An appended dataset is not a write_array target either: each path is written one way.
  w.append_rows("/grows", std::vector<double>{1.0}, {1});
  EXPECT_THROW(w.write_array("/grows", std::vector<double>{1.0}, {1}), InternalError);
}

TEST(RecordAppend, RefusedAfterFinish) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 0);
  w.append_rows("/x", std::vector<double>{1.0}, {1});
  w.finish("aborted");
  EXPECT_THROW(w.append_rows("/x", std::vector<double>{2.0}, {1}), InternalError);
  EXPECT_EQ(RunFile::open(w.final_path()).read_doubles("/x"), (std::vector<double>{1.0}));
}

// hold_open: the file stays open between writes, each still flushed; a reader in this process
// (and another process) sees every write; release() and finish() close it.
TEST(RecordAppend, HeldFileIsFlushedAfterEveryWrite) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 4);
  w.hold_open();
  EXPECT_TRUE(w.held());
  const std::string path = "/collectives/world/all_reduce/sizes";
  for (std::uint64_t i = 0; i < 40; ++i) {
    w.append_rows(path, std::span<const std::uint64_t>(&i, 1), {});
  }
  w.batch([&] { w.set_attr("/collectives", "in_batch", std::int64_t{7}); });
  {
    const RunFile f = RunFile::open(w.partial_path());
    EXPECT_EQ(f.read_uint64(path).size(), 40u);
    EXPECT_EQ(f.attr_int64("/collectives", "in_batch"), 7);
  }
  // Another process (h5dump) reads what was flushed while this one holds the file open.
  const std::string cmd = "h5dump -H -d " + path + " " + w.partial_path().string() +
                          " 2>&1 | grep -q 'SIMPLE { ( 40 )'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  w.release();
  EXPECT_FALSE(w.held());
  w.append_rows(path, std::span<const std::uint64_t>{}, {});  // no rows: nothing changes
  w.hold_open();
  w.finish("complete");  // closes the held file before the rename
  EXPECT_EQ(RunFile::open(w.final_path()).read_uint64(path).size(), 40u);
}

// defer_flushes: writes leave their flush to flush(); flush() writes them out for other
// processes, and a writer that is not deferring flushes every write again.
TEST(RecordAppend, DeferredFlushesWaitForFlush) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 4);
  w.hold_open();
  const std::string path = "/collectives/world/all_reduce/sizes";
  w.defer_flushes(true);
  for (std::uint64_t i = 0; i < 25; ++i) {
    w.append_rows(path, std::span<const std::uint64_t>(&i, 1), {});
  }
  w.batch([&] { w.set_attr("/collectives", "deferred", std::int64_t{1}); });
  EXPECT_TRUE(w.unflushed());
  w.flush();
  EXPECT_FALSE(w.unflushed());
  const std::string cmd = "h5dump -H -d " + path + " " + w.partial_path().string() +
                          " 2>&1 | grep -q 'SIMPLE { ( 25 )'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  w.defer_flushes(false);
  const std::uint64_t more = 25;
  w.append_rows(path, std::span<const std::uint64_t>(&more, 1), {});
  EXPECT_FALSE(w.unflushed());
  w.defer_flushes(true);
  w.append_rows(path, std::span<const std::uint64_t>(&more, 1), {});
  EXPECT_TRUE(w.unflushed());
  w.finish("complete");  // closing flushes what waits
  EXPECT_EQ(RunFile::open(w.final_path()).read_uint64(path).size(), 27u);
}

// With flushes deferred, rows appended wait in memory, a new dataset's first rows too: the file
// holds the datasets, empty, until flush(), which writes every dataset's rows, in order, at once.
TEST(RecordAppend, DeferredRowsWaitInMemoryUntilFlush) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 1);
  w.hold_open();
  const std::string sizes = "/collectives/world/all_reduce/sizes";
  const std::string times = "/collectives/world/all_reduce/time_us";
  w.defer_flushes(true);
  std::vector<std::vector<float>> rows;
  for (std::uint64_t i = 0; i < 25; ++i) {
    w.append_rows(sizes, std::span<const std::uint64_t>(&i, 1), {});
    rows.push_back(iota_values<float>(6, static_cast<float>(10 * i)));
    w.append_rows(times, rows.back(), {2, 3});
  }
  EXPECT_TRUE(w.unflushed());
  {
    const RunFile f = RunFile::open(w.partial_path());
    EXPECT_EQ(f.read_uint64(sizes), (std::vector<std::uint64_t>{}));
    EXPECT_EQ(layout_of(w.partial_path(), times).dims, (Dims{0, 2, 3}));
  }
  w.flush();
  EXPECT_FALSE(w.unflushed());
  {
    const RunFile f = RunFile::open(w.partial_path());
    EXPECT_EQ(f.read_uint64(sizes), iota_values<std::uint64_t>(25, 0));
    const std::vector<double> back = f.read_doubles(times);
    const std::vector<float> want = concat(rows);
    ASSERT_EQ(back.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(back[i], want[i]) << i;
  }
  EXPECT_EQ(layout_of(w.partial_path(), times).dims, (Dims{25, 2, 3}));
  // A write that is not deferred writes what waits in every dataset, then flushes.
  w.append_rows(times, rows[0], {2, 3});
  w.defer_flushes(false);
  const std::uint64_t last = 99;
  w.append_rows(sizes, std::span<const std::uint64_t>(&last, 1), {});
  EXPECT_EQ(RunFile::open(w.partial_path()).read_uint64(sizes).size(), 26u);
  EXPECT_EQ(layout_of(w.partial_path(), times).dims, (Dims{26, 2, 3}));
  w.finish("complete");
}

// Rows waiting in a dataset the cache closes (more growing datasets than it keeps open) are
// written first, and a writer that ends without finish() (a run ending on an error) writes what
// still waits: nothing measured is lost to the deferral.
TEST(RecordAppend, WaitingRowsSurviveEvictionAndAnUnfinishedWriter) {
  TempDir dir;
  const std::size_t datasets = h5::AppendCache::kCapacity + 8;
  std::filesystem::path partial;
  {
    RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 1);
    w.hold_open();
    w.defer_flushes(true);
    partial = w.partial_path();
    for (std::int64_t row = 0; row < 3; ++row) {
      for (std::size_t d = 0; d < datasets; ++d) {
        const std::int64_t v = static_cast<std::int64_t>(100 * d) + row;
        w.append_rows("/sweeps/s" + std::to_string(d), std::span<const std::int64_t>(&v, 1), {});
      }
    }
  }
  const RunFile f = RunFile::open(partial);
  for (std::size_t d = 0; d < datasets; ++d) {
    const auto base = static_cast<std::int64_t>(100 * d);
    EXPECT_EQ(f.read_int64("/sweeps/s" + std::to_string(d)),
              (std::vector<std::int64_t>{base, base + 1, base + 2}))
        << d;
  }
}

// The cache keeps the group of the dataset it created last open and creates the next one there:
// datasets created in turn in groups that exist, in groups their own creation makes, and in the
// group of a dataset appended to meanwhile each hold their own rows; a path under a dataset is
// still refused.
TEST(RecordAppend, DatasetsCreatedInTurnAcrossGroupsKeepTheirRows) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir / "run.h5", append_meta(), 1);
  w.hold_open();
  w.defer_flushes(true);
  w.write_array("/sweeps/g0/ranks", std::vector<std::int64_t>{0, 1}, {2});
  const std::vector<std::string> paths = {"/sweeps/g0/a", "/sweeps/g1/a",      "/sweeps/g0/b",
                                          "/sweeps/g1/b", "/sweeps/g2/deep/c", "/sweeps/g0/c"};
  for (std::int64_t row = 0; row < 3; ++row) {
    for (std::size_t d = 0; d < paths.size(); ++d) {
      const std::int64_t v = static_cast<std::int64_t>(100 * d) + row;
      w.append_rows(paths[d], std::span<const std::int64_t>(&v, 1), {});
    }
    if (row == 0) {  // a dataset is no group to create in
      const std::string under = thrown<Error>([&] {
        const std::int64_t v = 1;
        w.append_rows("/sweeps/g0/a/x", std::span<const std::int64_t>(&v, 1), {});
      });
      EXPECT_FALSE(under.empty());
    }
  }
  const std::int64_t last = 7;  // created in a group again after the refusal
  w.append_rows("/sweeps/g1/last", std::span<const std::int64_t>(&last, 1), {});
  w.flush();
  const RunFile f = RunFile::open(w.partial_path());
  EXPECT_EQ(f.read_int64("/sweeps/g1/last"), (std::vector<std::int64_t>{7}));
  for (std::size_t d = 0; d < paths.size(); ++d) {
    const auto base = static_cast<std::int64_t>(100 * d);
    EXPECT_EQ(f.read_int64(paths[d]), (std::vector<std::int64_t>{base, base + 1, base + 2}))
        << paths[d];
  }
  EXPECT_EQ(f.read_int64("/sweeps/g0/ranks"), (std::vector<std::int64_t>{0, 1}));
  // The group the cache kept open is closed with the file: nothing of it stays open.
  w.finish("complete");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

// Whole-row chunks (a world-scope size-row) are shuffled and deflated by the cache itself and
// written with H5Dwrite_chunk: HDF5's own filter pipeline reads them back exactly, rows written
// at creation, one at a time and held to a flush alike, with NaN and negative values; small rows
// (several per chunk) and uncompressed datasets are left to HDF5. float64 and int64 rows (the
// cache shuffles 8-byte elements apart from 4-byte ones) too.
TEST(RecordAppend, WholeRowChunksAreCompressedByTheCacheAndReadBackByHdf5) {
  TempDir dir;
  const Dims row{20, 1024};  // 80 KiB of float32
  std::vector<std::vector<float>> rows;
  for (int r = 0; r < 5; ++r) {
    std::vector<float> v(20 * 1024);
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i] = static_cast<float>(100.0 + 0.37 * static_cast<double>((i * 7919 + r) % 1000) - r);
    }
    v[static_cast<std::size_t>(r) * 13] = std::numeric_limits<float>::quiet_NaN();
    rows.push_back(std::move(v));
  }
  std::vector<double> wide_doubles;
  std::vector<std::int64_t> wide_ints;
  h5::AppendCache cache;
  {
    h5::File f = h5::create_file(dir / "direct.h5");
    h5::append_rows(f.get(), "/w/time_us", rows[0], row, 1, &cache);  // created with a row
    h5::append_rows(f.get(), "/w/time_us", rows[1], row, 1, &cache);  // appended
    cache.hold_rows(true);
    h5::append_rows(f.get(), "/w/time_us", concat<float>({rows[2], rows[3]}), row, 1, &cache);
    h5::append_rows(f.get(), "/w/time_us", rows[4], row, 1, &cache);
    cache.write_pending();
    cache.hold_rows(false);
    // 64-byte rows (8 to a chunk, not compressed) and compression 0: HDF5 writes those.
    h5::append_rows(f.get(), "/w/small", iota_values<double>(8, 0.5), {8}, 1, &cache);
    h5::append_rows(f.get(), "/w/plain", rows[0], row, 0, &cache);
    h5::append_rows(f.get(), "/w/plain", rows[1], row, 0, &cache);
    // 8-byte elements: negative, fractional and huge values, every byte of them in play.
    for (int r = 0; r < 2; ++r) {
      std::vector<double> d(20 * 1024);
      std::vector<std::int64_t> n(20 * 1024);
      for (std::size_t i = 0; i < d.size(); ++i) {
        d[i] = (static_cast<double>(i) - 5000.25) * 1.0e9 / (r + 3.0);
        n[i] = (static_cast<std::int64_t>(i) - 7000) * 1234567890123LL + r;
      }
      h5::append_rows(f.get(), "/w/f64", d, row, 1, &cache);
      h5::append_rows(f.get(), "/w/i64", n, row, 1, &cache);
      wide_doubles.insert(wide_doubles.end(), d.begin(), d.end());
      wide_ints.insert(wide_ints.end(), n.begin(), n.end());
    }
    cache.write_pending();
    cache.clear();
  }
  EXPECT_EQ(cache.direct_rows(), 9u);
  const std::filesystem::path file = dir / "direct.h5";
  EXPECT_TRUE(compressed(file, "/w/time_us"));
  EXPECT_FALSE(compressed(file, "/w/plain"));
  EXPECT_EQ(layout_of(file, "/w/time_us").chunk, (Dims{1, 20, 1024}));
  h5::File back = h5::open_file(file, /*writable=*/false);
  Dims dims;
  const std::vector<double> got = h5::read_dataset_double(back.get(), "/w/time_us", &dims);
  EXPECT_EQ(dims, (Dims{5, 20, 1024}));
  const std::vector<float> want = concat(rows);
  ASSERT_EQ(got.size(), want.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const bool same =
        std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == static_cast<double>(want[i]);
    differ += same ? 0 : 1;
  }
  EXPECT_EQ(differ, 0u);
  EXPECT_EQ(h5::read_dataset_double(back.get(), "/w/small"), iota_values<double>(8, 0.5));
  EXPECT_EQ(h5::read_dataset_double(back.get(), "/w/plain").size(), 2u * 20 * 1024);
  EXPECT_TRUE(compressed(file, "/w/f64"));
  EXPECT_TRUE(compressed(file, "/w/i64"));
  EXPECT_EQ(h5::read_dataset_double(back.get(), "/w/f64"), wide_doubles);
  EXPECT_EQ(h5::read_dataset_int64(back.get(), "/w/i64"), wide_ints);
}

}  // namespace
}  // namespace shakedown
