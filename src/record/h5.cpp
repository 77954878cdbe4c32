#include "record/h5.hpp"

#include <libdeflate.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <type_traits>

namespace shakedown::h5 {

namespace detail {
namespace {

herr_t collect_error(unsigned /*n*/, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<std::string*>(data);
  if (!out->empty()) out->append("; ");
  out->append(err->func_name != nullptr ? err->func_name : "?");
  out->append("(): ");
  // Some descriptions (the sec2 driver's write errors) carry newlines: keep the stack one line.
  std::string desc = err->desc != nullptr ? err->desc : "";
  for (char& c : desc) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  out->append(desc);
  char minor[160] = {};
  if (H5Eget_msg(err->min_num, nullptr, minor, sizeof(minor)) > 0) {
    out->append(" [");
    out->append(minor);
    out->append("]");
  }
  return 0;
}

// "/long/path/src/record/h5.cpp" -> "src/record/h5.cpp": enough to find the line, no build paths.
const char* short_file(const char* file) {
  const char* hit = std::strstr(file, "src/");
  return hit != nullptr ? hit : file;
}

}  // namespace

std::string error_stack() {
  std::string out;
  (void)H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &out);
  (void)H5Eclear2(H5E_DEFAULT);
  if (out.empty()) out = "HDF5 reported no error message";
  return out;
}

std::string os_error_in(const std::string& stack) {
  constexpr std::string_view kKey = "error message = '";
  const auto start = stack.find(kKey);
  if (start == std::string::npos) return "";
  const auto from = start + kKey.size();
  const auto end = stack.find('\'', from);
  return end == std::string::npos ? "" : stack.substr(from, end - from);
}

void fail(const char* expr, const char* file, int line) {
  const std::string stack = error_stack();
  const std::string where =
      std::string(short_file(file)) + ":" + std::to_string(line) + ": " + expr + " failed: ";
  const std::string os_error = os_error_in(stack);
  if (!os_error.empty()) throw IoError(where + os_error, "HDF5 error stack: " + stack, os_error);
  // The innermost entry is the root cause; the rest says which calls it went through.
  const auto last = stack.rfind("; ");
  const std::string cause = last == std::string::npos ? stack : stack.substr(last + 2);
  throw RuntimeFault(where + cause, "HDF5 error stack: " + stack);
}

}  // namespace detail

void quiet_errors() {
  (void)H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

void rethrow_with_context(const Error& e, const std::string& context) {
  const std::string message = context + ": " + e.what();
  if (const auto* io = dynamic_cast<const IoError*>(&e)) {
    throw IoError(message, io->detail(), io->os_error());
  }
  switch (e.code()) {
    case ExitCode::kUsage:
      throw UsageError(message);
    case ExitCode::kRuntime:
      throw RuntimeFault(message, e.detail());
    case ExitCode::kInternal:
      throw InternalError(message);
    default:
      throw Error(e.code(), message, e.detail());
  }
}

// ---------------------------------------------------------------- files

namespace {

PropList file_access() {
  PropList fapl(SD_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)));
#if H5_VERSION_GE(1, 10, 7)
  SD_H5_CHECK(H5Pset_file_locking(fapl.get(), false, true));
#endif
  return fapl;
}

}  // namespace

File create_file(const std::filesystem::path& path) {
  quiet_errors();
  PropList fapl = file_access();
  // A version-2 superblock (low bound 1.8): it has no "open for write" status flag, so a file
  // whose writer was killed, crashed or hit a full disk stays readable by every HDF5 reader
  // (h5py, pandas, summary) with all it had flushed; a version-3 superblock (low bound 1.10)
  // keeps the flag set after such an end and readers refuse the file until `h5clear -s`.
  // open_file(writable) raises the low bound to 1.10 for the objects it creates, so datasets
  // still get the 1.10 chunk indexes; the superblock stays version 2.
  SD_H5_CHECK(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V110));
  // Every write reopens the file, and appends rewrite the last chunk of growing datasets: keep
  // the free-space information in the file so space freed in one session is reused in the next,
  // instead of the file growing by a chunk per append.
  PropList fcpl(SD_H5_CHECK(H5Pcreate(H5P_FILE_CREATE)));
  SD_H5_CHECK(H5Pset_file_space_strategy(fcpl.get(), H5F_FSPACE_STRATEGY_FSM_AGGR, 1, 1));
  return File(SD_H5_CHECK(H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get())));
}

File open_file(const std::filesystem::path& path, bool writable) {
  quiet_errors();
  PropList fapl = file_access();
  // The 1.10 format for what a writer creates: compact chunk indexes (extensible arrays) for
  // the growing datasets, a fraction of the metadata of the 1.8 B-trees. h5py and pandas on
  // HDF5 >= 1.10 read it.
  if (writable) SD_H5_CHECK(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110));
  return File(
      SD_H5_CHECK(H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.get())));
}

void flush(hid_t file) {
  SD_H5_CHECK(H5Fflush(file, H5F_SCOPE_GLOBAL));
}

int is_hdf5(const std::filesystem::path& path) {
  quiet_errors();
  const htri_t r = H5Fis_hdf5(path.c_str());
  if (r < 0) (void)H5Eclear2(H5E_DEFAULT);
  return r > 0 ? 1 : (r == 0 ? 0 : -1);
}

// ---------------------------------------------------------------- objects

bool exists(hid_t loc, const std::string& path) {
  if (path.empty() || path == "/" || path == ".") return true;
  // The whole path at once first: positive or zero means every group on the way exists (one
  // lookup rather than one per level; `summary` asks thousands of times). Negative: some group
  // on the way is missing or not a group, which the walk below tells apart.
  if (const htri_t whole = H5Lexists(loc, path.c_str(), H5P_DEFAULT); whole >= 0) {
    return whole > 0;
  }
  (void)H5Eclear2(H5E_DEFAULT);
  std::string prefix = path.front() == '/' ? "/" : "";
  std::size_t pos = prefix.size();
  bool first = true;
  while (pos < path.size()) {
    std::size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    if (next > pos) {
      if (!prefix.empty() && prefix.back() != '/') prefix += '/';
      prefix.append(path, pos, next - pos);
      const htri_t found = H5Lexists(loc, prefix.c_str(), H5P_DEFAULT);
      if (found < 0 && !first) {
        // Looking inside something that is not a group ("/clock/offset_us/x"): not there.
        (void)H5Eclear2(H5E_DEFAULT);
        return false;
      }
      if (SD_H5_CHECK(found) == 0) return false;
      first = false;
    }
    pos = next + 1;
  }
  return true;
}

