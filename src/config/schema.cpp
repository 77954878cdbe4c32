#include "config/schema.hpp"

#include "config/platforms.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include "config/load.hpp"
#include "config/platforms.hpp"
#include "core/error.hpp"

namespace shakedown::config_detail {

Value Value::element(const YAML::Node& item, std::size_t index) const {
  // A --set has no lines (at.line == 0); a file element has its own, which matters in block lists.
  const int line = at.line > 0 && item.Mark().line >= 0 ? item.Mark().line + 1 : at.line;
  return Value{item, path + "[" + std::to_string(index) + "]", Origin{at.source, line}};
}

std::string got(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "got nothing (an empty value)";
    case YAML::NodeType::Sequence:
      return "got a list";
    case YAML::NodeType::Map:
      return "got a mapping";
    default:
      return "got " + in_quotes(node.Scalar());
  }
}

namespace {

using Choices = std::vector<std::string_view>;

// The text of a value that must be a single scalar, or a message saying what was expected.
const std::string& scalar_text(const Value& value, const std::string& expected) {
  if (!value.node.IsScalar()) value.fail("must be " + expected + ", " + got(value.node));
  return value.node.Scalar();
}

// Strict number parsing: the whole text must be the number (no "10abc", no "0x10").
template <class Number>
bool parse_number(std::string_view text, Number& out) {
  if (text.starts_with('+')) text.remove_prefix(1);
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, out);
  return !text.empty() && result.ec == std::errc() && result.ptr == end;
}

// ---- rules: each reads one kind of value, checks it, and writes it back ----

struct IntRule {
  std::int64_t lo;
  std::int64_t hi;

  std::string expected() const {
    return "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  }
  std::int64_t read(const Value& value) const {
    const std::string& text = scalar_text(value, expected());
    std::int64_t number = 0;
    if (!parse_number(text, number) || number < lo || number > hi) {
      value.fail("must be " + expected() + ", got " + in_quotes(text));
    }
    return number;
  }
  void write(YAML::Emitter& out, std::int64_t number) const { out << number; }
};

// Seeds: any 64-bit value, so runs can be reproduced with whatever seed a log shows.
struct SeedRule {
  std::uint64_t read(const Value& value) const {
    const std::string expected = "an integer in [0, 2^64-1]";
    const std::string& text = scalar_text(value, expected);
    std::uint64_t number = 0;
    if (!parse_number(text, number)) value.fail("must be " + expected + ", got " + in_quotes(text));
    return number;
  }
  void write(YAML::Emitter& out, std::uint64_t number) const { out << number; }
};

struct RealRule {
  double lo;
  bool lo_open;  // lo itself is not allowed
  double hi;
  bool hi_open;
  std::string_view what = "a number";

  std::string expected() const {
    return std::string(what) + " in " + (lo_open ? "(" : "[") + format_real(lo) + ", " +
           format_real(hi) + (hi_open ? ")" : "]");
  }
  double read(const Value& value) const {
    const std::string& text = scalar_text(value, expected());
    double number = 0;
    const bool in_range = parse_number(text, number) && std::isfinite(number) &&
                          (lo_open ? number > lo : number >= lo) &&
                          (hi_open ? number < hi : number <= hi);
    if (!in_range) value.fail("must be " + expected() + ", got " + in_quotes(text));
    return number;
  }
  void write(YAML::Emitter& out, double number) const { out << format_real(number); }
};

struct BoolRule {
  bool read(const Value& value) const {
    const std::string expected = "true or false";
    const std::string text = lowercase(scalar_text(value, expected));
    // The YAML 1.1 spellings too: configs written for other tools use yes/no and on/off.
    if (text == "true" || text == "yes" || text == "on") return true;
    if (text == "false" || text == "no" || text == "off") return false;
    value.fail("must be " + expected + ", got " + in_quotes(value.node.Scalar()));
  }
  void write(YAML::Emitter& out, bool flag) const { out << flag; }
};

struct TextRule {
  bool allow_empty = true;
  bool name_only = false;  // a platform name: becomes part of a path, so no '/' or '..'

