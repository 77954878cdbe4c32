#pragma once
// Thin RAII layer over the HDF5 C API (1.10+, serial): owned ids, the one check macro, and the
// few shapes shakedown stores: attributes, N-d numeric datasets and column tables (compound
// datasets with UTF-8 string and numeric columns). Paths are HDF5 paths ("/a/b/c"); a relative
// path is taken from the location passed in.
#include <hdf5.h>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/error.hpp"

struct libdeflate_compressor;

// The HDF5 check: evaluates `expr` (any HDF5 call returning hid_t/herr_t/htri_t/ssize_t) and
// throws shakedown::RuntimeFault (h5::IoError when the operating system refused a read or write)
// with file:line, the call and the root cause when it is negative; HDF5's whole error stack is
// the error's detail(). Returns the value otherwise, so `hid_t id = SD_H5_CHECK(H5Dopen2(...));`
// works.
#define SD_H5_CHECK(expr) ::shakedown::h5::detail::check((expr), #expr, __FILE__, __LINE__)

namespace shakedown::h5 {

// An HDF5 call failed because the operating system refused an I/O on the file (disk full, quota,
// I/O error, read-only file system). os_error() is the system's own words.
class IoError : public RuntimeFault {
 public:
  IoError(const std::string& message, std::string detail, std::string os_error)
      : RuntimeFault(message, std::move(detail)), os_error_(std::move(os_error)) {}
  const std::string& os_error() const noexcept { return os_error_; }

