#include "record/writer.hpp"

#include <system_error>
#include <utility>

#include "record/h5.hpp"
#include "record/schema.hpp"
#include "record/tables.hpp"

namespace shakedown {

namespace {

void write_root_attrs(hid_t file, const RunMeta& meta) {
  h5::Group root = h5::ensure_group(file, schema::kRoot);
  const hid_t g = root.get();
  h5::write_attr(g, schema::kAttrSchemaVersion, std::int64_t{schema::kSchemaVersion});
  h5::write_attr(g, schema::kAttrShakedownVersion, meta.shakedown_version);
  h5::write_attr(g, schema::kAttrCommandLine, meta.command_line);
  h5::write_attr(g, schema::kAttrConfigYaml, meta.config_yaml);
  h5::write_attr(g, schema::kAttrStartedUtc,
                 meta.started_utc.empty() ? utc_now_iso8601() : meta.started_utc);
  h5::write_attr(g, schema::kAttrFinishedUtc, std::string_view{});
  h5::write_attr(g, schema::kAttrStatus, std::string_view{schema::kStatusRunning});
  h5::write_attr(g, schema::kAttrWorldSize, std::int64_t{meta.world_size});
  h5::write_attr(g, schema::kAttrNodeCount, std::int64_t{meta.node_count});
  h5::write_attr(g, schema::kAttrVirtualNodes, std::int64_t{meta.virtual_nodes});
  h5::write_attr(g, schema::kAttrBackend, meta.backend);
}

}  // namespace

RunWriter::RunWriter(std::filesystem::path final_path, std::filesystem::path partial_path,
                     int compression)
    : final_path_(std::move(final_path)),
      partial_path_(std::move(partial_path)),
      compression_(compression) {}

RunWriter::RunWriter(RunWriter&& other) noexcept
    : final_path_(std::move(other.final_path_)),
      partial_path_(std::move(other.partial_path_)),
      compression_(other.compression_),
      state_(std::exchange(other.state_, State::kMovedFrom)),
      io_error_(std::move(other.io_error_)),
      open_file_(std::exchange(other.open_file_, std::nullopt)),
      append_cache_(std::move(other.append_cache_)),
      held_(std::exchange(other.held_, false)) {}

RunWriter& RunWriter::operator=(RunWriter&& other) noexcept {
  if (this != &other) {
    write_waiting_rows_unchecked();
    final_path_ = std::move(other.final_path_);
    partial_path_ = std::move(other.partial_path_);
    compression_ = other.compression_;
    state_ = std::exchange(other.state_, State::kMovedFrom);
    io_error_ = std::move(other.io_error_);
    append_cache_.clear();
    open_file_ = std::exchange(other.open_file_, std::nullopt);
    append_cache_ = std::move(other.append_cache_);
    held_ = std::exchange(other.held_, false);
  }
  return *this;
}

RunWriter::~RunWriter() {
  write_waiting_rows_unchecked();
  append_cache_.clear();  // before the file's own id closes
}

void RunWriter::write_waiting_rows_unchecked() noexcept {
  if (state_ != State::kOpen || !open_file_) return;
  try {
    append_cache_.write_pending();
  } catch (...) {  // NOLINT(bugprone-empty-catch): the file is being given up
  }
}

void RunWriter::require_rank(const schema::DatasetSpec& spec, const std::string& group_path,
                             std::size_t rank) {
  if (rank != spec.rank()) {
    throw InternalError("writing " + spec.path(group_path) + ": " + std::to_string(rank) +
                        " dimensions, but the schema declares " + std::to_string(spec.rank()) +
                        " (" + std::string(spec.dims) + ")");
  }
}

void RunWriter::require_open(const std::string& what) const {
  if (state_ == State::kMovedFrom) {
    throw InternalError("RunWriter: " + what + " on a moved-from writer");
  }
  if (state_ == State::kFinished) {
    throw InternalError("RunWriter: " + what + " after finish(); '" + final_path_.string() +
                        "' is closed for writing");
  }
  if (state_ == State::kBroken) {
    throw h5::IoError("cannot write the run file '" + partial_path_.string() + "': " + io_error_ +
                          " (an earlier write failed; nothing more is written to it)",
                      "", io_error_);
  }
}

void RunWriter::fail_io(const h5::IoError& e, const std::string& what) {
  state_ = State::kBroken;
  held_ = false;
  if (batch_depth_ == 0) {  // a batch drops it when it ends
    append_cache_.clear();
    open_file_.reset();
  }
  io_error_ = e.os_error();
  // The system's words are the cause; HDF5's error stack under them (a dozen cache and flush
  // calls) would only bury it, so the detail says what was being written, nothing more.
  throw h5::IoError("cannot write the run file '" + partial_path_.string() + "': " + io_error_,
                    "while writing " + what, io_error_);
}

RunWriter RunWriter::create(const std::filesystem::path& final_path, const RunMeta& meta,
                            int compression) {
  if (final_path.empty()) throw UsageError("the run file path is empty; give an output path");
  if (compression < 0 || compression > 9) {
    throw UsageError("HDF5 compression level " + std::to_string(compression) +
                     " is out of range; use 0 (off) to 9");
  }
  std::filesystem::path partial = final_path;
  partial += schema::kPartialSuffix;
  std::error_code ec;
  if (std::filesystem::is_directory(final_path, ec)) {
    throw UsageError("the run file '" + final_path.string() +
                     "' is a folder; name a file in it (e.g. " + (final_path / "run.h5").string() +
                     "), or give no file name and set output.dir to that folder");
  }
  if (std::filesystem::exists(final_path, ec)) {
    throw UsageError("refusing to overwrite existing run file '" + final_path.string() +
                     "'; choose another output name or move the old file away");
  }
  if (std::filesystem::exists(partial, ec)) {
    throw UsageError("refusing to overwrite '" + partial.string() +
                     "' (another run is writing it, or an earlier run died before finishing); "
                     "move or delete it, or choose another output name");
  }
  const std::filesystem::path parent = final_path.parent_path();
  // The folders made here, deepest first: removed again (when still empty) if the file cannot be
  // created, so that a failed start leaves nothing behind.
  std::vector<std::filesystem::path> made;
  for (std::filesystem::path p = parent; !p.empty() && !std::filesystem::exists(p, ec);
       p = p.parent_path()) {
    made.push_back(p);
    if (p == p.parent_path()) break;
  }
  auto unmake = [&] {
    for (const std::filesystem::path& p : made) {
      if (!std::filesystem::remove(p, ec)) break;  // not empty (or not ours): stop there
    }
  };
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      const std::error_code why = ec;
      unmake();
      ec = why;
      throw RuntimeFault("cannot create output folder '" + parent.string() + "' for run file '" +
                         final_path.string() + "': " + ec.message() +
                         "; choose a writable output folder");
    }
  }

  try {
    h5::File file = h5::create_file(partial);
    try {
      write_root_attrs(file.get(), meta);
      h5::flush(file.get());
      file.close();
    } catch (...) {
      file.reset();
      std::filesystem::remove(partial, ec);  // a file without root attributes is of no use
      throw;
    }
  } catch (const h5::IoError& e) {
    std::filesystem::remove(partial, ec);  // ours: it did not exist before (checked above)
    unmake();
    throw h5::IoError("cannot create the run file '" + partial.string() + "': " + e.os_error(),
                      std::string(e.what()) + "; " + e.detail(), e.os_error());
  } catch (const Error& e) {
    std::filesystem::remove(partial, ec);
    unmake();
    h5::rethrow_with_context(e, "cannot create run file '" + partial.string() + "' (is folder '" +
                                    (parent.empty() ? std::string(".") : parent.string()) +
                                    "' writable?)");
  }
  return RunWriter(final_path, std::move(partial), compression);
}

