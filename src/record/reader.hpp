#pragma once
// RunFile: read-only access to a run file (finished `.h5` or a `.h5.partial` still being written or
// left by a run that died). The analysis and every reporter read runs through this class only.
//
// Each accessor opens the file read-only, reads and closes it again: a RunFile never holds the
// file open, so it can watch a .partial that rank 0 keeps writing (in this process or another),
// and when the .partial has been renamed meanwhile it reads the finished file instead.
// Missing optional parts (a run aborted before inventory, a phase that did not run) give empty
// vectors from the record accessors; the generic read_* accessors throw UsageError instead.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "record/findings.hpp"
#include "record/run_meta.hpp"
#include "record/schema.hpp"
#include "topology/rank_info.hpp"

namespace shakedown {

class RunFile {
 public:
  // UsageError naming the file when it is missing, not HDF5, not a shakedown run file (no
  // schema_version on /) or written by a newer shakedown (schema_version > kSchemaVersion).
  static RunFile open(const std::filesystem::path& path);

  const std::filesystem::path& path() const noexcept { return path_; }
  int schema_version() const noexcept { return schema_version_; }

  RunMeta meta() const;
  std::vector<RankInfo> ranks() const;  // the node's NICs are in inventory()
  std::vector<CheckResult> placement_checks() const;
  std::vector<NodeInventory> inventory() const;  // gpus and nics attached to their node
  std::vector<double> clock_offsets_us() const;
  std::vector<double> clock_rtt_us() const;
  // What the run concluded (/analysis), or nothing when the run did not complete.
  std::optional<AnalysisRecord> analysis() const;

  // True when the group or dataset at `path` exists ("/" always does).
  bool has(const std::string& path) const;
  bool has_attr(const std::string& path, const std::string& name) const;
  // Names of the members of the group at `path`, in name order; empty when it is not a group.
  std::vector<std::string> children(const std::string& path) const;
  // Any numeric dataset, converted, row-major; `dims` gets its shape. UsageError when missing.
  std::vector<double> read_doubles(const std::string& path,
                                   std::vector<std::uint64_t>* dims = nullptr) const;
  std::vector<std::int64_t> read_int64(const std::string& path,
                                       std::vector<std::uint64_t>* dims = nullptr) const;
  std::vector<std::uint64_t> read_uint64(const std::string& path,
                                         std::vector<std::uint64_t>* dims = nullptr) const;
  // Rows [first, first + count) of a dataset's first dimension (fewer when it has fewer), so a
  // reader of one message size does not decompress the whole sweep; `dims` gets the shape of what
  // was read ([count, ...]). UsageError when missing or a scalar.
  std::vector<double> read_doubles_rows(const std::string& path, std::uint64_t first,
                                        std::uint64_t count,
                                        std::vector<std::uint64_t>* dims = nullptr) const;
  // The descriptor's dataset in the group instance `group_path`, as its own element type
  // (float32 datasets as double).
  template <class T>
  std::vector<std::conditional_t<std::is_same_v<T, float>, double, T>> read(
      const std::string& group_path, const schema::Dataset<T>& d,
      std::vector<std::uint64_t>* dims = nullptr) const {
    if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
      return read_doubles(d.path(group_path), dims);
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
      return read_int64(d.path(group_path), dims);
    } else {
      return read_uint64(d.path(group_path), dims);
    }
  }
  template <class T>
  bool has(const std::string& group_path, const schema::Dataset<T>& d) const {
    return has(d.path(group_path));
  }
  // Scalar attributes of the object at `path`. UsageError when missing or of another type.
  std::string attr_string(const std::string& path, const std::string& name) const;
  double attr_double(const std::string& path, const std::string& name) const;
  std::int64_t attr_int64(const std::string& path, const std::string& name) const;

 private:
  struct OpenFile;  // the HDF5 file id (reader.cpp: HDF5 stays out of this header)
  RunFile(std::filesystem::path path, int schema_version, std::shared_ptr<const OpenFile> file)
      : path_(std::move(path)), schema_version_(schema_version), file_(std::move(file)) {}

  std::filesystem::path path_;
  int schema_version_ = 0;
  // Held open while a copy lives, unless the file is still being written (reader.cpp).
  std::shared_ptr<const OpenFile> file_;
};

}  // namespace shakedown