PropList intermediate_groups() {
  PropList lcpl(SD_H5_CHECK(H5Pcreate(H5P_LINK_CREATE)));
  SD_H5_CHECK(H5Pset_create_intermediate_group(lcpl.get(), 1));
  SD_H5_CHECK(H5Pset_char_encoding(lcpl.get(), H5T_CSET_UTF8));
  return lcpl;
}

Group ensure_group(hid_t loc, const std::string& path) {
  if (exists(loc, path)) {
    return Group(SD_H5_CHECK(H5Gopen2(loc, path.empty() ? "." : path.c_str(), H5P_DEFAULT)));
  }
  PropList lcpl = intermediate_groups();
  return Group(SD_H5_CHECK(H5Gcreate2(loc, path.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT)));
}

Object open_object(hid_t loc, const std::string& path) {
  return Object(SD_H5_CHECK(H5Oopen(loc, path.empty() ? "." : path.c_str(), H5P_DEFAULT)));
}

std::string absolute_path(const std::string& path) {
  return !path.empty() && path.front() == '/' ? path : "/" + path;
}

std::string parent_path(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const std::size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

// ---------------------------------------------------------------- types

Datatype utf8_string_type() {
  Datatype t(SD_H5_CHECK(H5Tcopy(H5T_C_S1)));
  SD_H5_CHECK(H5Tset_size(t.get(), H5T_VARIABLE));
  SD_H5_CHECK(H5Tset_cset(t.get(), H5T_CSET_UTF8));
  SD_H5_CHECK(H5Tset_strpad(t.get(), H5T_STR_NULLTERM));
  return t;
}

namespace {

// A variable-length string memory type with the same character set as `file_type`: HDF5 does not
// convert between character sets.
Datatype vlen_string_like(hid_t file_type) {
  Datatype t = utf8_string_type();
  SD_H5_CHECK(H5Tset_cset(t.get(), SD_H5_CHECK(H5Tget_cset(file_type))));
  return t;
}

// Bytes of a fixed-length string buffer, cut at the first NUL and without space padding.
std::string fixed_string(const char* data, std::size_t size, H5T_str_t pad) {
  std::size_t n = 0;
  while (n < size && data[n] != '\0') ++n;
  if (pad == H5T_STR_SPACEPAD) {
    while (n > 0 && data[n - 1] == ' ') --n;
  }
  return std::string(data, n);
}

bool is_numeric(H5T_class_t c) {
  return c == H5T_INTEGER || c == H5T_FLOAT;
}

}  // namespace

// ---------------------------------------------------------------- attributes

bool has_attr(hid_t obj, const std::string& name) {
  return SD_H5_CHECK(H5Aexists(obj, name.c_str())) > 0;
}

namespace {

Attribute create_scalar_attr(hid_t obj, const std::string& name, hid_t file_type) {
  if (has_attr(obj, name)) SD_H5_CHECK(H5Adelete(obj, name.c_str()));
  Dataspace space(SD_H5_CHECK(H5Screate(H5S_SCALAR)));
  return Attribute(
      SD_H5_CHECK(H5Acreate2(obj, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT)));
}

template <class T>
void write_numeric_attr(hid_t obj, const std::string& name, hid_t mem_type, hid_t file_type,
                        T value) {
  Attribute attr = create_scalar_attr(obj, name, file_type);
  SD_H5_CHECK(H5Awrite(attr.get(), mem_type, &value));
  attr.close();
}

Attribute open_attr(hid_t obj, const std::string& name) {
  if (!has_attr(obj, name)) throw UsageError("attribute '" + name + "' is missing");
  return Attribute(SD_H5_CHECK(H5Aopen(obj, name.c_str(), H5P_DEFAULT)));
}

template <class T>
T read_numeric_attr(hid_t obj, const std::string& name, hid_t mem_type) {
  Attribute attr = open_attr(obj, name);
  Datatype type(SD_H5_CHECK(H5Aget_type(attr.get())));
  Dataspace space(SD_H5_CHECK(H5Aget_space(attr.get())));
  if (!is_numeric(SD_H5_CHECK(H5Tget_class(type.get()))) ||
      SD_H5_CHECK(H5Sget_simple_extent_npoints(space.get())) != 1) {
    throw UsageError("attribute '" + name + "' is not a single number");
  }
  T value{};
  SD_H5_CHECK(H5Aread(attr.get(), mem_type, &value));
  return value;
}

}  // namespace

void write_attr(hid_t obj, const std::string& name, std::string_view value) {
  Datatype type = utf8_string_type();
  Attribute attr = create_scalar_attr(obj, name, type.get());
  const std::string copy(value);  // NUL-terminated
  const char* data = copy.c_str();
  SD_H5_CHECK(H5Awrite(attr.get(), type.get(), &data));
  attr.close();
}

void write_attr(hid_t obj, const std::string& name, double value) {
  write_numeric_attr(obj, name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, value);
}

void write_attr(hid_t obj, const std::string& name, std::int64_t value) {
  write_numeric_attr(obj, name, H5T_NATIVE_INT64, H5T_STD_I64LE, value);
}

void write_attr(hid_t obj, const std::string& name, std::uint64_t value) {
  write_numeric_attr(obj, name, H5T_NATIVE_UINT64, H5T_STD_U64LE, value);
}

std::string read_attr_string(hid_t obj, const std::string& name) {
  Attribute attr = open_attr(obj, name);
  Datatype type(SD_H5_CHECK(H5Aget_type(attr.get())));
  Dataspace space(SD_H5_CHECK(H5Aget_space(attr.get())));
  if (SD_H5_CHECK(H5Tget_class(type.get())) != H5T_STRING ||
      SD_H5_CHECK(H5Sget_simple_extent_npoints(space.get())) != 1) {
    throw UsageError("attribute '" + name + "' is not a single string");
  }
  if (SD_H5_CHECK(H5Tis_variable_str(type.get())) > 0) {
    Datatype mem = vlen_string_like(type.get());
    char* data = nullptr;
    SD_H5_CHECK(H5Aread(attr.get(), mem.get(), &data));
    std::string out = data != nullptr ? data : "";
    H5free_memory(data);
    return out;
  }
  const std::size_t size = H5Tget_size(type.get());
  if (size == 0) detail::fail("H5Tget_size(attribute type)", __FILE__, __LINE__);
  Datatype mem(SD_H5_CHECK(H5Tcopy(type.get())));
  std::string buffer(size, '\0');
  SD_H5_CHECK(H5Aread(attr.get(), mem.get(), buffer.data()));
  return fixed_string(buffer.data(), size, SD_H5_CHECK(H5Tget_strpad(type.get())));
}

double read_attr_double(hid_t obj, const std::string& name) {
  return read_numeric_attr<double>(obj, name, H5T_NATIVE_DOUBLE);
}

std::int64_t read_attr_int64(hid_t obj, const std::string& name) {
  return read_numeric_attr<std::int64_t>(obj, name, H5T_NATIVE_INT64);
}

// ---------------------------------------------------------------- datasets

namespace {

std::vector<hsize_t> to_hsize(const Dims& dims) {
  return {dims.begin(), dims.end()};
}

// Halve the slowest-varying dimension first, so a chunk holds whole rows of the fastest one
// (usually [world]): reading one iteration of every rank touches one chunk.
std::vector<hsize_t> chunk_dims(const Dims& dims, std::size_t element_size) {
  std::vector<hsize_t> chunk = to_hsize(dims);
  auto bytes = [&] {
    std::uint64_t b = element_size;
    for (hsize_t c : chunk) b *= c;
    return b;
  };
  while (bytes() > kChunkTargetBytes) {
    auto it = std::find_if(chunk.begin(), chunk.end(), [](hsize_t c) { return c > 1; });
    if (it == chunk.end()) break;
    *it = (*it + 1) / 2;
  }
  return chunk;
}

bool deflate_available() {
  return SD_H5_CHECK(H5Zfilter_avail(H5Z_FILTER_DEFLATE)) > 0;
}

// Dataset creation properties: contiguous, or chunked with shuffle + deflate for large data.
PropList creation_properties(const Dims& dims, std::size_t element_size, int compression) {
  PropList dcpl(SD_H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)));
  std::uint64_t bytes = element_size;
  for (std::uint64_t d : dims) bytes *= d;
  if (compression > 0 && bytes >= kCompressMinBytes && deflate_available()) {
    const std::vector<hsize_t> chunk = chunk_dims(dims, element_size);
    SD_H5_CHECK(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()));
    SD_H5_CHECK(H5Pset_shuffle(dcpl.get()));
    SD_H5_CHECK(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(std::min(compression, 9))));
  }
  return dcpl;
}

