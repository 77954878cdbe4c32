#pragma once
// RunWriter: rank 0's writer of the run's HDF5 file (docs/architecture.md "The run file").
//
// The file is `<final>.partial` until finish() renames it. Every write method opens the file,
// writes, flushes and closes it again, so a crash (or a kill by the scheduler) at any later point
// leaves every completed write readable. Not thread-safe: the caller serialises. No MPI here: the
// caller gathers the per-rank rows first.
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "record/findings.hpp"
#include "record/h5.hpp"
#include "record/run_meta.hpp"
#include "record/schema.hpp"
#include "topology/rank_info.hpp"

namespace shakedown {

class RunWriter {
 public:
  // Creates `<final_path>.partial` (and missing parent folders) and writes the root attributes
  // with status "running" (started_utc = now when meta.started_utc is empty).
  // UsageError: final_path or its .partial already exists, compression outside 0..9.
  // RuntimeFault: the folder or the file cannot be created (the message names the path).
  static RunWriter create(const std::filesystem::path& final_path, const RunMeta& meta,
                          int compression);

  RunWriter(RunWriter&& other) noexcept;
  RunWriter& operator=(RunWriter&& other) noexcept;
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;
  // Leaves an unfinished .partial where it is: it is the record of a run that did not end.
  ~RunWriter();

  // /topology/ranks (one row per rank) and /topology/placement_checks.
  void write_topology(const std::vector<RankInfo>& ranks,
                      const std::vector<CheckResult>& placement_checks);
  // /inventory/nodes, /inventory/gpus and /inventory/nics (rows carry node_index).
  void write_inventory(const std::vector<NodeInventory>& nodes);
  // /clock/offset_us and /clock/rtt_us, [world] each.
  void write_clock(std::span<const double> offset_us, std::span<const double> rtt_us);

  // /analysis/checks (one row per finding) and the verdict attributes on /analysis. Written once,
  // when the run completes (InternalError when /analysis exists already).
  void write_analysis(const AnalysisRecord& analysis);
  // An N-d dataset at `path` (absolute, or relative to "/"), creating missing groups.
  // data.size() must equal the product of dims (InternalError otherwise); a path is written once.
  void write_array(const std::string& path, std::span<const double> data,
                   const std::vector<std::uint64_t>& dims);
  void write_array(const std::string& path, std::span<const float> data,
                   const std::vector<std::uint64_t>& dims);
  void write_array(const std::string& path, std::span<const std::int64_t> data,
                   const std::vector<std::uint64_t>& dims);
  void write_array(const std::string& path, std::span<const std::uint64_t> data,
                   const std::vector<std::uint64_t>& dims);

  // Grows the dataset at `path` (absolute, or relative to "/") by whole rows: shape
  // [N, row_dims...] with N unlimited, so a sweep can store each step (one message size of
  // /collectives/<scope>/<op>/time_us [S, iters, world]) as soon as it is measured and a run that
  // dies later keeps it. The first call creates the dataset (and missing groups); later calls
  // append behind the rows already there. rows.size() must be a multiple of prod(row_dims); the
  // row shape and element type never change for one path; a path made by write_array does not
  // grow (InternalError naming the path for each). RunFile's read_* see [N, row_dims...].
  // `chunk_rows` > 0: chunks of that many rows, for a writer that appends batches of small rows
  // (h5.hpp); 0: one row per chunk, or as many as make 512 bytes.
  void append_rows(const std::string& path, std::span<const double> rows,
                   const std::vector<std::uint64_t>& row_dims, std::uint64_t chunk_rows = 0);
  void append_rows(const std::string& path, std::span<const float> rows,
                   const std::vector<std::uint64_t>& row_dims, std::uint64_t chunk_rows = 0);
  void append_rows(const std::string& path, std::span<const std::int64_t> rows,
                   const std::vector<std::uint64_t>& row_dims, std::uint64_t chunk_rows = 0);
  void append_rows(const std::string& path, std::span<const std::uint64_t> rows,
                   const std::vector<std::uint64_t>& row_dims, std::uint64_t chunk_rows = 0);

  // The descriptor's dataset in the group instance `group_path` (schema.hpp): the element type
  // is the descriptor's (a mismatch does not compile) and the number of dimensions must be its
  // (InternalError naming the path otherwise).
  template <class T>
  void write_array(const std::string& group_path, const schema::Dataset<T>& d,
                   std::type_identity_t<std::span<const T>> data,
                   const std::vector<std::uint64_t>& dims) {
    require_rank(d.spec, group_path, dims.size());
    write_array(d.path(group_path), data, dims);
  }
  template <class T>
  void append_rows(const std::string& group_path, const schema::Dataset<T>& d,
                   std::type_identity_t<std::span<const T>> rows,
                   const std::vector<std::uint64_t>& row_dims, std::uint64_t chunk_rows = 0) {
    require_rank(d.spec, group_path, row_dims.size() + 1);
    append_rows(d.path(group_path), rows, row_dims, chunk_rows);
  }

