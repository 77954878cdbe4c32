// The schema's descriptors: well-formed, used by RunWriter with their declared dimensions, and
// docs/schema.md and scripts/schema.json generated from them and current.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "record/reader.hpp"
#include "record/schema.hpp"
#include "record/writer.hpp"
#include "temp_dir.hpp"

namespace {

using namespace shakedown;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The file in the repository must equal what the descriptors generate. When it does not, the
// generated text is written next to the test binary and the message says how to take it.
void expect_current(const std::string& relative, const std::string& generated) {
  const std::string path = std::string(SHAKEDOWN_SOURCE_DIR) + "/" + relative;
  if (read_text(path) == generated) return;
  const std::filesystem::path fresh =
      std::filesystem::current_path() / std::filesystem::path(relative).filename();
  std::ofstream(fresh) << generated;
  ADD_FAILURE() << relative
                << " is not what src/record/schema.hpp generates; take the new one with: cp "
                << fresh.string() << " " << path;
}

TEST(RecordSchema, DocsAndPythonDescriptorsAreCurrent) {
  expect_current("docs/schema.md", schema::schema_markdown());
  expect_current("scripts/schema.json", schema::schema_json());
}

TEST(RecordSchema, DescriptorsAreWellFormedAndUnique) {
  std::set<std::string> paths;
  for (const schema::DatasetSpec& d : schema::all_datasets()) {
    EXPECT_TRUE(d.group.starts_with("/")) << d.name;
    EXPECT_FALSE(d.name.empty());
    EXPECT_EQ(d.name.find('/'), std::string_view::npos) << d.name;
    EXPECT_FALSE(d.doc.empty()) << d.name;
    EXPECT_GE(d.rank(), 1u) << d.name;
    EXPECT_TRUE(paths.insert(d.path(d.group)).second) << "twice: " << d.path(d.group);
  }
  std::set<std::pair<std::string, std::string>> attrs;
  for (const schema::AttrSpec& a : schema::all_attrs()) {
    EXPECT_TRUE(a.object.starts_with("/")) << a.name;
    EXPECT_TRUE(attrs.emplace(std::string(a.object), std::string(a.name)).second) << a.name;
  }
  EXPECT_EQ(schema::coll::kTimeUs.spec.rank(), 3u);
  EXPECT_EQ(schema::gemm::kOutputHash.spec.elem, schema::Elem::kUint64);
  EXPECT_EQ(schema::coll::kTimeUs.spec.elem, schema::Elem::kFloat32);
  EXPECT_EQ(schema::sweep_group("world", "all_reduce", "float32_sum", "in_place"),
            "/collectives/world/all_reduce/float32_sum/in_place");
}

TEST(RecordSchema, WriterHoldsDatasetsToTheirDeclaredDimensions) {
  testing_support::TempDir dir;
  const auto out = dir.path() / "run.h5";
  RunMeta meta;
  meta.world_size = 2;
  RunWriter w = RunWriter::create(out, meta, 1);
  const std::string sweep = schema::sweep_group("world", "all_reduce", "float32_sum", "in_place");
  const std::vector<double> t = {1, 2, 3, 4};
  const std::vector<float> tf = {1, 2, 3, 4};
  w.append_rows(sweep, schema::coll::kTimeUs, tf, {2, 2});  // [S, iters, ranks], float32
  EXPECT_THROW(w.append_rows(sweep, schema::coll::kAlgbwGBps, t, {4}), InternalError);
  EXPECT_THROW(w.write_array(schema::gemm_group("s"), schema::gemm::kTflops, t, {4}),
               InternalError);
  w.write_array(schema::gemm_group("s"), schema::gemm::kTflops, t, {2, 2});
  w.finish(schema::kStatusComplete);
  const RunFile f = RunFile::open(out);
  std::vector<std::uint64_t> dims;
  EXPECT_EQ(f.read(sweep, schema::coll::kTimeUs, &dims), t);  // float32 read as double
  EXPECT_EQ(dims, (std::vector<std::uint64_t>{1, 2, 2}));
  EXPECT_EQ(f.read(schema::gemm_group("s"), schema::gemm::kTflops), t);
  EXPECT_FALSE(f.has(sweep, schema::coll::kWrong));
}

}  // namespace