 private:
  std::string os_error_;
};

namespace detail {
// HDF5's error stack as one line (outermost call first), then clears it.
std::string error_stack();
// The operating system's message inside an HDF5 error stack ("No space left on device" from
// "errno = 28, error message = 'No space left on device'"), or "" when the stack has none.
std::string os_error_in(const std::string& stack);
[[noreturn]] void fail(const char* expr, const char* file, int line);
template <class T>
T check(T value, const char* expr, const char* file, int line) {
  if (value < 0) fail(expr, file, line);
  return value;
}
}  // namespace detail

// Turns off HDF5's automatic printing of error stacks to stderr (we report them in exceptions).
// Cheap; called by every open/create helper below. Per thread in a thread-safe HDF5 build
// (Debian's is): a thread that uses a file another thread opened calls it itself.
void quiet_errors();

// An owned hid_t, closed with Close. Move-only. close() reports a failed close (for files, the
// last chance to see an I/O error); the destructor ignores it.
template <herr_t (*Close)(hid_t)>
class Id {
 public:
  Id() = default;
  explicit Id(hid_t id) noexcept : id_(id) {}
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  Id(Id&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Id& operator=(Id&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  ~Id() { reset(); }

  hid_t get() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ >= 0; }
  hid_t release() noexcept { return std::exchange(id_, H5I_INVALID_HID); }
  void reset() noexcept {
    if (id_ >= 0) (void)Close(id_);
    id_ = H5I_INVALID_HID;
  }
  void close() {
    if (id_ >= 0) SD_H5_CHECK(Close(std::exchange(id_, H5I_INVALID_HID)));
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using File = Id<H5Fclose>;
using Group = Id<H5Gclose>;
using Dataset = Id<H5Dclose>;
using Dataspace = Id<H5Sclose>;
using Datatype = Id<H5Tclose>;
using PropList = Id<H5Pclose>;
using Attribute = Id<H5Aclose>;
using Object = Id<H5Oclose>;  // any object opened with H5Oopen (group or dataset)

// ---- files ----
// Both disable HDF5 file locking: the file has one writer by design (rank 0), and a reader that
// holds it open (h5py in a notebook, `shakedown report` on a .partial) must not make the next
// write of a running job fail; parallel file systems without flock work too.
File create_file(const std::filesystem::path& path);  // fails if it exists
File open_file(const std::filesystem::path& path, bool writable);
void flush(hid_t file);
// H5Fis_hdf5: 1 HDF5, 0 not HDF5, -1 could not tell (missing, unreadable).
int is_hdf5(const std::filesystem::path& path);

// ---- objects ----
// True when every component of `path` exists (links only; "/" always exists).
bool exists(hid_t loc, const std::string& path);
// A link-creation property list that creates missing intermediate groups.
PropList intermediate_groups();
// Opens `path` as a group, creating it and any missing parents first.
Group ensure_group(hid_t loc, const std::string& path);
Object open_object(hid_t loc, const std::string& path);
// The parent part of an HDF5 path: "/a/b/c" -> "/a/b", "c" -> ".", "/c" -> "/".
std::string parent_path(const std::string& path);
// An HDF5 path from the root: "a/b" -> "/a/b"; "/a/b" as it is.
std::string absolute_path(const std::string& path);

// ---- types ----
Datatype utf8_string_type();  // variable-length, UTF-8, NUL-terminated

// ---- attributes (scalar; an existing attribute of that name is replaced) ----
bool has_attr(hid_t obj, const std::string& name);
void write_attr(hid_t obj, const std::string& name, std::string_view value);
void write_attr(hid_t obj, const std::string& name, double value);
void write_attr(hid_t obj, const std::string& name, std::int64_t value);
void write_attr(hid_t obj, const std::string& name, std::uint64_t value);
// Reads variable- or fixed-length string attributes. Throws UsageError for another type.
std::string read_attr_string(hid_t obj, const std::string& name);
// Read any integer or float attribute, converted. Throws UsageError for another type.
double read_attr_double(hid_t obj, const std::string& name);
std::int64_t read_attr_int64(hid_t obj, const std::string& name);

// ---- N-d numeric datasets ----
// Datasets of at least kCompressMinBytes are chunked (about kChunkTargetBytes per chunk) and
// written with shuffle + deflate at `compression` (1..9) when compression > 0; smaller ones stay
// contiguous, where a filter would cost more than it saves.
inline constexpr std::uint64_t kCompressMinBytes = 16 * 1024;
inline constexpr std::uint64_t kChunkTargetBytes = 1024 * 1024;
using Dims = std::vector<std::uint64_t>;
// Creates `path` (and missing parent groups) with shape `dims` (at least one dimension; the
// product must equal data.size(), else InternalError). Fails if `path` exists.
void write_dataset(hid_t loc, const std::string& path, std::span<const double> data,
                   const Dims& dims, int compression);
void write_dataset(hid_t loc, const std::string& path, std::span<const float> data,
                   const Dims& dims, int compression);
void write_dataset(hid_t loc, const std::string& path, std::span<const std::int64_t> data,
                   const Dims& dims, int compression);
void write_dataset(hid_t loc, const std::string& path, std::span<const std::uint64_t> data,
                   const Dims& dims, int compression);
// Reads any integer or float dataset, converted, in C (row-major) order. dims gets the shape
// (empty for a scalar). Throws UsageError for a non-numeric dataset.
std::vector<double> read_dataset_double(hid_t loc, const std::string& path, Dims* dims = nullptr);
std::vector<std::int64_t> read_dataset_int64(hid_t loc, const std::string& path,
                                             Dims* dims = nullptr);
// Rows [first, first + count) of the first dimension (clipped to what exists), as doubles; dims
// gets the shape read. UsageError for a scalar or non-numeric dataset.
std::vector<double> read_dataset_double_rows(hid_t loc, const std::string& path,
                                             std::uint64_t first, std::uint64_t count,
                                             Dims* dims = nullptr);
std::vector<std::uint64_t> read_dataset_uint64(hid_t loc, const std::string& path,
                                               Dims* dims = nullptr);
// Dataset creation properties, e.g. for tests: true when chunked with the deflate filter.
bool is_compressed(hid_t loc, const std::string& path);

// ---- growing datasets: shape [N, row_dims...], first dimension unlimited ----
// For results that arrive one piece at a time (one message size of a sweep), so a run that dies
// mid-sweep keeps every row already written. The first call creates `path` (and missing parent
// groups) with N = rows.size() / prod(row_dims); later calls grow N with H5Dset_extent and write
// the new rows behind the old ones. row_dims may be empty (a 1-D [N] dataset of scalars).
// Chunks hold whole rows: 1 row when a row is at least kAppendChunkMinBytes, else as many rows as
// make kAppendChunkMinBytes; a row above kChunkTargetBytes is split like write_dataset's chunks.
// Each append rewrites the chunk it lands in, so chunks of small rows stay small (a sweep's
// per-size scalars: 64 rows of 8 bytes). Chunks of at least kAppendCompressMinBytes are written
// with shuffle + deflate when compression > 0; smaller ones are stored as they are, where the
// filter would cost more time than the few bytes it saves.
// InternalError (naming `path`): rows.size() not a multiple of prod(row_dims), a zero in
// row_dims, or `path` exists but is not an appendable dataset of this element type and row shape.
// `chunk_rows` > 0 asks for chunks of that many rows instead (a writer that appends batches of
// small rows, a node's telemetry of a phase: one chunk per row would never be compressed).
inline constexpr std::uint64_t kAppendChunkMinBytes = 512;
inline constexpr std::uint64_t kAppendCompressMinBytes = 1024;

// The growing datasets of one open file, kept open by path: a repeated append then skips the
// path lookup, the open and the checks (most of an append's cost when rows are small). Only for
// one file id and absolute paths; clear() it before that file is closed (an open dataset keeps
// the file open). Not thread-safe.
// At most kCapacity datasets stay open (the least recently used is closed first): each open
// dataset keeps HDF5's chunk cache, which every flush walks, so a run's hundreds of sweeps must
// not all stay open.
// While hold_rows(true), rows appended to a dataset open here (the first rows of one it creates
// too) wait in memory and go to the file in one write per dataset at write_pending() (or when it
// is closed, or holds kPendingBytes): a writer that flushes on a deadline (RunWriter with deferred
// flushes) makes one grow-and-write per dataset per flush instead of one per row. clear() and
// erase() drop rows still waiting: call write_pending() first unless the file is being given up.
// The group of the dataset created last stays open too: a sweep's datasets, created one after
// the other in one group, are looked up and created there without walking the path from the root
// each time (with held rows, creation is most of what a small sweep costs the writer).
// Datasets whose chunks are single whole rows filtered by shuffle + deflate (rows of at least
// kAppendCompressMinBytes, compression > 0: a world-scope size-row) get their rows compressed here,
// with libdeflate (2-3x faster than zlib's compress2 at the same level; the same zlib stream, so
// every HDF5 reader inflates it as it would its own filter's output), and written with
// H5Dwrite_chunk.
class AppendCache {
 public:
  static constexpr std::size_t kCapacity = 32;
  static constexpr std::size_t kPendingBytes = 1u << 20;
  struct Entry {
    Entry(Dataset d, hid_t type, Dims dims, hsize_t n)
        : dset(std::move(d)), file_type(type), row_dims(std::move(dims)), rows(n) {}
    Dataset dset;
    hid_t file_type;
    Dims row_dims;
    hsize_t rows;  // rows in the file
    std::uint64_t last_use = 0;
    hid_t mem_type = -1;                 // of the rows waiting (and the last written)
    std::vector<unsigned char> pending;  // rows not yet in the file, in mem_type
    hsize_t pending_rows = 0;
    int direct_level = -1;  // -1 not yet known; 0 HDF5 writes the rows; > 0 see above
  };
  Entry* find(const std::string& path);
  // Closes the least recently used dataset when full (its waiting rows written first).
  Entry* insert(const std::string& path, Entry entry);
  // Closes the least recently used dataset if the cache is full, so the next insert closes none.
  void make_room();
  // The open group `parent` (an absolute path) of `loc`'s file, or -1 when there is none there;
  // valid until the next call or clear().
  hid_t parent_group(hid_t loc, const std::string& parent);
  void erase(const std::string& path);
  void clear() noexcept;
  void hold_rows(bool on) noexcept { hold_rows_ = on; }
  bool holding_rows() const noexcept { return hold_rows_; }
  // Writes every dataset's waiting rows (IoError as a write's).
  void write_pending();
  std::size_t size() const noexcept { return entries_.size(); }
  // Rows compressed here and written as whole chunks so far (for tests and benchmarks).
  std::uint64_t direct_rows() const noexcept { return direct_rows_; }
  // Writes `nrows` rows of `e` (in e.mem_type) from row `first` on; the dataset already has
  // that extent. False when the dataset does not qualify (HDF5 must write them).
  bool write_direct(Entry& e, const void* data, hsize_t first, hsize_t nrows);

 private:
  struct CompressorFree {
    void operator()(libdeflate_compressor* c) const noexcept;
  };
  std::unique_ptr<libdeflate_compressor, CompressorFree> compressor_;
  int compressor_level_ = 0;
  std::vector<unsigned char> shuffled_, compressed_;
  std::uint64_t direct_rows_ = 0;
  std::unordered_map<std::string, Entry> entries_;
  std::string parent_path_;  // of parent_, the group parent_group found last
  Group parent_;
  std::uint64_t uses_ = 0;
  bool hold_rows_ = false;
};

// `cache`: optional, as above.
void append_rows(hid_t loc, const std::string& path, std::span<const double> rows,
                 const Dims& row_dims, int compression, AppendCache* cache = nullptr,
                 std::uint64_t chunk_rows = 0);
void append_rows(hid_t loc, const std::string& path, std::span<const float> rows,
                 const Dims& row_dims, int compression, AppendCache* cache = nullptr,
                 std::uint64_t chunk_rows = 0);
void append_rows(hid_t loc, const std::string& path, std::span<const std::int64_t> rows,
                 const Dims& row_dims, int compression, AppendCache* cache = nullptr,
                 std::uint64_t chunk_rows = 0);
void append_rows(hid_t loc, const std::string& path, std::span<const std::uint64_t> rows,
                 const Dims& row_dims, int compression, AppendCache* cache = nullptr,
                 std::uint64_t chunk_rows = 0);
// Shape and maximum shape of a dataset (H5S_UNLIMITED as UINT64_MAX), chunk shape (empty when not
// chunked): for tests and diagnostics.
struct DatasetLayout {
  Dims dims;
  Dims max_dims;
  Dims chunk;
};
DatasetLayout dataset_layout(hid_t loc, const std::string& path);

// ---- column tables (1-D compound datasets) ----
// Held column by column in memory; on disk one compound row per entry, string columns as UTF-8
// variable-length strings, so h5py/pandas read them as a structured array.
using ColumnValues = std::variant<std::vector<std::string>, std::vector<std::int64_t>,
                                  std::vector<std::uint64_t>, std::vector<double>>;
struct Column {
  std::string name;
  ColumnValues values;
};

class Table {
 public:
  // Adds an empty column of type T (std::string, std::int64_t, std::uint64_t or double). The
  // reference stays valid while the table lives (columns sit in a deque), so several columns can
  // be filled side by side.
  template <class T>
  std::vector<T>& add(std::string name) {
    columns_.push_back(Column{std::move(name), std::vector<T>{}});
    return std::get<std::vector<T>>(columns_.back().values);
  }
  const std::deque<Column>& columns() const noexcept { return columns_; }
  std::deque<Column>& columns() noexcept { return columns_; }
  const Column* find(std::string_view name) const noexcept;
  // Rows, checked: every column must have the same length (else InternalError).
  std::size_t rows() const;

 private:
  std::deque<Column> columns_;
};

// Creates the compound dataset `path` (and missing parents). A table with no columns is refused.
void write_table(hid_t loc, const std::string& path, const Table& table, int compression);
// Reads every string, integer and float member of a 1-D compound dataset (integers as int64 or
// uint64 by their sign, floats as double); members of other types are skipped.
Table read_table(hid_t loc, const std::string& path);

// ---- errors ----
// Rethrows `e` as the same kind of shakedown error with "<context>: " in front.
[[noreturn]] void rethrow_with_context(const Error& e, const std::string& context);

}  // namespace shakedown::h5