void refuse_existing(hid_t loc, const std::string& path) {
  if (exists(loc, path)) {
    throw InternalError("'" + path + "' already exists in the file; each dataset is written once");
  }
}

template <class T>
void write_dataset_impl(hid_t loc, const std::string& path, std::span<const T> data,
                        const Dims& dims, int compression, hid_t mem_type, hid_t file_type) {
  if (dims.empty()) throw InternalError("dataset '" + path + "' needs at least one dimension");
  std::uint64_t count = 1;
  for (std::uint64_t d : dims) count *= d;
  if (count != data.size()) {
    throw InternalError("dataset '" + path + "': " + std::to_string(data.size()) +
                        " values do not fill the shape (" + std::to_string(count) + " elements)");
  }
  refuse_existing(loc, path);
  const std::vector<hsize_t> shape = to_hsize(dims);
  Dataspace space(
      SD_H5_CHECK(H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr)));
  PropList dcpl = creation_properties(dims, sizeof(T), compression);
  PropList lcpl = intermediate_groups();
  Dataset dset(SD_H5_CHECK(
      H5Dcreate2(loc, path.c_str(), file_type, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT)));
  if (!data.empty()) {
    SD_H5_CHECK(H5Dwrite(dset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()));
  }
  dset.close();
}

Dataset open_dataset(hid_t loc, const std::string& path) {
  if (!exists(loc, path)) throw UsageError("dataset '" + path + "' is missing");
  return Dataset(SD_H5_CHECK(H5Dopen2(loc, path.c_str(), H5P_DEFAULT)));
}

// A numeric dataset opened for reading, its dataspace and shape (empty for a scalar).
struct NumericDataset {
  Dataset dset;
  Dataspace space;
  std::vector<hsize_t> shape;
};

NumericDataset open_numeric(hid_t loc, const std::string& path) {
  NumericDataset d{open_dataset(loc, path), {}, {}};
  Datatype type(SD_H5_CHECK(H5Dget_type(d.dset.get())));
  if (!is_numeric(SD_H5_CHECK(H5Tget_class(type.get())))) {
    throw UsageError("dataset '" + path + "' is not numeric");
  }
  d.space = Dataspace(SD_H5_CHECK(H5Dget_space(d.dset.get())));
  const int rank = SD_H5_CHECK(H5Sget_simple_extent_ndims(d.space.get()));
  d.shape.resize(static_cast<std::size_t>(rank));
  if (rank > 0) SD_H5_CHECK(H5Sget_simple_extent_dims(d.space.get(), d.shape.data(), nullptr));
  return d;
}

template <class T>
std::vector<T> read_dataset_impl(hid_t loc, const std::string& path, Dims* dims, hid_t mem_type) {
  NumericDataset d = open_numeric(loc, path);
  const Dataset& dset = d.dset;
  const Dataspace& space = d.space;
  const std::vector<hsize_t>& shape = d.shape;
  const auto count =
      static_cast<std::size_t>(SD_H5_CHECK(H5Sget_simple_extent_npoints(space.get())));
  std::vector<T> out(count);
  if (count > 0) {
    SD_H5_CHECK(H5Dread(dset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()));
  }
  if (dims != nullptr) dims->assign(shape.begin(), shape.end());
  return out;
}

}  // namespace

std::vector<double> read_dataset_double_rows(hid_t loc, const std::string& path,
                                             std::uint64_t first, std::uint64_t count, Dims* dims) {
  NumericDataset d = open_numeric(loc, path);
  const std::vector<hsize_t>& shape = d.shape;
  const int rank = static_cast<int>(shape.size());
  if (rank < 1) throw UsageError("dataset '" + path + "' is a scalar: it has no rows");
  const Dataset& dset = d.dset;
  const Dataspace& space = d.space;
  std::vector<hsize_t> start(shape.size(), 0), block = shape;
  start[0] = std::min<hsize_t>(first, shape[0]);
  block[0] = std::min<hsize_t>(count, shape[0] - start[0]);
  std::size_t n = 1;
  for (hsize_t b : block) n *= static_cast<std::size_t>(b);
  std::vector<double> out(n);
  if (n > 0) {
    SD_H5_CHECK(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                    block.data(), nullptr));
    Dataspace mem(SD_H5_CHECK(H5Screate_simple(rank, block.data(), nullptr)));
    SD_H5_CHECK(
        H5Dread(dset.get(), H5T_NATIVE_DOUBLE, mem.get(), space.get(), H5P_DEFAULT, out.data()));
  }
  if (dims != nullptr) dims->assign(block.begin(), block.end());
  return out;
}

