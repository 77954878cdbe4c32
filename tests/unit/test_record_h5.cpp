// The HDF5 helper layer (record/h5.hpp): ids, the check macro, attributes, datasets, tables.
#include <gtest/gtest.h>

#include <unistd.h>
#include "temp_dir.hpp"

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "record/h5.hpp"

namespace shakedown {
namespace {

using testing_support::TempDir;

TEST(RecordH5, CheckMacroThrowsWithLocationAndHdf5Message) {
  h5::quiet_errors();
  try {
    SD_H5_CHECK(H5Fopen("/nonexistent/shakedown/none.h5", H5F_ACC_RDONLY, H5P_DEFAULT));
    FAIL() << "expected a RuntimeFault";
  } catch (const RuntimeFault& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("test_record_h5.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("H5Fopen"), std::string::npos) << what;
    // The root cause first (the system's words); HDF5's whole stack is the detail.
    EXPECT_NE(what.find("failed: No such file or directory"), std::string::npos) << what;
    EXPECT_NE(e.detail().find("unable to open file"), std::string::npos) << e.detail();
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
    const auto* io = dynamic_cast<const h5::IoError*>(&e);
    ASSERT_NE(io, nullptr) << "a refused open is an IoError";
    EXPECT_EQ(io->os_error(), "No such file or directory");
  }
  // The stack was cleared: the next failure reports only its own error.
  EXPECT_EQ(SD_H5_CHECK(H5Eget_num(H5E_DEFAULT)), 0);
}

TEST(RecordH5, IdsCloseAndMove) {
  TempDir dir;
  h5::File file = h5::create_file(dir / "ids.h5");
  ASSERT_TRUE(file);
  h5::File moved = std::move(file);
  EXPECT_FALSE(file);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_TRUE(moved);
  {
    h5::Group g = h5::ensure_group(moved.get(), "/a/b/c");
    EXPECT_TRUE(g);
  }
  EXPECT_TRUE(h5::exists(moved.get(), "/a/b/c"));
  EXPECT_TRUE(h5::exists(moved.get(), "/a/b"));
  EXPECT_TRUE(h5::exists(moved.get(), "/"));
  EXPECT_FALSE(h5::exists(moved.get(), "/a/x/c"));
  EXPECT_FALSE(h5::exists(moved.get(), "/zz"));
  const std::vector<double> one = {1.0};
  h5::write_dataset(moved.get(), "/a/d", std::span<const double>(one), {1}, 0);
  EXPECT_TRUE(h5::exists(moved.get(), "a/d"));
  EXPECT_FALSE(h5::exists(moved.get(), "/a/d/inside"));  // below a dataset: not there
  moved.close();
  EXPECT_FALSE(moved);
  // Creating again fails: create_file never overwrites.
  EXPECT_THROW(h5::create_file(dir / "ids.h5"), RuntimeFault);
}

TEST(RecordH5, ParentPath) {
  EXPECT_EQ(h5::parent_path("/a/b/c"), "/a/b");
  EXPECT_EQ(h5::parent_path("/c"), "/");
  EXPECT_EQ(h5::parent_path("c"), ".");
  EXPECT_EQ(h5::parent_path("/a/b/"), "/a");
}

TEST(RecordH5, Attributes) {
  TempDir dir;
  h5::File file = h5::create_file(dir / "attrs.h5");
  h5::Group g = h5::ensure_group(file.get(), "/g");
  h5::write_attr(g.get(), "text", std::string_view("héllo wörld ✓"));
  h5::write_attr(g.get(), "empty", std::string_view(""));
  h5::write_attr(g.get(), "pi", 3.25);
  h5::write_attr(g.get(), "neg", std::int64_t{-42});
  h5::write_attr(g.get(), "big", std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(h5::read_attr_string(g.get(), "text"), "héllo wörld ✓");
  EXPECT_EQ(h5::read_attr_string(g.get(), "empty"), "");
  EXPECT_DOUBLE_EQ(h5::read_attr_double(g.get(), "pi"), 3.25);
  EXPECT_EQ(h5::read_attr_int64(g.get(), "neg"), -42);
  EXPECT_DOUBLE_EQ(h5::read_attr_double(g.get(), "neg"), -42.0);
  // Replacing an attribute may change its type.
  h5::write_attr(g.get(), "pi", std::string_view("three"));
  EXPECT_EQ(h5::read_attr_string(g.get(), "pi"), "three");
  EXPECT_TRUE(h5::has_attr(g.get(), "big"));
  EXPECT_FALSE(h5::has_attr(g.get(), "nope"));
  EXPECT_THROW(h5::read_attr_string(g.get(), "nope"), UsageError);
  EXPECT_THROW(h5::read_attr_string(g.get(), "neg"), UsageError);
  EXPECT_THROW(h5::read_attr_double(g.get(), "text"), UsageError);
}

TEST(RecordH5, FixedLengthStringAttribute) {
  TempDir dir;
  h5::File file = h5::create_file(dir / "fixed.h5");
  h5::Datatype type(SD_H5_CHECK(H5Tcopy(H5T_C_S1)));
  SD_H5_CHECK(H5Tset_size(type.get(), 8));
  SD_H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLPAD));
  h5::Dataspace space(SD_H5_CHECK(H5Screate(H5S_SCALAR)));
  h5::Attribute attr(SD_H5_CHECK(
      H5Acreate2(file.get(), "fixed", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  const char data[8] = {'a', 'b', 'c', 0, 0, 0, 0, 0};
  SD_H5_CHECK(H5Awrite(attr.get(), type.get(), data));
  attr.close();
  EXPECT_EQ(h5::read_attr_string(file.get(), "fixed"), "abc");
}

TEST(RecordH5, DatasetsRoundTripAndCompression) {
  TempDir dir;
  h5::File file = h5::create_file(dir / "data.h5");
  const std::vector<double> small = {1.5, -2.5, 3.0};
  h5::write_dataset(file.get(), "/x/small", std::span<const double>(small), {3}, 6);
  EXPECT_FALSE(h5::is_compressed(file.get(), "/x/small"));

  std::vector<double> big(20 * 30 * 40);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i % 97) * 0.5;
  h5::write_dataset(file.get(), "/x/big", std::span<const double>(big), {20, 30, 40}, 4);
  EXPECT_TRUE(h5::is_compressed(file.get(), "/x/big"));
  h5::write_dataset(file.get(), "/x/big_plain", std::span<const double>(big), {20, 30, 40}, 0);
  EXPECT_FALSE(h5::is_compressed(file.get(), "/x/big_plain"));

  h5::Dims dims;
  EXPECT_EQ(h5::read_dataset_double(file.get(), "/x/big", &dims), big);
  EXPECT_EQ(dims, (h5::Dims{20, 30, 40}));
  EXPECT_EQ(h5::read_dataset_double(file.get(), "/x/small", &dims), small);
  EXPECT_EQ(dims, (h5::Dims{3}));

  const std::vector<std::uint64_t> none;
  h5::write_dataset(file.get(), "/x/empty", std::span<const std::uint64_t>(none), {0}, 4);
  EXPECT_TRUE(h5::read_dataset_uint64(file.get(), "/x/empty", &dims).empty());
  EXPECT_EQ(dims, (h5::Dims{0}));

  // Wrong element count, no dimensions, or writing a path twice: caller bugs.
  EXPECT_THROW(h5::write_dataset(file.get(), "/x/bad", std::span<const double>(small), {2, 2}, 0),
               InternalError);
  EXPECT_THROW(h5::write_dataset(file.get(), "/x/bad", std::span<const double>(small), {}, 0),
               InternalError);
  EXPECT_THROW(h5::write_dataset(file.get(), "/x/small", std::span<const double>(small), {3}, 0),
               InternalError);
  EXPECT_THROW(h5::read_dataset_double(file.get(), "/x/missing"), UsageError);
}

TEST(RecordH5, TablesRoundTrip) {
  TempDir dir;
  h5::File file = h5::create_file(dir / "table.h5");
  h5::Table table;
  table.add<std::string>("name") = {"αβγ", "", "plain"};
  table.add<std::int64_t>("i") = {-1, 0, std::numeric_limits<std::int64_t>::max()};
  table.add<std::uint64_t>("u") = {0, 7, std::numeric_limits<std::uint64_t>::max()};
  table.add<double>("d") = {0.25, -1e300, 3.0};
  h5::write_table(file.get(), "/t/one", table, 0);

  const h5::Table back = h5::read_table(file.get(), "/t/one");
  ASSERT_EQ(back.rows(), 3U);
  ASSERT_EQ(back.columns().size(), 4U);
  for (const h5::Column& c : table.columns()) {
    const h5::Column* b = back.find(c.name);
    ASSERT_NE(b, nullptr) << c.name;
    EXPECT_EQ(b->values, c.values) << c.name;
  }

  h5::Table empty;
  empty.add<std::string>("s");
  empty.add<std::int64_t>("n");
  h5::write_table(file.get(), "/t/empty", empty, 9);
  const h5::Table empty_back = h5::read_table(file.get(), "/t/empty");
  EXPECT_EQ(empty_back.rows(), 0U);
  EXPECT_EQ(empty_back.columns().size(), 2U);

  // Large tables are chunked and compressed like arrays.
  h5::Table large;
  auto& names = large.add<std::string>("name");
  auto& values = large.add<double>("v");
  for (int i = 0; i < 5000; ++i) {
    names.push_back("row-" + std::to_string(i));
    values.push_back(i * 0.5);
  }
  h5::write_table(file.get(), "/t/large", large, 5);
  EXPECT_TRUE(h5::is_compressed(file.get(), "/t/large"));
  const h5::Table large_back = h5::read_table(file.get(), "/t/large");
  EXPECT_EQ(large_back.find("name")->values, large.find("name")->values);
  EXPECT_EQ(large_back.find("v")->values, large.find("v")->values);

  h5::Table ragged;
  ragged.add<std::int64_t>("a") = {1, 2};
  ragged.add<std::int64_t>("b") = {1};
  EXPECT_THROW(h5::write_table(file.get(), "/t/ragged", ragged, 0), InternalError);
  h5::Table twice;
  twice.add<std::int64_t>("a") = {1};
  twice.add<double>("a") = {1.0};
  EXPECT_THROW(h5::write_table(file.get(), "/t/twice", twice, 0), InternalError);
  EXPECT_THROW(h5::write_table(file.get(), "/t/none", h5::Table{}, 0), InternalError);

  // A numeric dataset is not a table.
  const std::vector<double> v = {1.0};
  h5::write_dataset(file.get(), "/t/array", std::span<const double>(v), {1}, 0);
  EXPECT_THROW(h5::read_table(file.get(), "/t/array"), UsageError);
}

}  // namespace
}  // namespace shakedown