  // A scalar attribute on `object_path` (a group is created there when nothing exists yet).
  // An attribute of the same name is replaced.
  void set_attr(const std::string& object_path, const std::string& name, std::string_view value);
  void set_attr(const std::string& object_path, const std::string& name, double value);
  void set_attr(const std::string& object_path, const std::string& name, std::int64_t value);
  void set_attr(const std::string& object_path, const std::string& name, std::uint64_t value);
  // Other integer types (int, bool, size_t...) go to the int64/uint64 overloads.
  template <std::integral T>
  requires(!std::same_as<T, std::int64_t> &&
           !std::same_as<T, std::uint64_t>) void set_attr(const std::string& object_path,
                                                          const std::string& name, T value) {
    if constexpr (std::is_unsigned_v<T> && !std::same_as<T, bool>) {
      set_attr(object_path, name, static_cast<std::uint64_t>(value));
    } else {
      set_attr(object_path, name, static_cast<std::int64_t>(value));
    }
  }

  // Runs `fn` with the file kept open: the writes it makes share one open, flush and close
  // (many small appends per message size would otherwise each reopen the file). Nested calls
  // join the outer batch.
  void batch(const std::function<void()>& fn);
  // Keeps the file open from now until release() (or finish()): every write and batch still
  // ends with a flush, so what it wrote is on disk and readable by other processes (the
  // superblock has no open-for-write flag: a writer killed while holding leaves a readable
  // file), but the file is not reopened for each one, which costs more than a message size's
  // rows (HDF5 reloads its metadata on every open). For a phase's stretch of many small writes.
  // Readers in this process see the writer's state through the same open file.
  void hold_open();
  void release();  // closes the file (flushed); a no-op when not held
  bool held() const noexcept { return held_; }
  // While held: writes and batches leave their flush to flush() (the recorder's writer thread
  // flushes many small rows at once, on a deadline), and rows appended to a dataset already open
  // wait in memory until then, so each dataset grows once per flush, not once per row
  // (h5::AppendCache::hold_rows). Off: every write ends flushed again.
  void defer_flushes(bool on) noexcept {
    defer_flushes_ = on;
    append_cache_.hold_rows(on);  // only while a file is open: every close writes what waits
  }
  // Writes the rows waiting and flushes what deferred writes left in HDF5's caches; a no-op
  // when nothing waits (errors as a write's: a refused flush breaks the writer).
  void flush();
  bool unflushed() const noexcept { return unflushed_; }

  // Root attribute status ("running" | "complete" | "aborted"; InternalError otherwise) and
  // finished_utc = now ("" again for "running"). The file stays .partial.
  void set_status(const std::string& status);
  // set_status(status) for "complete" or "aborted", then renames .partial to the final path.
  // Refuses (RuntimeFault, .partial kept) when the final path appeared meanwhile.
  void finish(const std::string& status);

  const std::filesystem::path& final_path() const noexcept { return final_path_; }
  const std::filesystem::path& partial_path() const noexcept { return partial_path_; }
  // The file now lives at final_path() and no more writes are accepted.
  bool finished() const noexcept { return state_ == State::kFinished; }
  // A write failed because the system refused it (disk full, quota, I/O error): the file is
  // never opened again by this writer (HDF5 may still hold it after the failed flush), every
  // later write fails with the same cause, and the file keeps status "running"; what was
  // flushed before stays readable. io_error() is the system's message ("" while not broken).
  bool broken() const noexcept { return state_ == State::kBroken; }
  const std::string& io_error() const noexcept { return io_error_; }

 private:
  enum class State { kOpen, kFinished, kBroken, kMovedFrom };
  RunWriter(std::filesystem::path final_path, std::filesystem::path partial_path, int compression);
  // InternalError unless `rank` is the descriptor's number of dimensions.
  static void require_rank(const schema::DatasetSpec& spec, const std::string& group_path,
                           std::size_t rank);
  // InternalError unless the writer is open (not finished, not moved from).
  void require_open(const std::string& what) const;
  // Runs `fn` on the open file: the batch's, or opened, flushed and closed for this call alone.
  // Errors come out with "writing <what> to '<file>'" in front; a refused I/O comes out as
  // h5::IoError "cannot write the run file '<file>': <system message>" and breaks the writer.
  void edit(const std::string& what, const std::function<void(hid_t)>& fn);
  // Marks the writer broken by `e` and throws the user-facing IoError.
  [[noreturn]] void fail_io(const h5::IoError& e, const std::string& what);
  // Opens the file into open_file_ unless it is open already (errors as edit()'s).
  void open_for(const std::string& what);
  // Flushes the open file, or only notes that it waits when flushes are deferred.
  void flush_or_defer();
  // Rows still waiting for a deferred flush go in when the writer ends (or is replaced) without
  // finish(): a run ending on an error keeps what it measured. A failure here is not reported.
  void write_waiting_rows_unchecked() noexcept;
  // Flushes and closes open_file_ unless a batch or a hold keeps it.
  void close_unless_held(const std::string& what);

  std::filesystem::path final_path_;
  std::filesystem::path partial_path_;
  int compression_ = 0;
  State state_ = State::kOpen;
  std::string io_error_;
  std::optional<h5::File> open_file_;  // during a batch, or while held
  h5::AppendCache append_cache_;       // open datasets of open_file_ (cleared before it closes)
  int batch_depth_ = 0;
  bool held_ = false;
  bool defer_flushes_ = false;
  bool unflushed_ = false;  // deferred writes not flushed yet
};

}  // namespace shakedown