void RunWriter::write_topology(const std::vector<RankInfo>& ranks,
                               const std::vector<CheckResult>& placement_checks) {
  require_open("write_topology");
  const h5::Table rank_table = tables::to_table(ranks, tables::rank_fields());
  const h5::Table check_table = tables::to_table(placement_checks, tables::check_fields());
  edit("topology", [&](hid_t file) {
    h5::write_table(file, schema::ranks::kPath, rank_table, compression_);
    h5::write_table(file, schema::kPlacementChecks, check_table, compression_);
  });
}

void RunWriter::write_inventory(const std::vector<NodeInventory>& nodes) {
  require_open("write_inventory");
  std::vector<tables::NodeGpu> gpus;
  std::vector<tables::NodeNic> nics;
  std::vector<tables::NodeFactRow> facts;
  for (const NodeInventory& node : nodes) {
    for (const GpuInfo& gpu : node.gpus) gpus.push_back({node.node_index, gpu});
    for (const NicInfo& nic : node.nics) nics.push_back({node.node_index, nic});
    for (const NodeFact& fact : node.facts) facts.push_back({node.node_index, fact});
  }
  const h5::Table node_table = tables::to_table(nodes, tables::node_fields());
  const h5::Table gpu_table = tables::to_table(gpus, tables::gpu_fields());
  const h5::Table nic_table = tables::to_table(nics, tables::nic_fields());
  const h5::Table fact_table = tables::to_table(facts, tables::fact_fields());
  edit("inventory", [&](hid_t file) {
    h5::write_table(file, schema::nodes::kPath, node_table, compression_);
    h5::write_table(file, schema::gpus::kPath, gpu_table, compression_);
    h5::write_table(file, schema::nics::kPath, nic_table, compression_);
    h5::write_table(file, schema::facts::kPath, fact_table, compression_);
  });
}

