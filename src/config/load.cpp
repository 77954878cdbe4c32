// Loading: raw text checks, YAML parsing, walking documents and --set overrides against the schema
// table, checks that span keys, and writing the effective config back out.
#include "config/load.hpp"
// configs/smoke.yaml itself, embedded at build time (CMake generates the header), so the binary
// runs without the source tree and the two cannot drift apart.
#include "config/smoke_yaml.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "config/detail.hpp"
#include "config/schema.hpp"
#include "core/error.hpp"

namespace shakedown {

namespace {

using config_detail::fail;
using config_detail::got;
using config_detail::in_quotes;
using config_detail::KeySpec;
using config_detail::Origin;
using config_detail::SectionSpec;
using config_detail::Value;
using Names = std::vector<std::string_view>;

// A config is a page of settings; anything this large is the wrong file (a log, a checkpoint).
constexpr std::size_t kMaxConfigBytes = 1 << 20;

// Where text comes from: a file has lines, a --set does not.
struct Source {
  std::string name;
  bool has_lines = true;

  Origin at_line(int line) const { return Origin{name, has_lines ? line : 0}; }
  Origin at(const YAML::Node& node) const {
    return at_line(node.Mark().line >= 0 ? node.Mark().line + 1 : 0);
  }
};

std::string hex_byte(unsigned byte) {
  std::array<char, 8> text{};
  std::snprintf(text.data(), text.size(), "0x%02x", byte);
  return text.data();
}

// Length of the valid UTF-8 sequence at text[i], or 0. Overlong forms, surrogates and values past
// U+10FFFF are invalid too: they are how binary data usually looks.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned lead = byte(i);
  std::size_t length = 0;
  std::uint32_t code = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    code = lead & 0x1fu;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    code = lead & 0x0fu;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    code = lead & 0x07u;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0u) != 0x80u) return 0;
    code = (code << 6) | (byte(i + k) & 0x3fu);
  }
  const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
  const bool surrogate = code >= 0xd800 && code <= 0xdfff;
  // C1 controls other than NEL are not printable YAML either.
  const bool c1_control = code >= 0x80 && code <= 0x9f && code != 0x85;
  if (overlong || surrogate || c1_control || code > 0x10ffff) return 0;
  return length;
}

// Checks the raw text before yaml-cpp sees it: yaml-cpp passes invalid UTF-8 through silently and
// reports a tab in indentation as "illegal map value", neither of which says what to fix.
void check_text(std::string_view text, const Source& source) {
  if (text.size() > kMaxConfigBytes) {
    fail(source.at_line(0), "",
         "is " + std::to_string(text.size()) +
             " bytes; a config is at most 1 MiB of YAML text (is this the right file?)");
  }
  const std::string_view binary_hint = "; a config must be UTF-8 text (is this a binary file?)";
  int line = 1;
  std::size_t line_start = 0;
  bool in_indent = true;
  std::size_t i = text.starts_with("\xef\xbb\xbf") ? 3 : 0;  // a UTF-8 byte order mark is fine
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::string column = " at column " + std::to_string(i - line_start + 1);
    if (byte == '\n') {
      ++line;
      line_start = i + 1;
      in_indent = true;
      ++i;
      continue;
    }
    if (byte == '\t' && in_indent) {
      // yaml-cpp also fails on tab-indented comments and tab-only lines, so any will do.
      fail(source.at_line(line), "",
           "tab character in the indentation" + column +
               "; YAML indents with spaces only (replace the tab with spaces)");
    }
    if (byte != ' ' && byte != '\t') in_indent = false;
    if (byte < 0x80) {
      if ((byte < 0x20 && byte != '\t' && byte != '\r') || byte == 0x7f) {
        fail(source.at_line(line), "",
             "control character " + hex_byte(byte) + column + std::string(binary_hint));
      }
      ++i;
      continue;
    }
    const std::size_t length = utf8_length(text, i);
    if (length == 0) {
      fail(source.at_line(line), "",
           "byte " + hex_byte(byte) + column + " is not valid UTF-8" + std::string(binary_hint));
    }
    i += length;
  }
}