  std::string read(const Value& value) const {
    // "dir:" with nothing after it reads naturally as "no directory set".
    if (value.node.IsNull()) {
      if (!allow_empty) value.fail("must not be empty");
      return {};
    }
    const std::string& text = scalar_text(value, "a string");
    if (text.empty() && !allow_empty) value.fail("must not be empty");
    for (char c : text) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 || byte == 0x7f) {
        value.fail("must not contain control characters, got " + in_quotes(text));
      }
      const bool name_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
      if (name_only && !name_char) {
        value.fail(
            "must be a platform name (letters, digits, '_', '-', '.'), as in "
            "configs/platforms/NAME.yaml, got " +
            in_quotes(text));
      }
    }
    if (name_only && text.starts_with('.')) {
      value.fail("must be a platform name, not a path, got " + in_quotes(text));
    }
    return text;
  }
  void write(YAML::Emitter& out, const std::string& text) const { out << text; }
};

// checks.platform: "", "auto" or the name of a built-in platform (configs/platforms/).
struct PlatformRule {
  std::string read(const Value& value) const {
    const std::string text = TextRule{true, true}.read(value);
    if (text.empty() || text == "auto") return text;
    const std::vector<std::string> names = platform_names();
    if (std::find(names.begin(), names.end(), text) == names.end()) {
      std::vector<std::string_view> known(names.begin(), names.end());
      known.emplace_back("auto");
      value.fail("unknown platform " + in_quotes(text) + did_you_mean(text, known) +
                 " (known: " + join(names) + "; auto picks one from the GPU model; \"\" for none)");
    }
    return text;
  }
  void write(YAML::Emitter& out, const std::string& text) const { out << text; }
};

std::string unknown_choice(std::string_view text, const Choices& choices, std::string_view noun) {
  return "unknown " + std::string(noun) + " " + in_quotes(text) + did_you_mean(text, choices) +
         " (accepted: " + join_choices(choices) + ")";
}

struct ChoiceRule {
  Choices choices;
  std::string_view noun = "value";

  std::string read(const Value& value) const {
    const std::string& text = scalar_text(value, "one of " + join_choices(choices));
    if (std::find(choices.begin(), choices.end(), text) == choices.end()) {
      value.fail(unknown_choice(text, choices, noun));
    }
    return text;
  }
  void write(YAML::Emitter& out, const std::string& text) const { out << text; }
};

void write_list(YAML::Emitter& out, const std::vector<std::string>& items) {
  out << YAML::Flow << YAML::BeginSeq;
  for (const std::string& item : items) out << item;
  out << YAML::EndSeq;
}

// The entries of a list value: a YAML list, or, for the command line's sake, one scalar with
// commas ("--set collectives.ops=all_reduce,broadcast"). `entry` says what each entry must be.
std::vector<Value> list_items(const Value& value, const std::string& entry,
                              bool scalar_entries = true) {
  std::vector<Value> items;
  if (value.node.IsSequence()) {
    for (std::size_t i = 0; i < value.node.size(); ++i) {
      Value item = value.element(value.node[i], i);
      if (scalar_entries && !item.node.IsScalar()) {
        item.fail("must be " + entry + ", " + got(item.node));
      }
      items.push_back(std::move(item));
    }
  } else if (value.node.IsScalar()) {
    const std::vector<std::string_view> parts = split(value.node.Scalar(), ',');
    for (std::size_t i = 0; i < parts.size(); ++i) {
      // A node made here has no mark, so the element keeps the key's line.
      items.push_back(value.element(YAML::Node(std::string(trim(parts[i]))), i));
    }
  } else if (!value.node.IsNull()) {
    value.fail("must be a list, each entry " + entry + ", " + got(value.node));
  }
  return items;
}

struct ChoiceListRule {
  Choices choices;
  std::string_view noun = "value";
  bool pipeline_order = false;  // phases run in pipeline order whatever order they are listed in