void RunWriter::write_clock(std::span<const double> offset_us, std::span<const double> rtt_us) {
  require_open("write_clock");
  if (offset_us.size() != rtt_us.size()) {
    throw InternalError("write_clock: " + std::to_string(offset_us.size()) + " offsets but " +
                        std::to_string(rtt_us.size()) + " round trips; both are [world]");
  }
  edit("clock offsets", [&](hid_t file) {
    h5::write_dataset(file, schema::kClockOffsetUs.path(schema::kClockGroup), offset_us,
                      {offset_us.size()}, compression_);
    h5::write_dataset(file, schema::kClockRttUs.path(schema::kClockGroup), rtt_us, {rtt_us.size()},
                      compression_);
  });
}

void RunWriter::write_analysis(const AnalysisRecord& a) {
  require_open("write_analysis");
  const h5::Table table = tables::to_table(a.findings, tables::finding_fields());
  edit("the analysis", [&](hid_t file) {
    if (h5::exists(file, schema::kAnalysisGroup)) {
      throw InternalError("write_analysis: " + std::string(schema::kAnalysisGroup) +
                          " is written once, and it exists already");
    }
    h5::write_table(file, schema::kAnalysisChecks, table, compression_);
    h5::Group g = h5::ensure_group(file, schema::kAnalysisGroup);
    h5::write_attr(g.get(), schema::kAttrVerdict, a.verdict);
    h5::write_attr(g.get(), schema::kAttrExitCode, std::int64_t{a.exit_code});
    h5::write_attr(g.get(), schema::kAttrTested, a.tested);
    h5::write_attr(g.get(), schema::kAttrPassed, std::int64_t{a.passed});
    h5::write_attr(g.get(), schema::kAttrWarned, std::int64_t{a.warned});
    h5::write_attr(g.get(), schema::kAttrFailed, std::int64_t{a.failed});
    h5::write_attr(g.get(), schema::kAttrSkipped, std::int64_t{a.skipped});
  });
}

void RunWriter::write_array(const std::string& path, std::span<const double> data,
                            const std::vector<std::uint64_t>& dims) {
  require_open("write_array " + path);
  edit("'" + path + "'", [&](hid_t file) {
    h5::write_dataset(file, h5::absolute_path(path), data, dims, compression_);
  });
}

void RunWriter::write_array(const std::string& path, std::span<const float> data,
                            const std::vector<std::uint64_t>& dims) {
  require_open("write_array " + path);
  edit("'" + path + "'", [&](hid_t file) {
    h5::write_dataset(file, h5::absolute_path(path), data, dims, compression_);
  });
}

void RunWriter::write_array(const std::string& path, std::span<const std::int64_t> data,
                            const std::vector<std::uint64_t>& dims) {
  require_open("write_array " + path);
  edit("'" + path + "'", [&](hid_t file) {
    h5::write_dataset(file, h5::absolute_path(path), data, dims, compression_);
  });
}