[[noreturn]] void yaml_error(const Source& source, const YAML::Exception& error) {
  const int line = error.mark.line >= 0 ? error.mark.line + 1 : 0;
  std::string problem = "YAML syntax error";
  if (line > 0) problem += " at column " + std::to_string(error.mark.column + 1);
  problem += ": " + error.msg;
  if (error.msg == "illegal map value") {
    problem +=
        " (a value that itself contains \": \" must be quoted, and keys need a space "
        "after the colon)";
  }
  fail(source.at_line(line), "", problem);
}

// Records where each document starts. Documents are counted with this rather than
// YAML::LoadAll, which in yaml-cpp 0.7 loops forever, allocating, on input such as a line starting
// with ',' (jbeder/yaml-cpp#1040, fixed upstream by #1319): the parser stops consuming tokens and
// reports empty documents at the same place again and again.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;

  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Throws the UsageError for a yaml-cpp parse failure.
[[noreturn]] void parse_error(const Source& source, const YAML::ParserException& error) {
  if (const auto* deep = dynamic_cast<const YAML::DeepRecursion*>(&error)) {
    // yaml-cpp's own message for this is "bad file".
    fail(source.at_line(deep->mark.line >= 0 ? deep->mark.line + 1 : 0), "",
         "nested " + std::to_string(deep->depth()) +
             " levels deep or more; a config is a few levels of sections and lists");
  }
  yaml_error(source, error);
}

void check_documents(const std::string& text, const Source& source) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  // Two documents are enough to know the answer; a third call is never needed.
  while (starts.marks.size() < 2 && parser.HandleNextDocument(starts)) {
  }
  if (starts.marks.size() < 2) return;
  const YAML::Mark& second = starts.marks[1];
  if (second.pos == starts.marks[0].pos) {
    const std::size_t pos = second.pos >= 0 ? static_cast<std::size_t>(second.pos) : 0;
    const std::string found = pos < text.size() ? in_quotes(text.substr(pos, 1)) : "end of text";
    fail(source.at_line(second.line + 1), "",
         "YAML syntax error at column " + std::to_string(second.column + 1) + ": unexpected " +
             found + " (a value that starts with it must be quoted)");
  }
  fail(source.at_line(second.line + 1), "",
       "holds more than one YAML document (separated by '---'); a config is one document");
}

YAML::Node parse_yaml(std::string_view text, const Source& source) {
  check_text(text, source);
  const std::string owned(text);
  try {
    check_documents(owned, source);
    return YAML::Load(owned);
  } catch (const YAML::ParserException& error) {
    parse_error(source, error);
  } catch (const YAML::Exception& error) {
    yaml_error(source, error);
  }
}

Names section_names() {
  Names names;
  for (const SectionSpec& section : config_detail::sections()) names.push_back(section.name);
  return names;
}

Names top_level_names() {
  Names names = {config_detail::phases_key().name};
  for (std::string_view name : section_names()) names.push_back(name);
  return names;
}

Names key_names(const SectionSpec& section) {
  Names names;
  for (const KeySpec& key : section.keys) names.push_back(key.name);
  return names;
}

const SectionSpec* find_section(std::string_view name) {
  for (const SectionSpec& section : config_detail::sections()) {
    if (section.name == name) return &section;
  }
  return nullptr;
}