void write_dataset(hid_t loc, const std::string& path, std::span<const double> data,
                   const Dims& dims, int compression) {
  write_dataset_impl(loc, path, data, dims, compression, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE);
}

void write_dataset(hid_t loc, const std::string& path, std::span<const float> data,
                   const Dims& dims, int compression) {
  write_dataset_impl(loc, path, data, dims, compression, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE);
}

void write_dataset(hid_t loc, const std::string& path, std::span<const std::int64_t> data,
                   const Dims& dims, int compression) {
  write_dataset_impl(loc, path, data, dims, compression, H5T_NATIVE_INT64, H5T_STD_I64LE);
}

void write_dataset(hid_t loc, const std::string& path, std::span<const std::uint64_t> data,
                   const Dims& dims, int compression) {
  write_dataset_impl(loc, path, data, dims, compression, H5T_NATIVE_UINT64, H5T_STD_U64LE);
}

std::vector<double> read_dataset_double(hid_t loc, const std::string& path, Dims* dims) {
  return read_dataset_impl<double>(loc, path, dims, H5T_NATIVE_DOUBLE);
}

std::vector<std::int64_t> read_dataset_int64(hid_t loc, const std::string& path, Dims* dims) {
  return read_dataset_impl<std::int64_t>(loc, path, dims, H5T_NATIVE_INT64);
}

std::vector<std::uint64_t> read_dataset_uint64(hid_t loc, const std::string& path, Dims* dims) {
  return read_dataset_impl<std::uint64_t>(loc, path, dims, H5T_NATIVE_UINT64);
}

bool is_compressed(hid_t loc, const std::string& path) {
  Dataset dset = open_dataset(loc, path);
  PropList dcpl(SD_H5_CHECK(H5Dget_create_plist(dset.get())));
  if (SD_H5_CHECK(H5Pget_layout(dcpl.get())) != H5D_CHUNKED) return false;
  const int filters = SD_H5_CHECK(H5Pget_nfilters(dcpl.get()));
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0;
    std::size_t nelements = 0;
    unsigned config = 0;
    const H5Z_filter_t id = SD_H5_CHECK(H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags,
                                                       &nelements, nullptr, 0, nullptr, &config));
    if (id == H5Z_FILTER_DEFLATE) return true;
  }
  return false;
}

// ---------------------------------------------------------------- growing datasets

namespace {

std::string dims_text(const std::vector<hsize_t>& dims) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += dims[i] == H5S_UNLIMITED ? std::string("unlimited") : std::to_string(dims[i]);
  }
  return out + "]";
}

// "float64", "int64", "uint32"...: enough to tell two element types apart in a message.
std::string type_name(hid_t type) {
  const H5T_class_t c = H5Tget_class(type);
  const std::string bits = std::to_string(8 * H5Tget_size(type));
  if (c == H5T_FLOAT) return "float" + bits;
  if (c == H5T_INTEGER) return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + bits;
  return "non-numeric";
}

// Whole rows per chunk, so appending a row never splits one and reading a row prefix (the sizes
// measured so far) touches few chunks. Rows larger than kChunkTargetBytes are cut like
// write_dataset's chunks.
std::vector<hsize_t> append_chunk_dims(const Dims& row_dims, std::size_t element_size,
                                       std::uint64_t chunk_rows) {
  std::uint64_t row_bytes = element_size;
  for (std::uint64_t d : row_dims) row_bytes *= d;
  std::vector<hsize_t> chunk{1};
  if (row_bytes < kAppendChunkMinBytes) {
    chunk[0] = (kAppendChunkMinBytes + row_bytes - 1) / row_bytes;
  }
  if (chunk_rows > 0) chunk[0] = chunk_rows;
  const std::vector<hsize_t> inner = chunk_dims(row_dims, element_size);
  chunk.insert(chunk.end(), inner.begin(), inner.end());
  return chunk;
}

std::uint64_t chunk_bytes(const std::vector<hsize_t>& chunk, std::size_t element_size) {
  std::uint64_t bytes = element_size;
  for (hsize_t c : chunk) bytes *= c;
  return bytes;
}

// Creates `path` with no rows yet (rows of shape `row_dims`, stored as `file_type`) and returns
// it open; append_to writes the first rows as every later one.
template <class T>
Dataset create_appendable(hid_t loc, const std::string& path, const Dims& row_dims, int compression,
                          hid_t file_type, std::uint64_t chunk_rows) {
  std::vector<hsize_t> shape{0};
  shape.insert(shape.end(), row_dims.begin(), row_dims.end());
  std::vector<hsize_t> max_shape = shape;
  max_shape[0] = H5S_UNLIMITED;
  Dataspace space(SD_H5_CHECK(
      H5Screate_simple(static_cast<int>(shape.size()), shape.data(), max_shape.data())));
  PropList dcpl(SD_H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)));
  const std::vector<hsize_t> chunk = append_chunk_dims(row_dims, sizeof(T), chunk_rows);
  SD_H5_CHECK(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()));
  if (compression > 0 && chunk_bytes(chunk, sizeof(T)) >= kAppendCompressMinBytes &&
      deflate_available()) {
    SD_H5_CHECK(H5Pset_shuffle(dcpl.get()));
    SD_H5_CHECK(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(std::min(compression, 9))));
  }
  PropList lcpl = intermediate_groups();
  return Dataset(SD_H5_CHECK(
      H5Dcreate2(loc, path.c_str(), file_type, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT)));
}

