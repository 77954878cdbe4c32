#include "record/reader.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <map>
#include <optional>
#include <system_error>

#include "core/build_info.hpp"
#include "record/h5.hpp"
#include "record/schema.hpp"
#include "record/tables.hpp"

namespace shakedown {

namespace {

// A .partial renamed by its writer since open(): read the finished file instead.
std::filesystem::path resolve(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return path;
  const std::string text = path.string();
  const std::string suffix = schema::kPartialSuffix;
  if (text.size() > suffix.size() && text.ends_with(suffix)) {
    std::filesystem::path finished = text.substr(0, text.size() - suffix.size());
    if (std::filesystem::exists(finished, ec)) return finished;
  }
  return path;
}

bool still_written(const std::filesystem::path& path) {
  return path.string().ends_with(schema::kPartialSuffix);
}

}  // namespace

// A finished file stays open (read-only) for as long as a copy of its RunFile lives: reopening
// it for every read reloaded its metadata each time, most of `summary`'s time at 1,024 ranks.
// A file still being written (.partial) is opened for each read instead, so that its writer in
// this process can keep writing between reads (HDF5 refuses a read-write open of a file the
// same process holds read-only) and a rename to its final name is followed.
struct RunFile::OpenFile {
  std::optional<h5::File> held;

  // Runs `fn(file_id)`; errors come out with "reading <what> from '<file>'" in front.
  template <class Fn>
  auto use(const std::filesystem::path& path, const std::string& what, Fn&& fn) const {
    const std::filesystem::path actual = held ? path : resolve(path);
    try {
      if (held) return fn(held->get());
      std::error_code ec;
      if (!std::filesystem::exists(actual, ec)) {
        throw UsageError("the file no longer exists (moved or deleted since it was opened)");
      }
      h5::File file = h5::open_file(actual, /*writable=*/false);
      return fn(file.get());
    } catch (const Error& e) {
      h5::rethrow_with_context(e, "reading " + what + " from '" + actual.string() + "'");
    }
  }
};

namespace {

void require_dataset(hid_t file, const std::string& path) {
  if (!h5::exists(file, path)) {
    throw UsageError("there is no dataset '" + path +
                     "' (the phase that writes it was disabled or did not finish)");
  }
}

h5::Object open_existing(hid_t file, const std::string& path) {
  if (!h5::exists(file, path)) throw UsageError("there is no object '" + path + "'");
  return h5::open_object(file, path);
}

template <class Row>
std::vector<Row> read_rows(hid_t file, const char* path,
                           const std::vector<tables::Field<Row>>& fields) {
  if (!h5::exists(file, path)) return {};
  return tables::from_table(h5::read_table(file, path), fields);
}

}  // namespace

RunFile RunFile::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw UsageError("run file '" + name +
                     "' does not exist; check the path (a run that is still going, or that died, "
                     "is '<name>.h5.partial')");
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw UsageError("'" + name + "' is a folder; give a shakedown run file (.h5)");
  }
  if (::access(path.c_str(), R_OK) != 0) {
    throw UsageError("cannot read '" + name + "': " + std::strerror(errno) +
                     " (check the file's permissions)");
  }
  h5::File file;
  try {
    file = h5::open_file(path, /*writable=*/false);
  } catch (const Error& e) {
    if (h5::is_hdf5(path) == 0) {
      throw UsageError("'" + name + "' is not an HDF5 file; give a shakedown run file (.h5)");
    }
    // HDF5's own words ("truncated file: eof = ..."), not the call that failed.
    std::string why = e.what();
    if (const auto at = why.find(" failed: "); at != std::string::npos) why.erase(0, at + 9);
    throw UsageError("cannot open '" + name + "' as an HDF5 file: " + why +
                     "; the file may be damaged or truncated");
  }
  std::int64_t version = 0;
  try {
    h5::Object root = h5::open_object(file.get(), schema::kRoot);
    if (!h5::has_attr(root.get(), schema::kAttrSchemaVersion)) {
      throw UsageError("it is an HDF5 file but not a shakedown run file (no '" +
                       std::string(schema::kAttrSchemaVersion) + "' attribute on /)");
    }
    version = h5::read_attr_int64(root.get(), schema::kAttrSchemaVersion);
  } catch (const Error& e) {
    h5::rethrow_with_context(e, "'" + name + "'");
  }
  if (version > schema::kSchemaVersion || version < schema::kOldestReadableSchema) {
    std::string shakedown = "?";
    try {
      h5::Object root = h5::open_object(file.get(), schema::kRoot);
      shakedown = h5::read_attr_string(root.get(), schema::kAttrShakedownVersion);
    } catch (const Error&) {
    }
    throw UsageError("'" + name + "' uses file schema " + std::to_string(version) +
                     " (written by shakedown " + shakedown + "); this shakedown (" +
                     SHAKEDOWN_VERSION + ") reads schemas " +
                     std::to_string(schema::kOldestReadableSchema) + " to " +
                     std::to_string(schema::kSchemaVersion) + ": read it with shakedown " +
                     shakedown + (version > schema::kSchemaVersion ? " or newer" : ""));
  }
  auto open_file = std::make_shared<OpenFile>();
  if (!still_written(path)) open_file->held = std::move(file);
  return RunFile(path, static_cast<int>(version), std::move(open_file));
}