const KeySpec* find_key(const SectionSpec& section, std::string_view name) {
  for (const KeySpec& key : section.keys) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

// "collectives.hidden" is more often a key put in the wrong section than a typo: say where it goes.
std::string other_sections_with(std::string_view key, std::string_view except) {
  Names owners;
  for (const SectionSpec& section : config_detail::sections()) {
    if (section.name != except && find_key(section, key) != nullptr) owners.push_back(section.name);
  }
  return owners.empty() ? std::string() : join_choices(owners);
}

[[noreturn]] void unknown_key(const Origin& at, std::string_view parent, std::string_view key) {
  const SectionSpec* section = parent.empty() ? nullptr : find_section(parent);
  const Names known = section != nullptr ? key_names(*section) : top_level_names();
  std::string problem = "unknown key";
  std::string hint = did_you_mean(key, known);
  if (hint.empty()) {
    const std::string owners = other_sections_with(key, parent);
    if (!owners.empty()) {
      hint = "; \"" + std::string(key) + "\" belongs in " + owners +
             (parent.empty() ? "" : ", not in " + std::string(parent));
    }
  }
  problem += hint + " (accepted " +
             (parent.empty() ? "top-level keys" : "keys in " + std::string(parent)) + ": " +
             join_choices(known) + ")";
  const std::string path =
      parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
  fail(at, path, problem);
}

// Applies documents and overrides to a Config, remembering where each key was last set so that
// checks spanning keys can point at the line the user wrote.
class Loader {
 public:
  explicit Loader(Config& config) : config_(config) {}

  void apply_document(const YAML::Node& root, const Source& source) {
    source_ = source;
    if (root.IsNull()) return;  // an empty file: every key keeps its default
    if (!root.IsMap()) {
      fail(source.at(root), "",
           "is not a mapping: a config is a set of \"key: value\" sections (" +
               join_choices(top_level_names()) + "), " + got(root));
    }
    for_each_entry(root, "",
                   [&](const std::string& key, const Origin& at, const YAML::Node& value) {
                     apply_top(key, at, value);
                   });
  }

  void apply_override(std::string_view text) {
    source_ = Source{"--set " + in_quotes(text), false};
    const Origin at = source_.at_line(0);
    const std::string usage = "expected KEY.PATH=VALUE, e.g. --set collectives.iters=10";
    const auto equals = text.find('=');
    if (equals == std::string_view::npos) fail(at, "", "no '='; " + usage);
    const std::string key(trim(text.substr(0, equals)));
    if (key.empty()) fail(at, "", "nothing before '='; " + usage);
    const std::string_view value_text = text.substr(equals + 1);
    check_text(value_text, source_);
    YAML::Node value;
    try {
      // Parsed as YAML so lists and quoting work exactly as in a file: ops=[all_reduce].
      check_documents(std::string(value_text), source_);
      value = YAML::Load(std::string(value_text));
    } catch (const YAML::Exception& error) {
      fail(at, key, "the value is not valid YAML: " + error.msg);
    }
    const std::vector<std::string_view> parts = split(key, '.');
    for (std::string_view part : parts) {
      if (part.empty()) fail(at, key, "empty part in the key path; " + usage);
    }
    if (parts.size() == 1) {
      apply_top(key, at, value);
    } else if (parts.size() == 2 && parts[0] == config_detail::phases_key().name) {
      fail(at, key, "phases has no keys under it; write e.g. --set phases=[inventory,collectives]");
    } else if (parts.size() == 2) {
      const SectionSpec* section = find_section(parts[0]);
      if (section == nullptr) unknown_key(at, "", parts[0]);
      apply_key(*section, std::string(parts[1]), at, value);
    } else {
      fail(at, key, "too many levels: keys are SECTION.KEY (or phases); " + usage);
    }
  }

  // Settings that are fine one by one but contradict each other.
  void check_consistency() const {
    // A preset brings its own shape (train/model.cpp); these rules are for a custom one.
    const TrainConfig& train = config_.train;
    if (train.model == "custom" && train.hidden % train.heads != 0) {
      conflict("train.heads", "train.hidden",
               "train.hidden = " + std::to_string(train.hidden) + " is not divisible by " +
                   "train.heads = " + std::to_string(train.heads) +
                   "; every attention head needs the same width (hidden / heads)");
    }
    if (train.model == "custom" && train.kv_heads > 0 && train.heads % train.kv_heads != 0) {
      conflict("train.kv_heads", "train.heads",
               "train.heads = " + std::to_string(train.heads) + " is not divisible by " +
                   "train.kv_heads = " + std::to_string(train.kv_heads) +
                   "; grouped-query attention shares each key/value head among the same number "
                   "of query heads (use a divisor of heads, or 0 for one per head)");
    }
    const TimeoutsConfig& timeouts = config_.timeouts;
    if (timeouts.phase_s > timeouts.run_s) {
      conflict(
          "timeouts.phase_s", "timeouts.run_s",
          "timeouts.phase_s = " + config_detail::format_real(timeouts.phase_s) +
              " is longer than timeouts.run_s = " + config_detail::format_real(timeouts.run_s) +
              "; one phase step cannot be allowed more time than the whole run");
    }
    if (timeouts.init_s > timeouts.run_s) {
      conflict("timeouts.init_s", "timeouts.run_s",
               "timeouts.init_s = " + config_detail::format_real(timeouts.init_s) +
                   " is longer than timeouts.run_s = " +
                   config_detail::format_real(timeouts.run_s) + "; start-up is part of the run");
    }
    const CheckpointConfig& checkpoint = config_.checkpoint;
    if (!checkpoint.from_train && checkpoint.block_size > checkpoint.bytes_per_rank) {
      conflict("checkpoint.block_size", "checkpoint.bytes_per_rank",
               "checkpoint.block_size = " + format_size(checkpoint.block_size) +
                   " is larger than checkpoint.bytes_per_rank = " +
                   format_size(checkpoint.bytes_per_rank) +
                   "; a rank writes its bytes in blocks of block_size");
    }
    if (checkpoint.api == "mpiio" && checkpoint.layout != "shared_file") {
      conflict("checkpoint.api", "checkpoint.layout",
               "checkpoint.api = mpiio writes one shared file, but checkpoint.layout = " +
                   checkpoint.layout + "; set checkpoint.layout: shared_file, or api: posix");
    }
    if (checkpoint.api == "mpiio" && checkpoint.async) {
      conflict("checkpoint.async", "checkpoint.api",
               "checkpoint.async = true needs checkpoint.api = posix (MPI-IO's collective writes "
               "cannot run in a background thread under this MPI's thread level)");
    }
    if (checkpoint.api == "mpiio" && checkpoint.direct_io) {
      conflict("checkpoint.direct_io", "checkpoint.api",
               "checkpoint.direct_io = true needs checkpoint.api = posix (MPI-IO opens the file "
               "itself and takes no O_DIRECT)");
    }
    if (checkpoint.api == "mpiio" && checkpoint.block_size > (1ull << 30)) {
      conflict("checkpoint.block_size", "checkpoint.api",
               "checkpoint.block_size = " + format_size(checkpoint.block_size) +
                   " is more than 1GiB, the most one MPI-IO call here takes (an int count); "
                   "use a smaller block_size");
    }
  }

 private:
  struct SetAt {
    Origin at;
    int order = 0;
  };

  // Walks a mapping; yaml-cpp keeps both entries of a repeated key, so repeats are caught here.
  template <class Visit>
  void for_each_entry(const YAML::Node& map, const std::string& parent, Visit visit) {
    std::map<std::string, int> first_line;
    for (auto entry = map.begin(); entry != map.end(); ++entry) {
      const Origin at = source_.at(entry->first);
      if (!entry->first.IsScalar() || entry->first.Scalar().empty()) {
        fail(at, parent, "keys must be plain names, " + got(entry->first));
      }
      const std::string& key = entry->first.Scalar();
      const std::string path = parent.empty() ? key : parent + "." + key;
      if (const auto seen = first_line.find(key); seen != first_line.end()) {
        const std::string first =
            seen->second > 0 ? " (first at line " + std::to_string(seen->second) + ")" : "";
        fail(at, path, "duplicate key" + first + "; each key may appear once");
      }
      first_line.emplace(key, at.line);
      visit(key, at, entry->second);
    }
  }

  void apply_top(const std::string& key, const Origin& at, const YAML::Node& value) {
    if (key == config_detail::phases_key().name) {
      config_detail::phases_key().read(config_, Value{value, key, at});
      remember(key, at);
      return;
    }
    const SectionSpec* section = find_section(key);
    if (section == nullptr) unknown_key(at, "", key);
    if (value.IsNull()) return;  // "gemm:" alone: the section keeps its defaults
    if (!value.IsMap()) {
      fail(at, key,
           "must be a mapping of keys (" + join_choices(key_names(*section)) + "), " + got(value));
    }
    for_each_entry(value, key,
                   [&](const std::string& name, const Origin& key_at, const YAML::Node& key_value) {
                     apply_key(*section, name, key_at, key_value);
                   });
  }

  void apply_key(const SectionSpec& section, const std::string& name, const Origin& at,
                 const YAML::Node& value) {
    const KeySpec* key = find_key(section, name);
    if (key == nullptr) unknown_key(at, section.name, name);
    const std::string path = std::string(section.name) + "." + name;
    key->read(config_, Value{value, path, at});
    remember(path, at);
  }

  void remember(const std::string& path, const Origin& at) {
    set_at_[path] = SetAt{at, ++set_count_};
  }

  // "set at smoke.yaml:12", or "is the default" for a key nobody set.
  std::string where_set(const std::string& path) const {
    const auto found = set_at_.find(path);
    return found == set_at_.end() ? "is the default" : "set at " + found->second.at.str();
  }

  // Reports at whichever of the two keys was set last: that is the one the user just changed.
  [[noreturn]] void conflict(const std::string& key_a, const std::string& key_b,
                             const std::string& problem) const {
    const auto a = set_at_.find(key_a);
    const auto b = set_at_.find(key_b);
    const bool use_b =
        b != set_at_.end() && (a == set_at_.end() || b->second.order > a->second.order);
    const std::string& key = use_b ? key_b : key_a;
    const std::string& other = use_b ? key_a : key_b;
    const auto found = use_b ? b : a;
    const Origin at = found != set_at_.end() ? found->second.at : Origin{source_.name, 0};
    fail(at, key, problem + " (" + other + " " + where_set(other) + ")");
  }

  Config& config_;
  Source source_;
  std::map<std::string, SetAt> set_at_;
  int set_count_ = 0;
};

// yaml-cpp's emitter puts sections back to back; a blank line between them reads like full.yaml.
std::string space_sections(const std::string& yaml) {
  std::istringstream lines(yaml);
  std::string out;
  std::string line;
  while (std::getline(lines, line)) {
    if (!out.empty() && !line.empty() && line.front() != ' ') out += '\n';
    out += line + '\n';
  }
  return out;
}

}  // namespace