// Opens `path` for appending rows of `row_dims` stored as `file_type`; InternalError when it is
// something else (a group, a fixed-size dataset from write_dataset, other type or row shape).
Dataset open_appendable(hid_t loc, const std::string& path, const Dims& row_dims, hid_t file_type) {
  const std::string where = "cannot append rows to '" + path + "': ";
  {
    Object obj = open_object(loc, path);
    if (H5Iget_type(obj.get()) != H5I_DATASET) {
      throw InternalError(where + "it is a group, not a dataset");
    }
  }
  Dataset dset(SD_H5_CHECK(H5Dopen2(loc, path.c_str(), H5P_DEFAULT)));
  Datatype type(SD_H5_CHECK(H5Dget_type(dset.get())));
  if (SD_H5_CHECK(H5Tequal(type.get(), file_type)) <= 0) {
    throw InternalError(where + "it holds " + type_name(type.get()) + " values, these rows are " +
                        type_name(file_type) + "; append one element type per dataset");
  }
  Dataspace space(SD_H5_CHECK(H5Dget_space(dset.get())));
  const int rank = SD_H5_CHECK(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  std::vector<hsize_t> max_dims(static_cast<std::size_t>(rank));
  if (rank > 0) {
    SD_H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), max_dims.data()));
  }
  if (rank == 0 || max_dims[0] != H5S_UNLIMITED) {
    throw InternalError(where + "its shape " + dims_text(dims) +
                        " is fixed (written by write_dataset?); only datasets created by "
                        "append_rows grow");
  }
  const std::vector<hsize_t> want = to_hsize(row_dims);
  if (!std::equal(dims.begin() + 1, dims.end(), want.begin(), want.end())) {
    throw InternalError(where + "rows of shape " + dims_text(want) + " do not fit shape " +
                        dims_text(dims) + "; every row of one dataset has the same shape");
  }
  return dset;
}

// Grows the entry's dataset by count[0] rows and writes them behind the old ones (compressed
// by `cache` when the dataset qualifies, see AppendCache).
void append_to(AppendCache::Entry& e, const void* data, const std::vector<hsize_t>& count,
               hid_t mem_type, AppendCache* cache) {
  if (count[0] == 0) return;
  std::vector<hsize_t> extent = count;
  extent[0] = e.rows + count[0];
  SD_H5_CHECK(H5Dset_extent(e.dset.get(), extent.data()));
  e.mem_type = mem_type;
  if (cache != nullptr && cache->write_direct(e, data, e.rows, count[0])) {
    e.rows = extent[0];
    return;
  }
  Dataspace file_space(
      SD_H5_CHECK(H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr)));
  std::vector<hsize_t> start(count.size(), 0);
  start[0] = e.rows;
  SD_H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                  count.data(), nullptr));
  Dataspace mem_space(
      SD_H5_CHECK(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr)));
  SD_H5_CHECK(
      H5Dwrite(e.dset.get(), mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, data));
  e.rows = extent[0];
}

// Writes the rows waiting in `e` (hold_rows) behind those in the file.
void write_waiting(AppendCache::Entry& e, AppendCache* cache) {
  if (e.pending_rows == 0) return;
  std::vector<hsize_t> count{e.pending_rows};
  count.insert(count.end(), e.row_dims.begin(), e.row_dims.end());
  append_to(e, e.pending.data(), count, e.mem_type, cache);
  e.pending.clear();
  e.pending_rows = 0;
}

template <class T>
void append_rows_impl(hid_t loc, const std::string& path, std::span<const T> rows,
                      const Dims& row_dims, int compression, hid_t mem_type, hid_t file_type,
                      AppendCache* cache, std::uint64_t chunk_rows) {
  std::uint64_t per_row = 1;
  for (std::uint64_t d : row_dims) per_row *= d;
  if (per_row == 0) {
    throw InternalError("cannot append rows to '" + path + "': row shape " +
                        dims_text(to_hsize(row_dims)) + " has a zero dimension");
  }
  if (rows.size() % per_row != 0) {
    throw InternalError("cannot append rows to '" + path + "': " + std::to_string(rows.size()) +
                        " values are not whole rows of shape " + dims_text(to_hsize(row_dims)) +
                        " (" + std::to_string(per_row) + " values each)");
  }
  const hsize_t new_rows = rows.size() / per_row;
  std::vector<hsize_t> count{new_rows};
  count.insert(count.end(), row_dims.begin(), row_dims.end());
  AppendCache::Entry* entry = cache != nullptr ? cache->find(path) : nullptr;
  if (entry != nullptr && (entry->file_type != file_type || entry->row_dims != row_dims)) {
    // Checked in full (with the message naming what differs) by open_appendable below.
    write_waiting(*entry, cache);
    cache->erase(path);
    entry = nullptr;
  }
  if (entry == nullptr) {
    // In the group kept open by the cache when there is one (a sweep's datasets share theirs).
    hid_t where = loc;
    std::string name = path;
    if (const auto slash = path.rfind('/');
        cache != nullptr && slash != std::string::npos && slash > 0 && path.front() == '/') {
      if (const hid_t group = cache->parent_group(loc, path.substr(0, slash)); group >= 0) {
        where = group;
        name = path.substr(slash + 1);
      }
    }
    const bool create = !exists(where, name);
    // Room first: closing another dataset may fail, which must not leave this one created (or
    // opened) without its rows.
    if (cache != nullptr) cache->make_room();
    Dataset dset =
        create ? create_appendable<T>(where, name, row_dims, compression, file_type, chunk_rows)
               : open_appendable(loc, path, row_dims, file_type);
    hsize_t rows_now = 0;
    if (!create) {
      Dataspace space(SD_H5_CHECK(H5Dget_space(dset.get())));
      std::vector<hsize_t> extent(count.size());
      SD_H5_CHECK(H5Sget_simple_extent_dims(space.get(), extent.data(), nullptr));
      rows_now = extent[0];
    }
    if (cache == nullptr) {
      AppendCache::Entry once{std::move(dset), file_type, row_dims, rows_now};
      append_to(once, rows.data(), count, mem_type, nullptr);
      once.dset.close();
      return;
    }
    entry = cache->insert(path, {std::move(dset), file_type, row_dims, rows_now});
  }
  try {
    if (cache->holding_rows()) {
      const auto* bytes = reinterpret_cast<const unsigned char*>(rows.data());
      entry->mem_type = mem_type;
      entry->pending.insert(entry->pending.end(), bytes, bytes + rows.size_bytes());
      entry->pending_rows += new_rows;
      if (entry->pending.size() >= AppendCache::kPendingBytes) write_waiting(*entry, cache);
    } else {
      write_waiting(*entry, cache);
      append_to(*entry, rows.data(), count, mem_type, cache);
    }
  } catch (...) {
    cache->erase(path);  // its row count may no longer be what the file holds
    throw;
  }
}