RunMeta RunFile::meta() const {
  return file_->use(path_, "the run attributes", [](hid_t file) {
    h5::Object root = h5::open_object(file, schema::kRoot);
    const hid_t r = root.get();
    // Attributes a future writer may drop read as empty rather than failing the whole report.
    auto text = [r](const char* name) {
      return h5::has_attr(r, name) ? h5::read_attr_string(r, name) : std::string();
    };
    auto number = [r](const char* name) {
      return h5::has_attr(r, name) ? static_cast<int>(h5::read_attr_int64(r, name)) : 0;
    };
    RunMeta m;
    m.schema_version = number(schema::kAttrSchemaVersion);
    m.shakedown_version = text(schema::kAttrShakedownVersion);
    m.command_line = text(schema::kAttrCommandLine);
    m.config_yaml = text(schema::kAttrConfigYaml);
    m.started_utc = text(schema::kAttrStartedUtc);
    m.finished_utc = text(schema::kAttrFinishedUtc);
    m.status = text(schema::kAttrStatus);
    m.abort_phase = text(schema::kAttrAbortPhase);
    m.world_size = number(schema::kAttrWorldSize);
    m.node_count = number(schema::kAttrNodeCount);
    m.virtual_nodes = number(schema::kAttrVirtualNodes);
    m.backend = text(schema::kAttrBackend);
    return m;
  });
}

std::vector<RankInfo> RunFile::ranks() const {
  return file_->use(path_, schema::ranks::kPath, [](hid_t file) {
    return read_rows(file, schema::ranks::kPath, tables::rank_fields());
  });
}

std::vector<CheckResult> RunFile::placement_checks() const {
  return file_->use(path_, schema::kPlacementChecks, [](hid_t file) {
    return read_rows(file, schema::kPlacementChecks, tables::check_fields());
  });
}

std::optional<AnalysisRecord> RunFile::analysis() const {
  return file_->use(path_, schema::kAnalysisGroup, [](hid_t file) -> std::optional<AnalysisRecord> {
    if (!h5::exists(file, schema::kAnalysisGroup) || !h5::exists(file, schema::kAnalysisChecks)) {
      return std::nullopt;
    }
    AnalysisRecord a;
    a.findings = read_rows(file, schema::kAnalysisChecks, tables::finding_fields());
    h5::Object g = h5::open_object(file, schema::kAnalysisGroup);
    a.verdict = h5::read_attr_string(g.get(), schema::kAttrVerdict);
    a.exit_code = static_cast<int>(h5::read_attr_int64(g.get(), schema::kAttrExitCode));
    a.tested = h5::read_attr_string(g.get(), schema::kAttrTested);
    a.passed = static_cast<int>(h5::read_attr_int64(g.get(), schema::kAttrPassed));
    a.warned = static_cast<int>(h5::read_attr_int64(g.get(), schema::kAttrWarned));
    a.failed = static_cast<int>(h5::read_attr_int64(g.get(), schema::kAttrFailed));
    a.skipped = static_cast<int>(h5::read_attr_int64(g.get(), schema::kAttrSkipped));
    return a;
  });
}

std::vector<NodeInventory> RunFile::inventory() const {
  return file_->use(path_, schema::kInventoryGroup, [](hid_t file) {
    std::vector<NodeInventory> nodes = read_rows(file, schema::nodes::kPath, tables::node_fields());
    std::map<int, std::size_t> by_index;
    for (std::size_t i = 0; i < nodes.size(); ++i) by_index.emplace(nodes[i].node_index, i);
    for (tables::NodeGpu& row : read_rows(file, schema::gpus::kPath, tables::gpu_fields())) {
      if (auto it = by_index.find(row.node_index); it != by_index.end()) {
        nodes[it->second].gpus.push_back(std::move(row.gpu));
      }
    }
    for (tables::NodeNic& row : read_rows(file, schema::nics::kPath, tables::nic_fields())) {
      if (auto it = by_index.find(row.node_index); it != by_index.end()) {
        nodes[it->second].nics.push_back(std::move(row.nic));
      }
    }
    for (tables::NodeFactRow& row : read_rows(file, schema::facts::kPath, tables::fact_fields())) {
      if (auto it = by_index.find(row.node_index); it != by_index.end()) {
        nodes[it->second].facts.push_back(std::move(row.fact));
      }
    }
    return nodes;
  });
}