namespace {

Config load(std::string_view yaml_text, const Source& source,
            const std::vector<std::string>& overrides) {
  Config config;
  Loader loader(config);
  try {
    loader.apply_document(parse_yaml(yaml_text, source), source);
    for (const std::string& override_text : overrides) loader.apply_override(override_text);
  } catch (const YAML::Exception& error) {
    // Walking a parsed node should not throw, but a yaml-cpp surprise must still be a clean
    // usage error, never a crash.
    yaml_error(source, error);
  }
  loader.check_consistency();
  return config;
}

}  // namespace

Config load_config(std::string_view yaml_text, const std::string& source_name,
                   const std::vector<std::string>& overrides) {
  return load(yaml_text, Source{source_name, true}, overrides);
}

Config load_config_file(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status)) {
    throw UsageError(path + ": cannot read the config file: it does not exist");
  }
  if (std::filesystem::is_directory(status)) {
    throw UsageError(path + ": cannot read the config file: it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw UsageError(path + ": cannot read the config file: " + std::strerror(errno));
  }
  // One byte past the limit is enough for check_text to say the file is too large.
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw UsageError(path + ": cannot read the config file: read error");
  text.resize(static_cast<std::size_t>(in.gcount()));
  return load_config(text, path, overrides);
}

Config default_config(const std::vector<std::string>& overrides) {
  const Source source{"<built-in defaults = configs/smoke.yaml>", true};
  if (!overrides.empty()) return load(kSmokeYaml, source, overrides);
  static const Config kDefaults = load(kSmokeYaml, source, {});
  return kDefaults;
}

std::string to_yaml(const Config& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << std::string(config_detail::phases_key().name) << YAML::Value;
  config_detail::phases_key().write(config, out);
  for (const SectionSpec& section : config_detail::sections()) {
    out << YAML::Key << std::string(section.name) << YAML::Value << YAML::BeginMap;
    for (const KeySpec& key : section.keys) {
      out << YAML::Key << std::string(key.name) << YAML::Value;
      key.write(config, out);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  if (!out.good()) throw InternalError("to_yaml: yaml-cpp emitter failed: " + out.GetLastError());
  return space_sections(out.c_str());
}

}  // namespace shakedown