// The deflate level of a dataset whose chunks are single whole rows filtered by shuffle, then
// deflate, and whose rows sit in memory as in the file; 0 for any other.
int direct_deflate_level(const AppendCache::Entry& e) {
  if constexpr (std::endian::native != std::endian::little) return 0;
  if (e.mem_type < 0 || SD_H5_CHECK(H5Tequal(e.mem_type, e.file_type)) <= 0) return 0;
  PropList dcpl(SD_H5_CHECK(H5Dget_create_plist(e.dset.get())));
  if (SD_H5_CHECK(H5Pget_layout(dcpl.get())) != H5D_CHUNKED) return 0;
  std::vector<hsize_t> chunk(e.row_dims.size() + 1);
  if (SD_H5_CHECK(H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data())) !=
          static_cast<int>(chunk.size()) ||
      chunk[0] != 1 || !std::equal(chunk.begin() + 1, chunk.end(), e.row_dims.begin())) {
    return 0;
  }
  if (SD_H5_CHECK(H5Pget_nfilters(dcpl.get())) != 2) return 0;
  unsigned flags = 0;
  std::size_t count = 1;
  unsigned values[1] = {0};
  unsigned config = 0;
  if (SD_H5_CHECK(H5Pget_filter2(dcpl.get(), 0, &flags, &count, values, 0, nullptr, &config)) !=
      H5Z_FILTER_SHUFFLE) {
    return 0;
  }
  count = 1;
  values[0] = 0;
  if (SD_H5_CHECK(H5Pget_filter2(dcpl.get(), 1, &flags, &count, values, 0, nullptr, &config)) !=
          H5Z_FILTER_DEFLATE ||
      count < 1) {
    return 0;
  }
  return std::clamp(static_cast<int>(values[0]), 1, 9);
}

// HDF5's shuffle filter: byte j of element i goes to j * n + i. The element size is a template
// argument for the row types (float32; float64, int64, uint64), so the loops run over constant
// strides; other sizes (an int16 or uint8 row) take the general loop.
template <std::size_t E>
void shuffle_fixed(const unsigned char* in, unsigned char* out, std::size_t n) {
  for (std::size_t j = 0; j < E; ++j) {
    unsigned char* plane = out + j * n;
    for (std::size_t i = 0; i < n; ++i) plane[i] = in[i * E + j];
  }
}

void shuffle(const unsigned char* in, unsigned char* out, std::size_t n, std::size_t element) {
  switch (element) {
    case 4:
      return shuffle_fixed<4>(in, out, n);
    case 8:
      return shuffle_fixed<8>(in, out, n);
    default:
      for (std::size_t j = 0; j < element; ++j) {
        for (std::size_t i = 0; i < n; ++i) out[j * n + i] = in[i * element + j];
      }
  }
}

}  // namespace

void AppendCache::CompressorFree::operator()(libdeflate_compressor* c) const noexcept {
  libdeflate_free_compressor(c);
}

bool AppendCache::write_direct(Entry& e, const void* data, hsize_t first, hsize_t nrows) {
  if (e.direct_level < 0) e.direct_level = direct_deflate_level(e);
  if (e.direct_level == 0) return false;
  if (!compressor_ || compressor_level_ != e.direct_level) {
    compressor_.reset(libdeflate_alloc_compressor(e.direct_level));
    if (!compressor_) throw std::bad_alloc();
    compressor_level_ = e.direct_level;
  }
  const std::size_t element = SD_H5_CHECK(H5Tget_size(e.file_type));
  std::size_t per_row = 1;
  for (std::uint64_t d : e.row_dims) per_row *= d;
  const std::size_t row_bytes = per_row * element;
  shuffled_.resize(row_bytes);
  compressed_.resize(libdeflate_zlib_compress_bound(compressor_.get(), row_bytes));
  std::vector<hsize_t> offset(e.row_dims.size() + 1, 0);
  const auto* rows = static_cast<const unsigned char*>(data);
  for (hsize_t k = 0; k < nrows; ++k) {
    shuffle(rows + k * row_bytes, shuffled_.data(), per_row, element);
    const std::size_t size = libdeflate_zlib_compress(
        compressor_.get(), shuffled_.data(), row_bytes, compressed_.data(), compressed_.size());
    if (size == 0) throw InternalError("libdeflate: a row did not fit its compression bound");
    offset[0] = first + k;
    SD_H5_CHECK(
        H5Dwrite_chunk(e.dset.get(), H5P_DEFAULT, 0, offset.data(), size, compressed_.data()));
    ++direct_rows_;
  }
  return true;
}

AppendCache::Entry* AppendCache::find(const std::string& path) {
  const auto it = entries_.find(path);
  if (it == entries_.end()) return nullptr;
  it->second.last_use = ++uses_;
  return &it->second;
}

AppendCache::Entry* AppendCache::insert(const std::string& path, Entry entry) {
  entries_.erase(path);
  make_room();
  entry.last_use = ++uses_;
  return &entries_.emplace(path, std::move(entry)).first->second;
}

void AppendCache::make_room() {
  if (entries_.size() < kCapacity) return;
  std::string oldest;
  std::uint64_t when = UINT64_MAX;
  for (const auto& [p, e] : entries_) {
    if (e.last_use < when) {
      when = e.last_use;
      oldest = p;
    }
  }
  write_waiting(entries_.at(oldest), this);
  entries_.erase(oldest);
}

hid_t AppendCache::parent_group(hid_t loc, const std::string& parent) {
  if (parent_ && parent == parent_path_) return parent_.get();
  parent_.reset();
  parent_path_.clear();
  // Not there yet (its first dataset creates it) or not a group: asked again next time.
  if (!exists(loc, parent)) return H5I_INVALID_HID;
  Object obj = open_object(loc, parent);
  if (H5Iget_type(obj.get()) != H5I_GROUP) return H5I_INVALID_HID;
  parent_ = Group(obj.release());
  parent_path_ = parent;
  return parent_.get();
}

void AppendCache::erase(const std::string& path) {
  entries_.erase(path);
}

void AppendCache::clear() noexcept {
  entries_.clear();
  parent_.reset();
  parent_path_.clear();
}

void AppendCache::write_pending() {
  for (auto& [path, e] : entries_) {
    try {
      write_waiting(e, this);
    } catch (...) {
      const std::string failed = path;  // not the key of the node being erased
      entries_.erase(failed);           // its row count may no longer be what the file holds
      throw;
    }
  }
}