  std::vector<std::string> read(const Value& value) const {
    const std::string expected = "one of " + join_choices(choices);
    const std::vector<Value> items = list_items(value, expected);
    if (items.empty()) value.fail("must list at least one of " + join_choices(choices));
    std::vector<std::string> out;
    for (const Value& item : items) {
      const std::string& text = item.node.Scalar();
      if (std::find(choices.begin(), choices.end(), text) == choices.end()) {
        item.fail(unknown_choice(text, choices, noun));
      }
      if (std::find(out.begin(), out.end(), text) != out.end()) {
        item.fail(in_quotes(text) + " is listed twice; list each value once");
      }
      out.push_back(text);
    }
    if (pipeline_order) {
      const auto rank = [this](const std::string& name) {
        return std::find(choices.begin(), choices.end(), name) - choices.begin();
      };
      std::sort(out.begin(), out.end(),
                [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
    }
    return out;
  }
  void write(YAML::Emitter& out, const std::vector<std::string>& items) const {
    write_list(out, items);
  }
};

std::string where(const Value& value) {
  return value.at.str() + ": " + value.path;
}

// A version, dotted numbers ("570.124", "2.21.5"), or empty for none.
struct VersionRule {
  std::string read(const Value& value) const {
    if (value.node.IsNull()) return {};
    const std::string& text = scalar_text(value, "a version such as 570.124");
    if (text.empty()) return text;
    bool ok = std::isdigit(static_cast<unsigned char>(text.front())) != 0 &&
              std::isdigit(static_cast<unsigned char>(text.back())) != 0;
    for (std::size_t i = 0; ok && i < text.size(); ++i) {
      const char c = text[i];
      ok = std::isdigit(static_cast<unsigned char>(c)) != 0 || (c == '.' && text[i - 1] != '.');
    }
    if (!ok)
      value.fail("must be a version of dotted numbers such as 570.124, got " + in_quotes(text));
    return text;
  }
  void write(YAML::Emitter& out, const std::string& text) const { out << text; }
};

// A list of environment variable names starting with `prefix` (may be empty).
struct VariableListRule {
  std::string_view prefix;

  std::vector<std::string> read(const Value& value) const {
    const std::string entry = "a variable name starting with " + std::string(prefix);
    std::vector<std::string> out;
    for (const Value& item : list_items(value, entry)) {
      const std::string& text = item.node.Scalar();
      const bool ok =
          text.starts_with(prefix) && text.size() > prefix.size() &&
          text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
      if (!ok) item.fail("must be " + entry + " (capitals, digits, '_'), got " + in_quotes(text));
      if (std::find(out.begin(), out.end(), text) != out.end()) {
        item.fail(in_quotes(text) + " is listed twice; list each variable once");
      }
      out.push_back(text);
    }
    return out;
  }
  void write(YAML::Emitter& out, const std::vector<std::string>& items) const {
    write_list(out, items);
  }
};

struct SizeRule {
  std::uint64_t min;
  std::uint64_t max = 0;  // 0: the parser's 1 TiB

  std::uint64_t read(const Value& value) const {
    const std::string& text =
        scalar_text(value, "a size such as 4096, 64K, 4MiB or 1GB (at most 1 TiB)");
    const std::uint64_t bytes = parse_size(text, where(value));
    if (bytes < min) {
      value.fail("must be at least " + std::to_string(min) + " byte" + (min == 1 ? "" : "s") +
                 ", got " + in_quotes(text));
    }
    if (max > 0 && bytes > max) {
      value.fail("must be at most " + exact_size_text(max) + ", got " + in_quotes(text));
    }
    return bytes;
  }
  void write(YAML::Emitter& out, std::uint64_t bytes) const { out << exact_size_text(bytes); }
};

// linkscan.rails: auto, first, or UCX_NET_DEVICES values (mlx5_0:1, eth0), one per local rank.
struct RailsRule {
  std::string read(const Value& value) const {
    const std::string& text =
        scalar_text(value, "auto, first, or a comma-separated list of UCX devices");
    if (text == "auto" || text == "first") return text;
    for (std::string_view device : split(text, ',')) {
      const std::string_view name = trim(device);
      if (name.empty() ||
          name.find_first_not_of(
              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-") !=
              std::string_view::npos) {
        value.fail(
            "must be auto, first, or UCX device names such as mlx5_0:1,mlx5_1:1 (one per "
            "local rank), got " +
            in_quotes(text));
      }
    }
    return text;
  }
  void write(YAML::Emitter& out, const std::string& text) const { out << text; }
};

struct SizeListRule {
  SizeList read(const Value& value) const {
    const std::string expected = "a size list such as \"8:1G\", \"8:1G:x4\" or \"8,64,1K\"";
    if (value.node.IsSequence()) {
      // [8, 64, 1K] is the same list as "8,64,1K"; each entry is checked as a size first so a bad
      // one is reported on its own line.
      std::string joined;
      for (std::size_t i = 0; i < value.node.size(); ++i) {
        const Value item = value.element(value.node[i], i);
        if (!item.node.IsScalar()) item.fail("must be a size, " + got(item.node));
        parse_size(item.node.Scalar(), where(item));
        joined += (i > 0 ? "," : "") + item.node.Scalar();
      }
      if (joined.empty()) value.fail("must list at least one size");
      return parse_size_list(joined, where(value));
    }
    return parse_size_list(scalar_text(value, expected), where(value));
  }
  void write(YAML::Emitter& out, const SizeList& sizes) const {
    // Keep the user's spelling when it still means these values; otherwise list them exactly.
    bool spec_matches = false;
    try {
      spec_matches = !sizes.spec.empty() && parse_size_list(sizes.spec, "").values == sizes.values;
    } catch (const UsageError&) {
      spec_matches = false;
    }
    if (spec_matches) {
      out << sizes.spec;
      return;
    }
    std::string text;
    for (std::uint64_t bytes : sizes.values)
      text += (text.empty() ? "" : ",") + exact_size_text(bytes);
    out << text;
  }
};

// Large enough for any GEMM a GPU can hold, small enough that m*n*k cannot overflow 64 bits.
constexpr std::int64_t kMaxGemmDim = 1 << 20;

std::string shape_text(const GemmShape& shape) {
  return std::to_string(shape.m) + "x" + std::to_string(shape.n) + "x" + std::to_string(shape.k);
}

struct ShapesRule {
  static constexpr std::string_view kHelp =
      "write \"MxNxK\" (e.g. \"4096x4096x4096\") or [m, n, k], each in [1, 1048576]";

  GemmShape read_one(const Value& item) const {
    std::vector<std::string> dims;
    if (item.node.IsScalar()) {
      const std::string text = lowercase(item.node.Scalar());  // the parts below point into it
      for (std::string_view part : split(text, 'x')) {
        dims.emplace_back(trim(part));
      }
    } else if (item.node.IsSequence()) {
      for (const YAML::Node& dim : item.node) {
        dims.push_back(dim.IsScalar() ? dim.Scalar() : std::string("?"));
      }
    } else {
      item.fail("must be a shape (" + std::string(kHelp) + "), " + got(item.node));
    }
    std::array<std::int64_t, 3> mnk{};
    bool ok = dims.size() == 3;
    for (std::size_t i = 0; ok && i < 3; ++i) {
      ok = parse_number(dims[i], mnk[i]) && mnk[i] >= 1 && mnk[i] <= kMaxGemmDim;
    }
    if (!ok) {
      const std::string text = item.node.IsScalar() ? in_quotes(item.node.Scalar()) : "a list";
      item.fail("bad shape " + text + "; " + std::string(kHelp));
    }
    return GemmShape{mnk[0], mnk[1], mnk[2]};
  }

  std::vector<GemmShape> read(const Value& value) const {
    std::vector<GemmShape> shapes;
    // Entries may be [m, n, k] lists themselves, so they are not required to be scalars.
    for (const Value& item : list_items(value, "a shape", false)) {
      const GemmShape shape = read_one(item);
      if (std::find(shapes.begin(), shapes.end(), shape) != shapes.end()) {
        // Each shape names a group in the HDF5 file.
        item.fail("shape " + shape_text(shape) + " is listed twice; list each shape once");
      }
      shapes.push_back(shape);
    }
    return shapes;
  }
  void write(YAML::Emitter& out, const std::vector<GemmShape>& shapes) const {
    out << YAML::Flow << YAML::BeginSeq;
    for (const GemmShape& shape : shapes) out << shape_text(shape);
    out << YAML::EndSeq;
  }
};

template <class Section, class T, class Rule>
KeySpec field(std::string_view name, Section Config::*section, T Section::*member, Rule rule) {
  return KeySpec{name,
                 [=](Config& config, const Value& value) {
                   (config.*section).*member = static_cast<T>(rule.read(value));
                 },
                 [=](const Config& config, YAML::Emitter& out) {
                   rule.write(out, (config.*section).*member);
                 }};
}

// ---- the table ----

constexpr std::int64_t kMaxIters = 1'000'000;
constexpr IntRule kIters{1, kMaxIters};
constexpr IntRule kWarmup{0, kMaxIters};
// A week: longer than any reservation's acceptance test, short enough to catch "3600000" typos.
constexpr RealRule kSeconds{0, true, 604800, false, "a number of seconds"};
constexpr RealRule kFraction{0, true, 1, false, "a fraction"};

SectionSpec topology_section() {
  using S = TopologyConfig;
  const auto section = &Config::topology;
  return {"topology",
          {field("virtual_nodes", section, &S::virtual_nodes, IntRule{0, 4096}),
           field("allow_oversubscribe", section, &S::allow_oversubscribe, BoolRule{}),
           field("expected_gpus_per_node", section, &S::expected_gpus_per_node, IntRule{0, 256}),
           field("blocks", section, &S::blocks, TextRule{})}};
}

SectionSpec collectives_section() {
  using S = CollectivesConfig;
  const auto section = &Config::collectives;
  return {
      "collectives",
      {field("backend", section, &S::backend, ChoiceRule{{"auto", "mpi", "nccl"}}),
       field("ops", section, &S::ops,
             ChoiceListRule{{"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                             "all_to_all", "send_recv"}}),
       field("dtypes", section, &S::dtypes,
             ChoiceListRule{{"float32", "bfloat16", "float16", "int32", "fp8_e4m3", "fp8_e5m2"}}),
       field("reduce_ops", section, &S::reduce_ops, ChoiceListRule{{"sum", "max"}}),
       field("sizes", section, &S::sizes, SizeListRule{}),
       field("nccl_sizes", section, &S::nccl_sizes, SizeListRule{}),
       field("warmup", section, &S::warmup, kWarmup), field("iters", section, &S::iters, kIters),
       field("iter_bytes_budget", section, &S::iter_bytes_budget, SizeRule{0}),
       field("in_place", section, &S::in_place, ChoiceRule{{"no", "yes", "both"}}),
       field("scopes", section, &S::scopes,
             ChoiceListRule{{"world", "intra_node", "inter_node", "rail"}}),
       field("validate", section, &S::validate, ChoiceRule{{"per_size", "every_iteration", "off"}}),
       field("on_wrong", section, &S::on_wrong, ChoiceRule{{"abort", "continue"}}),
       field("seed", section, &S::seed, SeedRule{}),
       field("intra_node_link_GBps", section, &S::intra_node_link_GBps,
             RealRule{0, false, 1e6, false}),
       field("inter_node_link_GBps", section, &S::inter_node_link_GBps,
             RealRule{0, false, 1e6, false})}};
}

SectionSpec gemm_section() {
  using S = GemmConfig;
  const auto section = &Config::gemm;
  return {
      "gemm",
      {field("engine", section, &S::engine, ChoiceRule{{"auto", "cpu", "cublaslt"}}),
       field("shapes", section, &S::shapes, ShapesRule{}),
       field("hidden", section, &S::hidden, IntRule{1, kMaxGemmDim}),
       field("tokens", section, &S::tokens, IntRule{1, kMaxGemmDim}),
       field("format", section, &S::format, ChoiceRule{{"e4m3", "hybrid"}}),
       field("out_dtype", section, &S::out_dtype, ChoiceRule{{"bf16", "fp32"}}),
       field("warmup", section, &S::warmup, kWarmup), field("iters", section, &S::iters, kIters),
       field("threads", section, &S::threads, IntRule{0, 4096}),
       field("fast_accum", section, &S::fast_accum, BoolRule{}),
       field("seed", section, &S::seed, SeedRule{})}};
}

SectionSpec train_section() {
  using S = TrainConfig;
  const auto section = &Config::train;
  return {"train",
          {field("model", section, &S::model,
                 ChoiceRule{{"custom", "llama2-7b", "llama2-70b", "gpt3-175b"}, "model"}),
           field("layers", section, &S::layers, IntRule{0, 1024}),
           field("hidden", section, &S::hidden, IntRule{1, kMaxGemmDim}),
           field("ffn_hidden", section, &S::ffn_hidden, IntRule{0, kMaxGemmDim}),
           field("heads", section, &S::heads, IntRule{1, 4096}),
           field("kv_heads", section, &S::kv_heads, IntRule{0, 4096}),
           field("seq_len", section, &S::seq_len, IntRule{1, kMaxGemmDim}),
           field("micro_batch", section, &S::micro_batch, IntRule{1, 65536}),
           field("vocab", section, &S::vocab, IntRule{1, 1 << 24}),
           field("mlp", section, &S::mlp, ChoiceRule{{"gelu", "swiglu"}}),
           field("engine", section, &S::engine, ChoiceRule{{"cpu", "cublaslt", "auto"}}),
           field("tp", section, &S::tp, IntRule{1, 4096}),
           field("dp", section, &S::dp, IntRule{0, 1 << 20}),
           field("sequence_parallel", section, &S::sequence_parallel, BoolRule{}),
           field("zero", section, &S::zero, IntRule{0, 1}),
           field("bucket_mb", section, &S::bucket_mb, RealRule{0, true, 1 << 20, false}),
           field("overlap", section, &S::overlap, BoolRule{}),
           field("steps", section, &S::steps, kIters),
           field("warmup_steps", section, &S::warmup_steps, kWarmup),
           field("recipe", section, &S::recipe, ChoiceRule{{"delayed", "current"}}),
           field("format", section, &S::format, ChoiceRule{{"e4m3", "hybrid"}}),
           field("amax_history_len", section, &S::amax_history_len, IntRule{1, 65536}),
           field("amax_compute_algo", section, &S::amax_compute_algo,
                 ChoiceRule{{"max", "most_recent"}}),
           // 2^-margin beyond 32 would push every scale below E4M3's smallest subnormal.
           field("margin", section, &S::margin, IntRule{0, 32})}};
}

SectionSpec checkpoint_section() {
  using S = CheckpointConfig;
  const auto section = &Config::checkpoint;
  return {"checkpoint",
          {field("dir", section, &S::dir, TextRule{}),
           field("api", section, &S::api, ChoiceRule{{"posix", "mpiio"}}),
           field("layout", section, &S::layout, ChoiceRule{{"file_per_process", "shared_file"}}),
           field("bytes_per_rank", section, &S::bytes_per_rank, SizeRule{1}),
           field("from_train", section, &S::from_train, BoolRule{}),
           field("block_size", section, &S::block_size, SizeRule{1}),
           field("iters", section, &S::iters, IntRule{1, 1000}),
           field("fsync", section, &S::fsync, BoolRule{}),
           field("verify", section, &S::verify, BoolRule{}),
           field("cleanup", section, &S::cleanup, BoolRule{}),
           field("keep", section, &S::keep, BoolRule{}),
           field("direct_io", section, &S::direct_io, BoolRule{}),
           field("async", section, &S::async, BoolRule{}),
           field("expected_write_gbps", section, &S::expected_write_gbps,
                 RealRule{0, false, 1e6, false}),
           field("expected_read_gbps", section, &S::expected_read_gbps,
                 RealRule{0, false, 1e6, false})}};
}

SectionSpec devices_section() {
  using S = DevicesConfig;
  const auto section = &Config::devices;
  const RealRule minimum{0, false, 1e7, false};
  return {"devices",
          {field("path", section, &S::path, ChoiceRule{{"auto", "cpu", "cuda"}}),
           field("bytes", section, &S::bytes, SizeRule{1 << 20}),
           field("host_bytes", section, &S::host_bytes, SizeRule{1 << 20}),
           field("copy_bytes", section, &S::copy_bytes, SizeRule{1 << 20}),
           field("warmup", section, &S::warmup, kWarmup),
           field("trials", section, &S::trials, IntRule{1, 1000}),
           field("pairs", section, &S::pairs, ChoiceRule{{"none", "ring", "all"}}),
           field("threads", section, &S::threads, IntRule{0, 4096}),
           field("min_free_GiB", section, &S::min_free_GiB, minimum),
           field("min_memory_GBps", section, &S::min_memory_GBps, minimum),
           field("min_host_GBps", section, &S::min_host_GBps, minimum),
           field("min_pair_GBps", section, &S::min_pair_GBps, minimum)}};
}

SectionSpec linkscan_section() {
  using S = LinkscanConfig;
  const auto section = &Config::linkscan;
  return {"linkscan",
          {field("transport", section, &S::transport, ChoiceRule{{"ucx", "mpi"}}),
           field("schedule", section, &S::schedule, ChoiceRule{{"all_pairs", "random"}}),
           field("rounds", section, &S::rounds, IntRule{0, kMaxIters}),
           field("seed", section, &S::seed, SeedRule{}),
           field("rails", section, &S::rails, RailsRule{}),
           // A message is one MPI or UCX call: its count is an int.
           field("bytes", section, &S::bytes, SizeRule{1, 1ull << 30}),
           field("window", section, &S::window, IntRule{1, 1024}),
           field("reps", section, &S::reps, kIters),
           field("warmup", section, &S::warmup, IntRule{0, 1000}),
           field("lat_bytes", section, &S::lat_bytes, SizeRule{1, 1ull << 20}),
           field("lat_iters", section, &S::lat_iters, IntRule{1, kMaxIters}),
           // Below 1 every pair would be "slower than the fastest": all flagged.
           field("lat_factor", section, &S::lat_factor, RealRule{1, false, 1000, false}),
           field("bw_fraction", section, &S::bw_fraction, kFraction),
           field("retest_budget", section, &S::retest_budget, IntRule{0, kMaxIters}),
           field("concurrent", section, &S::concurrent, ChoiceRule{{"auto", "true", "false"}}),
           field("bidirectional", section, &S::bidirectional, BoolRule{}),
           field("memory", section, &S::memory, ChoiceRule{{"auto", "host", "cuda"}})}};
}

SectionSpec telemetry_section() {
  using S = TelemetryConfig;
  const auto section = &Config::telemetry;
  return {"telemetry",
          {field("enabled", section, &S::enabled, BoolRule{}),
           field("interval_ms", section, &S::interval_ms, IntRule{10, 60000}),
           field("decimate_ms", section, &S::decimate_ms, IntRule{10, 3600000}),
           field("keep", section, &S::keep, ChoiceRule{{"events", "all"}})}};
}

SectionSpec checks_section() {
  using S = ChecksConfig;
  const auto section = &Config::checks;
  return {
      "checks",
      {field("platform", section, &S::platform, PlatformRule{}),
       field("straggler_z", section, &S::straggler_z, RealRule{0, true, 1000, false}),
       field("straggler_slowdown", section, &S::straggler_slowdown, RealRule{0, true, 100, false}),
       field("straggler_slowdown_shared", section, &S::straggler_slowdown_shared,
             RealRule{0, true, 100, false}),
       field("min_busbw_fraction", section, &S::min_busbw_fraction, kFraction),
       field("min_tflops_fraction", section, &S::min_tflops_fraction, kFraction)}};
}

SectionSpec audit_section() {
  using S = AuditConfig;
  const auto section = &Config::audit;
  return {"audit",
          {field("driver_min", section, &S::driver_min, VersionRule{}),
           field("nccl_min", section, &S::nccl_min, VersionRule{}),
           field("nic_rate_gbps", section, &S::nic_rate_gbps, RealRule{0, false, 1e5, false}),
           field("governor", section, &S::governor, TextRule{}),
           field("image", section, &S::image, TextRule{}),
           field("allow_mig", section, &S::allow_mig, BoolRule{}),
           field("allow_nccl", section, &S::allow_nccl, VariableListRule{"NCCL_"})}};
}

SectionSpec cost_section() {
  using S = CostConfig;
  const auto section = &Config::cost;
  return {"cost",
          {field("gpu_hour_usd", section, &S::gpu_hour_usd, RealRule{0, false, 1e6, false})}};
}

SectionSpec output_section() {
  using S = OutputConfig;
  const auto section = &Config::output;
  return {"output",
          {field("dir", section, &S::dir, TextRule{false, false}),
           field("file", section, &S::file, TextRule{}),
           field("compression", section, &S::compression, IntRule{0, 9})}};  // gzip levels
}

SectionSpec timeouts_section() {
  using S = TimeoutsConfig;
  const auto section = &Config::timeouts;
  return {"timeouts",
          {field("init_s", section, &S::init_s, kSeconds),
           field("phase_s", section, &S::phase_s, kSeconds),
           field("run_s", section, &S::run_s, kSeconds)}};
}

Choices phase_choices() {
  Choices choices;
  for (const std::string& phase : pipeline_phases()) choices.emplace_back(phase);
  return choices;
}

}  // namespace

const KeySpec& phases_key() {
  static const KeySpec kPhases{
      "phases",
      [](Config& config, const Value& value) {
        config.phases = ChoiceListRule{phase_choices(), "phase", true}.read(value);
      },
      [](const Config& config, YAML::Emitter& out) { write_list(out, config.phases); }};
  return kPhases;
}

const std::vector<SectionSpec>& sections() {
  static const std::vector<SectionSpec> kSections = {
      topology_section(),   collectives_section(), gemm_section(),     train_section(),
      checkpoint_section(), devices_section(),     linkscan_section(), telemetry_section(),
      checks_section(),     audit_section(),       cost_section(),     output_section(),
      timeouts_section()};
  return kSections;
}

}  // namespace shakedown::config_detail