void RunWriter::write_array(const std::string& path, std::span<const std::uint64_t> data,
                            const std::vector<std::uint64_t>& dims) {
  require_open("write_array " + path);
  edit("'" + path + "'", [&](hid_t file) {
    h5::write_dataset(file, h5::absolute_path(path), data, dims, compression_);
  });
}

void RunWriter::edit(const std::string& what, const std::function<void(hid_t)>& fn) {
  try {
    if (open_file_) {
      fn(open_file_->get());
      if (batch_depth_ == 0) flush_or_defer();  // a batch flushes once, at its end
      return;
    }
    h5::File file = h5::open_file(partial_path_, /*writable=*/true);
    fn(file.get());
    h5::flush(file.get());
    file.close();
  } catch (const h5::IoError& e) {
    fail_io(e, what);
  } catch (const Error& e) {
    h5::rethrow_with_context(e, "writing " + what + " to '" + partial_path_.string() + "'");
  }
}

void RunWriter::flush_or_defer() {
  if (defer_flushes_ && held_) {
    unflushed_ = true;
    return;
  }
  append_cache_.write_pending();
  h5::flush(open_file_->get());
  unflushed_ = false;
}

void RunWriter::flush() {
  if (!unflushed_ || !open_file_ || state_ != State::kOpen) return;
  try {
    append_cache_.write_pending();
    h5::flush(open_file_->get());
    unflushed_ = false;
  } catch (const h5::IoError& e) {
    fail_io(e, "the rows written last");
  }
}

void RunWriter::open_for(const std::string& what) {
  if (open_file_) return;
  try {
    open_file_.emplace(h5::open_file(partial_path_, /*writable=*/true));
  } catch (const h5::IoError& e) {
    fail_io(e, what);
  } catch (const Error& e) {
    h5::rethrow_with_context(e, "opening '" + partial_path_.string() + "' for writing");
  }
}

void RunWriter::close_unless_held(const std::string& what) {
  if (held_ || batch_depth_ > 0 || !open_file_) return;
  try {
    append_cache_.write_pending();
    append_cache_.clear();
    h5::flush(open_file_->get());
    unflushed_ = false;
    open_file_->close();
    open_file_.reset();
  } catch (const h5::IoError& e) {
    open_file_.reset();
    fail_io(e, what);
  }
}

void RunWriter::batch(const std::function<void()>& fn) {
  require_open("a batch of writes");
  if (batch_depth_ > 0) {
    fn();
    return;
  }
  open_for("a batch of writes");
  ++batch_depth_;
  struct End {
    RunWriter& w;
    ~End() {
      --w.batch_depth_;
      if (!w.held_ || w.state_ != State::kOpen) {
        w.append_cache_.clear();
        w.open_file_.reset();
      }
    }
  } end{*this};
  fn();  // its writes go through edit(), which reports their failures
  try {
    if (held_) {
      flush_or_defer();
    } else {
      append_cache_.write_pending();
      h5::flush(open_file_->get());
      append_cache_.clear();
      open_file_->close();
    }
  } catch (const h5::IoError& e) {
    fail_io(e, "a batch of writes");
  }
}

void RunWriter::hold_open() {
  require_open("hold_open");
  open_for("holding the file open");
  held_ = true;
}

void RunWriter::release() {
  if (!held_) return;
  held_ = false;
  if (state_ == State::kOpen) {
    close_unless_held("closing the file after a held stretch");
  } else {
    append_cache_.clear();
    open_file_.reset();
  }
}

void RunWriter::append_rows(const std::string& path, std::span<const double> rows,
                            const std::vector<std::uint64_t>& row_dims, std::uint64_t chunk_rows) {
  require_open("append_rows " + path);
  edit("rows of '" + path + "'", [&](hid_t file) {
    h5::append_rows(file, h5::absolute_path(path), rows, row_dims, compression_,
                    open_file_ ? &append_cache_ : nullptr, chunk_rows);
  });
}

void RunWriter::append_rows(const std::string& path, std::span<const float> rows,
                            const std::vector<std::uint64_t>& row_dims, std::uint64_t chunk_rows) {
  require_open("append_rows " + path);
  edit("rows of '" + path + "'", [&](hid_t file) {
    h5::append_rows(file, h5::absolute_path(path), rows, row_dims, compression_,
                    open_file_ ? &append_cache_ : nullptr, chunk_rows);
  });
}