void append_rows(hid_t loc, const std::string& path, std::span<const double> rows,
                 const Dims& row_dims, int compression, AppendCache* cache,
                 std::uint64_t chunk_rows) {
  append_rows_impl(loc, path, rows, row_dims, compression, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, cache,
                   chunk_rows);
}

void append_rows(hid_t loc, const std::string& path, std::span<const float> rows,
                 const Dims& row_dims, int compression, AppendCache* cache,
                 std::uint64_t chunk_rows) {
  append_rows_impl(loc, path, rows, row_dims, compression, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, cache,
                   chunk_rows);
}

void append_rows(hid_t loc, const std::string& path, std::span<const std::int64_t> rows,
                 const Dims& row_dims, int compression, AppendCache* cache,
                 std::uint64_t chunk_rows) {
  append_rows_impl(loc, path, rows, row_dims, compression, H5T_NATIVE_INT64, H5T_STD_I64LE, cache,
                   chunk_rows);
}

void append_rows(hid_t loc, const std::string& path, std::span<const std::uint64_t> rows,
                 const Dims& row_dims, int compression, AppendCache* cache,
                 std::uint64_t chunk_rows) {
  append_rows_impl(loc, path, rows, row_dims, compression, H5T_NATIVE_UINT64, H5T_STD_U64LE, cache,
                   chunk_rows);
}

DatasetLayout dataset_layout(hid_t loc, const std::string& path) {
  Dataset dset = open_dataset(loc, path);
  Dataspace space(SD_H5_CHECK(H5Dget_space(dset.get())));
  const int rank = SD_H5_CHECK(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  std::vector<hsize_t> max_dims(static_cast<std::size_t>(rank));
  if (rank > 0) {
    SD_H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), max_dims.data()));
  }
  DatasetLayout out;
  out.dims.assign(dims.begin(), dims.end());
  out.max_dims.assign(max_dims.begin(), max_dims.end());
  PropList dcpl(SD_H5_CHECK(H5Dget_create_plist(dset.get())));
  if (SD_H5_CHECK(H5Pget_layout(dcpl.get())) == H5D_CHUNKED && rank > 0) {
    std::vector<hsize_t> chunk(static_cast<std::size_t>(rank));
    SD_H5_CHECK(H5Pget_chunk(dcpl.get(), rank, chunk.data()));
    out.chunk.assign(chunk.begin(), chunk.end());
  }
  return out;
}

// ---------------------------------------------------------------- tables

const Column* Table::find(std::string_view name) const noexcept {
  for (const Column& c : columns_) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::size_t Table::rows() const {
  if (columns_.empty()) return 0;
  auto size_of = [](const Column& c) {
    return std::visit([](const auto& v) { return v.size(); }, c.values);
  };
  const std::size_t n = size_of(columns_.front());
  for (const Column& c : columns_) {
    if (size_of(c) != n) {
      throw InternalError("table column '" + c.name + "' has " + std::to_string(size_of(c)) +
                          " rows, column '" + columns_.front().name + "' has " + std::to_string(n));
    }
  }
  return n;
}

namespace {

// How one column sits in a row of the in-memory compound buffer.
enum class Kind { kString, kFixedString, kInt64, kUInt64, kDouble };

struct Slot {
  std::string name;
  Kind kind;
  std::size_t offset = 0;
  std::size_t size = 0;  // bytes in the row
  Datatype type;         // owned member type for strings; empty for predefined numeric types
  H5T_str_t pad = H5T_STR_NULLTERM;

  hid_t member_type() const {
    switch (kind) {
      case Kind::kInt64:
        return H5T_NATIVE_INT64;
      case Kind::kUInt64:
        return H5T_NATIVE_UINT64;
      case Kind::kDouble:
        return H5T_NATIVE_DOUBLE;
      case Kind::kString:
      case Kind::kFixedString:
        return type.get();
    }
    return H5I_INVALID_HID;
  }
};

Kind kind_of(const ColumnValues& v) {
  switch (v.index()) {
    case 0:
      return Kind::kString;
    case 1:
      return Kind::kInt64;
    case 2:
      return Kind::kUInt64;
    default:
      return Kind::kDouble;
  }
}

static_assert(sizeof(double) == sizeof(std::uint64_t) &&
              sizeof(std::int64_t) == sizeof(std::uint64_t));

// Lays the slots out in one row (natural alignment) and builds the compound type from them:
// the one place that computes offsets.
Datatype compound_type(std::vector<Slot>& slots, std::size_t& row_size) {
  std::size_t offset = 0;
  std::size_t max_align = 1;
  for (Slot& s : slots) {
    std::size_t align = 1;  // fixed-length strings: bytes, size already set from the file type
    if (s.kind != Kind::kFixedString) {
      // char*, int64, uint64 and double: 8 bytes, naturally aligned, on every target we build
      s.size = s.kind == Kind::kString ? sizeof(char*) : sizeof(std::uint64_t);
      align = s.kind == Kind::kString ? alignof(char*) : alignof(std::uint64_t);
    }
    offset = (offset + align - 1) / align * align;
    s.offset = offset;
    offset += s.size;
    max_align = std::max(max_align, align);
  }
  row_size = std::max<std::size_t>(1, (offset + max_align - 1) / max_align * max_align);
  Datatype type(SD_H5_CHECK(H5Tcreate(H5T_COMPOUND, row_size)));
  for (const Slot& s : slots) {
    SD_H5_CHECK(H5Tinsert(type.get(), s.name.c_str(), s.offset, s.member_type()));
  }
  return type;
}

// Frees the strings HDF5 allocated while reading variable-length members, also on exceptions.
class VlenBuffer {
 public:
  VlenBuffer(hid_t type, hid_t space, std::size_t bytes)
      : type_(type), space_(space), data_(bytes) {}
  VlenBuffer(const VlenBuffer&) = delete;
  VlenBuffer& operator=(const VlenBuffer&) = delete;
  ~VlenBuffer() {
    if (data_.empty()) return;
#if H5_VERSION_GE(1, 12, 0)  // 1.10.8's header declares H5Treclaim, its library lacks it
    (void)H5Treclaim(type_, space_, H5P_DEFAULT, data_.data());
#else
    (void)H5Dvlen_reclaim(type_, space_, H5P_DEFAULT, data_.data());
#endif
  }
  unsigned char* data() noexcept {
    return data_.data();
  }

 private:
  hid_t type_;
  hid_t space_;
  std::vector<unsigned char> data_;  // zero-filled: unread pointers are null, safe to reclaim
};

}  // namespace

void write_table(hid_t loc, const std::string& path, const Table& table, int compression) {
  if (table.columns().empty()) throw InternalError("table '" + path + "' has no columns");
  const std::size_t rows = table.rows();
  std::vector<Slot> slots;
  for (const Column& c : table.columns()) {
    for (const Slot& s : slots) {
      if (s.name == c.name) {
        throw InternalError("table '" + path + "' has two columns named '" + c.name + "'");
      }
    }
    Slot s{c.name, kind_of(c.values), 0, 0, {}, H5T_STR_NULLTERM};
    if (s.kind == Kind::kString) s.type = utf8_string_type();
    slots.push_back(std::move(s));
  }
  std::size_t row_size = 0;
  Datatype type = compound_type(slots, row_size);

  // Pack column values into rows; string cells point into the table's own std::strings.
  std::vector<unsigned char> buffer(rows * row_size);
  for (std::size_t col = 0; col < slots.size(); ++col) {
    const Slot& s = slots[col];
    std::visit(
        [&](const auto& values) {
          using V = typename std::decay_t<decltype(values)>::value_type;
          for (std::size_t r = 0; r < rows; ++r) {
            unsigned char* cell = buffer.data() + r * row_size + s.offset;
            if constexpr (std::is_same_v<V, std::string>) {
              const char* p = values[r].c_str();
              std::memcpy(cell, &p, sizeof(p));
            } else {
              std::memcpy(cell, &values[r], sizeof(V));
            }
          }
        },
        table.columns()[col].values);
  }

  refuse_existing(loc, path);
  const hsize_t shape[1] = {rows};
  Dataspace space(SD_H5_CHECK(H5Screate_simple(1, shape, nullptr)));
  PropList dcpl = creation_properties({rows}, row_size, compression);
  PropList lcpl = intermediate_groups();
  Dataset dset(SD_H5_CHECK(
      H5Dcreate2(loc, path.c_str(), type.get(), space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT)));
  if (rows > 0) {
    SD_H5_CHECK(H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()));
  }
  dset.close();
}