std::vector<double> RunFile::clock_offsets_us() const {
  const std::string path = schema::kClockOffsetUs.path(schema::kClockGroup);
  return file_->use(path_, path, [&](hid_t file) {
    return h5::exists(file, path) ? h5::read_dataset_double(file, path) : std::vector<double>{};
  });
}

std::vector<double> RunFile::clock_rtt_us() const {
  const std::string path = schema::kClockRttUs.path(schema::kClockGroup);
  return file_->use(path_, path, [&](hid_t file) {
    return h5::exists(file, path) ? h5::read_dataset_double(file, path) : std::vector<double>{};
  });
}

bool RunFile::has(const std::string& path) const {
  const std::string p = h5::absolute_path(path);
  return file_->use(path_, "'" + p + "'", [&](hid_t file) { return h5::exists(file, p); });
}

std::vector<std::string> RunFile::children(const std::string& path) const {
  const std::string p = h5::absolute_path(path);
  return file_->use(path_, "members of '" + p + "'", [&](hid_t file) {
    std::vector<std::string> names;
    if (!h5::exists(file, p)) return names;
    h5::Object obj = h5::open_object(file, p);
    if (H5Iget_type(obj.get()) != H5I_GROUP) return names;
    auto collect = [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
      static_cast<std::vector<std::string>*>(out)->emplace_back(name);
      return 0;
    };
    hsize_t index = 0;
    SD_H5_CHECK(H5Literate(obj.get(), H5_INDEX_NAME, H5_ITER_INC, &index, collect, &names));
    return names;
  });
}

bool RunFile::has_attr(const std::string& path, const std::string& name) const {
  const std::string p = h5::absolute_path(path);
  return file_->use(path_, "attribute '" + name + "' of '" + p + "'", [&](hid_t file) {
    if (!h5::exists(file, p)) return false;
    h5::Object obj = h5::open_object(file, p);
    return h5::has_attr(obj.get(), name);
  });
}

std::vector<double> RunFile::read_doubles(const std::string& path,
                                          std::vector<std::uint64_t>* dims) const {
  const std::string p = h5::absolute_path(path);
  return file_->use(path_, "'" + p + "'", [&](hid_t file) {
    require_dataset(file, p);
    return h5::read_dataset_double(file, p, dims);
  });
}

std::vector<double> RunFile::read_doubles_rows(const std::string& path, std::uint64_t first,
                                               std::uint64_t count,
                                               std::vector<std::uint64_t>* dims) const {
  const std::string p = h5::absolute_path(path);
  return file_->use(path_, "'" + p + "'", [&](hid_t file) {
    require_dataset(file, p);
    return h5::read_dataset_double_rows(file, p, first, count, dims);
  });
}

std::vector<std::int64_t> RunFile::read_int64(const std::string& path,
                                              std::vector<std::uint64_t>* dims) const {
  const std::string p = h5::absolute_path(path);
  return file_->use(path_, "'" + p + "'", [&](hid_t file) {
    require_dataset(file, p);
    return h5::read_dataset_int64(file, p, dims);
  });
}

std::vector<std::uint64_t> RunFile::read_uint64(const std::string& path,
                                                std::vector<std::uint64_t>* dims) const {
  const std::string p = h5::absolute_path(path);
  return file_->use(path_, "'" + p + "'", [&](hid_t file) {
    require_dataset(file, p);
    return h5::read_dataset_uint64(file, p, dims);
  });
}

std::string RunFile::attr_string(const std::string& path, const std::string& name) const {
  const std::string p = h5::absolute_path(path);
  return file_->use(path_, "attribute '" + name + "' of '" + p + "'", [&](hid_t file) {
    h5::Object obj = open_existing(file, p);
    return h5::read_attr_string(obj.get(), name);
  });
}

double RunFile::attr_double(const std::string& path, const std::string& name) const {
  const std::string p = h5::absolute_path(path);
  return file_->use(path_, "attribute '" + name + "' of '" + p + "'", [&](hid_t file) {
    h5::Object obj = open_existing(file, p);
    return h5::read_attr_double(obj.get(), name);
  });
}

std::int64_t RunFile::attr_int64(const std::string& path, const std::string& name) const {
  const std::string p = h5::absolute_path(path);
  return file_->use(path_, "attribute '" + name + "' of '" + p + "'", [&](hid_t file) {
    h5::Object obj = open_existing(file, p);
    return h5::read_attr_int64(obj.get(), name);
  });
}

}  // namespace shakedown