void RunWriter::append_rows(const std::string& path, std::span<const std::int64_t> rows,
                            const std::vector<std::uint64_t>& row_dims, std::uint64_t chunk_rows) {
  require_open("append_rows " + path);
  edit("rows of '" + path + "'", [&](hid_t file) {
    h5::append_rows(file, h5::absolute_path(path), rows, row_dims, compression_,
                    open_file_ ? &append_cache_ : nullptr, chunk_rows);
  });
}

void RunWriter::append_rows(const std::string& path, std::span<const std::uint64_t> rows,
                            const std::vector<std::uint64_t>& row_dims, std::uint64_t chunk_rows) {
  require_open("append_rows " + path);
  edit("rows of '" + path + "'", [&](hid_t file) {
    h5::append_rows(file, h5::absolute_path(path), rows, row_dims, compression_,
                    open_file_ ? &append_cache_ : nullptr, chunk_rows);
  });
}

namespace {

// Runs `write(object_id)` on the object at `path`, creating a group there first when missing.
template <class Write>
void on_object(hid_t file, const std::string& path, Write&& write) {
  const std::string p = h5::absolute_path(path);
  if (!h5::exists(file, p)) (void)h5::ensure_group(file, p);
  h5::Object obj = h5::open_object(file, p);
  write(obj.get());
}

}  // namespace

void RunWriter::set_attr(const std::string& object_path, const std::string& name,
                         std::string_view value) {
  require_open("set_attr " + name);
  edit("attribute '" + name + "' of '" + object_path + "'", [&](hid_t file) {
    on_object(file, object_path, [&](hid_t obj) { h5::write_attr(obj, name, value); });
  });
}

void RunWriter::set_attr(const std::string& object_path, const std::string& name, double value) {
  require_open("set_attr " + name);
  edit("attribute '" + name + "' of '" + object_path + "'", [&](hid_t file) {
    on_object(file, object_path, [&](hid_t obj) { h5::write_attr(obj, name, value); });
  });
}

void RunWriter::set_attr(const std::string& object_path, const std::string& name,
                         std::int64_t value) {
  require_open("set_attr " + name);
  edit("attribute '" + name + "' of '" + object_path + "'", [&](hid_t file) {
    on_object(file, object_path, [&](hid_t obj) { h5::write_attr(obj, name, value); });
  });
}

void RunWriter::set_attr(const std::string& object_path, const std::string& name,
                         std::uint64_t value) {
  require_open("set_attr " + name);
  edit("attribute '" + name + "' of '" + object_path + "'", [&](hid_t file) {
    on_object(file, object_path, [&](hid_t obj) { h5::write_attr(obj, name, value); });
  });
}

void RunWriter::set_status(const std::string& status) {
  require_open("set_status");
  if (!is_run_status(status)) {
    throw InternalError("RunWriter::set_status: '" + status +
                        "' is not a run status (running, complete, aborted)");
  }
  const std::string finished = status == schema::kStatusRunning ? "" : utc_now_iso8601();
  edit("status '" + status + "'", [&](hid_t file) {
    h5::Group root = h5::ensure_group(file, schema::kRoot);
    h5::write_attr(root.get(), schema::kAttrStatus, status);
    h5::write_attr(root.get(), schema::kAttrFinishedUtc, finished);
  });
}

void RunWriter::finish(const std::string& status) {
  require_open("finish");
  if (status != schema::kStatusComplete && status != schema::kStatusAborted) {
    throw InternalError("RunWriter::finish: status must be complete or aborted, not '" + status +
                        "'");
  }
  set_status(status);
  release();
  std::error_code ec;
  if (std::filesystem::exists(final_path_, ec)) {
    throw RuntimeFault("cannot rename '" + partial_path_.string() + "' to '" +
                       final_path_.string() +
                       "': that file appeared during the run; the run's "
                       "record stays in '" +
                       partial_path_.string() + "'");
  }
  std::filesystem::rename(partial_path_, final_path_, ec);
  if (ec) {
    throw RuntimeFault("cannot rename '" + partial_path_.string() + "' to '" +
                       final_path_.string() + "': " + ec.message() +
                       "; the run's record stays in the .partial file");
  }
  state_ = State::kFinished;
}

}  // namespace shakedown