Table read_table(hid_t loc, const std::string& path) {
  Dataset dset = open_dataset(loc, path);
  Datatype file_type(SD_H5_CHECK(H5Dget_type(dset.get())));
  if (SD_H5_CHECK(H5Tget_class(file_type.get())) != H5T_COMPOUND) {
    throw UsageError("dataset '" + path + "' is not a table (compound dataset)");
  }
  Dataspace space(SD_H5_CHECK(H5Dget_space(dset.get())));
  if (SD_H5_CHECK(H5Sget_simple_extent_ndims(space.get())) > 1) {
    throw UsageError("table '" + path + "' is not one-dimensional");
  }
  const auto rows =
      static_cast<std::size_t>(SD_H5_CHECK(H5Sget_simple_extent_npoints(space.get())));

  std::vector<Slot> slots;
  const int members = SD_H5_CHECK(H5Tget_nmembers(file_type.get()));
  for (int i = 0; i < members; ++i) {
    const auto index = static_cast<unsigned>(i);
    std::unique_ptr<char, decltype(&H5free_memory)> raw(H5Tget_member_name(file_type.get(), index),
                                                        &H5free_memory);
    if (!raw) detail::fail("H5Tget_member_name", __FILE__, __LINE__);
    Slot s{raw.get(), Kind::kDouble, 0, 0, {}, H5T_STR_NULLTERM};
    Datatype member(SD_H5_CHECK(H5Tget_member_type(file_type.get(), index)));
    switch (SD_H5_CHECK(H5Tget_class(member.get()))) {
      case H5T_STRING:
        if (SD_H5_CHECK(H5Tis_variable_str(member.get())) > 0) {
          s.kind = Kind::kString;
          s.type = vlen_string_like(member.get());
        } else {
          s.kind = Kind::kFixedString;
          s.size = H5Tget_size(member.get());
          if (s.size == 0) detail::fail("H5Tget_size(member)", __FILE__, __LINE__);
          s.pad = SD_H5_CHECK(H5Tget_strpad(member.get()));
          s.type = Datatype(SD_H5_CHECK(H5Tcopy(member.get())));
        }
        break;
      case H5T_INTEGER:
        s.kind =
            SD_H5_CHECK(H5Tget_sign(member.get())) == H5T_SGN_NONE ? Kind::kUInt64 : Kind::kInt64;
        break;
      case H5T_FLOAT:
        s.kind = Kind::kDouble;
        break;
      default:
        continue;  // enums, arrays, nested compounds: not ours, skip
    }
    slots.push_back(std::move(s));
  }

  Table table;
  if (slots.empty()) return table;
  std::size_t row_size = 0;
  Datatype mem_type = compound_type(slots, row_size);
  VlenBuffer buffer(mem_type.get(), space.get(), rows * row_size);
  if (rows > 0) {
    SD_H5_CHECK(H5Dread(dset.get(), mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()));
  }
  for (const Slot& s : slots) {
    auto cell = [&](std::size_t r) { return buffer.data() + r * row_size + s.offset; };
    auto fill = [&](auto& values) {
      using V = typename std::decay_t<decltype(values)>::value_type;
      values.resize(rows);
      for (std::size_t r = 0; r < rows; ++r) {
        if constexpr (std::is_same_v<V, std::string>) {
          if (s.kind == Kind::kFixedString) {
            values[r] = fixed_string(reinterpret_cast<const char*>(cell(r)), s.size, s.pad);
          } else {
            const char* p = nullptr;
            std::memcpy(&p, cell(r), sizeof(p));
            values[r] = p != nullptr ? p : "";
          }
        } else {
          std::memcpy(&values[r], cell(r), sizeof(V));
        }
      }
    };
    switch (s.kind) {
      case Kind::kString:
      case Kind::kFixedString:
        fill(table.add<std::string>(s.name));
        break;
      case Kind::kInt64:
        fill(table.add<std::int64_t>(s.name));
        break;
      case Kind::kUInt64:
        fill(table.add<std::uint64_t>(s.name));
        break;
      case Kind::kDouble:
        fill(table.add<double>(s.name));
        break;
    }
  }
  return table;
}

}  // namespace shakedown::h5
