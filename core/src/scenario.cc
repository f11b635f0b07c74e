#include "rdmalab/scenario.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "rdmalab/units.h"

namespace rdmalab {

std::string SourceLoc::to_string() const {
  if (line > 0) return fmt::format("{}:{}:{}", file, line, column);
  return file;
}

const char* value_type_name(ValueType t) noexcept {
  switch (t) {
    case ValueType::string: return "text";
    case ValueType::enumeration: return "one of a fixed set";
    case ValueType::integer: return "whole number";
    case ValueType::number: return "number";
    case ValueType::boolean: return "true or false";
    case ValueType::size: return "size with a unit (64KiB)";
    case ValueType::bandwidth: return "bandwidth with a unit (100Gbps, 12.5GB/s)";
    case ValueType::time: return "time with a unit (1us, 250ns)";
    case ValueType::size_list: return "size, list of sizes, or range (2B..8MiB)";
    case ValueType::int_list: return "list of whole numbers";
    case ValueType::string_list: return "list of text values";
  }
  return "?";
}

void Schema::add(KeySpec spec) { keys_[spec.key] = std::move(spec); }

const KeySpec* Schema::find(const std::string& key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? nullptr : &it->second;
}

void Schema::set_allowed(const std::string& key, std::vector<std::string> allowed) {
  auto it = keys_.find(key);
  if (it != keys_.end()) it->second.allowed = std::move(allowed);
}

void Schema::add_allowed(const std::string& key, const std::vector<std::string>& names) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  for (const auto& n : names)
    if (std::find(it->second.allowed.begin(), it->second.allowed.end(), n) == it->second.allowed.end()) it->second.allowed.push_back(n);
}

std::vector<std::string> Schema::alternatives_of(const std::string& key) const {
  std::vector<std::string> out;
  for (const auto& [a, b] : alternatives_) {
    if (a == key) out.push_back(b);
    if (b == key) out.push_back(a);
  }
  return out;
}

std::vector<std::string> Schema::keys_under(const std::string& prefix) const {
  std::vector<std::string> out;
  for (const auto& [k, spec] : keys_)
    if (k.rfind(prefix, 0) == 0) out.push_back(k);
  return out;
}

namespace {

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) {
    if (!s.empty()) s += sep;
    s += x;
  }
  return s;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

bool is_power_of_two(std::uint64_t v) { return v && !(v & (v - 1)); }

Status range_error(const KeySpec& spec, const std::string& text) {
  auto fmt_bound = [&](double b) -> std::string {
    switch (spec.type) {
      case ValueType::size:
      case ValueType::size_list: return units::format_size(static_cast<std::uint64_t>(b));
      case ValueType::time: return units::format_time(b);
      case ValueType::bandwidth: return units::format_bandwidth(b);
      default: return fmt::format("{}", b);
    }
  };
  std::string range;
  if (std::isfinite(spec.min) && std::isfinite(spec.max))
    range = fmt::format("between {} and {}", fmt_bound(spec.min), fmt_bound(spec.max));
  else if (std::isfinite(spec.min))
    range = fmt::format("at least {}", fmt_bound(spec.min));
  else
    range = fmt::format("at most {}", fmt_bound(spec.max));
  return Status(Errc::invalid_argument, fmt::format("value '{}' is out of range: must be {}", text, range));
}

Result<std::uint64_t> parse_size_in_range(const KeySpec& spec, const std::string& text) {
  auto v = units::parse_size(text);
  if (!v) return v.status();
  if (static_cast<double>(*v) < spec.min || static_cast<double>(*v) > spec.max) return range_error(spec, text);
  return v;
}

Result<std::int64_t> parse_int_in_range(const KeySpec& spec, const std::string& text) {
  std::int64_t v = 0;
  std::size_t pos = 0;
  try {
    v = std::stoll(text, &pos, 10);
  } catch (const std::out_of_range&) {
    return range_error(spec, text);  // digits, but more than 64 bits hold
  } catch (...) {
    pos = 0;
  }
  if (pos == 0 || pos != text.size())
    return Status(Errc::invalid_argument, fmt::format("'{}' is not a whole number", text));
  if (static_cast<double>(v) < spec.min || static_cast<double>(v) > spec.max) return range_error(spec, text);
  return v;
}

Result<Value> parse_scalar_list(const KeySpec& spec, const std::vector<std::string>& items) {
  if (items.empty()) return Status(Errc::invalid_argument, fmt::format("an empty list: give at least one {}", value_type_name(spec.type)));
  switch (spec.type) {
    case ValueType::size_list: {
      std::vector<std::uint64_t> out;
      for (const auto& it : items) {
        auto v = parse_size_in_range(spec, it);
        if (!v) return v.status();
        out.push_back(*v);
      }
      return Value(out);
    }
    case ValueType::int_list: {
      std::vector<std::int64_t> out;
      for (const auto& it : items) {
        auto v = parse_int_in_range(spec, it);
        if (!v) return v.status();
        out.push_back(*v);
      }
      return Value(out);
    }
    case ValueType::string_list: return Value(items);
    default: return Status(Errc::invalid_argument, fmt::format("expected a single value ({}), not a list", value_type_name(spec.type)));
  }
}

}  // namespace

Result<Value> parse_value(const KeySpec& spec, const std::string& text) {
  switch (spec.type) {
    case ValueType::string: return Value(text);
    case ValueType::enumeration:
      if (std::find(spec.allowed.begin(), spec.allowed.end(), text) == spec.allowed.end())
        return Status(Errc::invalid_argument, fmt::format("'{}' is not allowed (allowed: {})", text, join(spec.allowed)));
      return Value(text);
    case ValueType::integer: {
      auto v = parse_int_in_range(spec, text);
      if (!v) return v.status();
      return Value(*v);
    }
    case ValueType::number: {
      double v = 0;
      std::size_t pos = 0;
      try {
        v = std::stod(text, &pos);
      } catch (...) {
        pos = 0;
      }
      if (pos == 0 || pos != text.size() || !std::isfinite(v))
        return Status(Errc::invalid_argument, fmt::format("'{}' is not a finite number", text));
      if (v < spec.min || v > spec.max) return range_error(spec, text);
      return Value(v);
    }
    case ValueType::boolean:
      if (text == "true") return Value(true);
      if (text == "false") return Value(false);
      return Status(Errc::invalid_argument, fmt::format("'{}' is not a boolean (allowed: true, false)", text));
    case ValueType::size: {
      auto v = parse_size_in_range(spec, text);
      if (!v) return v.status();
      return Value(static_cast<std::int64_t>(*v));
    }
    case ValueType::bandwidth: {
      auto v = units::parse_bandwidth(text);
      if (!v) return v.status();
      if (*v < spec.min || *v > spec.max) return range_error(spec, text);
      return Value(*v);
    }
    case ValueType::time: {
      auto v = units::parse_time(text);
      if (!v) return v.status();
      if (*v < spec.min || *v > spec.max) return range_error(spec, text);
      return Value(*v);
    }
    case ValueType::size_list: {
      auto dots = text.find("..");
      if (dots == std::string::npos) return parse_scalar_list(spec, {text});
      auto lo = parse_size_in_range(spec, text.substr(0, dots));
      if (!lo) return lo.status();
      auto hi = parse_size_in_range(spec, text.substr(dots + 2));
      if (!hi) return hi.status();
      if (*lo == 0 || *lo > *hi)
        return Status(Errc::invalid_argument, fmt::format("range '{}' must go from a smaller to a larger non-zero size", text));
      if (!is_power_of_two(*lo) || !is_power_of_two(*hi))
        return Status(Errc::invalid_argument, fmt::format("range '{}' sweeps powers of two: both ends must be powers of two (e.g. 2B..8MiB)", text));
      std::vector<std::uint64_t> out;
      for (std::uint64_t s = *lo; s <= *hi; s *= 2) out.push_back(s);
      return Value(out);
    }
    case ValueType::int_list:
    case ValueType::string_list: return parse_scalar_list(spec, {text});
  }
  return Status(Errc::internal, "unknown value type");
}

namespace {

class Parser {
 public:
  Parser(const Schema& schema, std::string file, Scenario& out) : schema_(schema), file_(std::move(file)), out_(out) {}
  static constexpr std::size_t kMaxProblems = 20;  // a file of anything else stops being read as a scenario

  // Walks a mapping. A wrong key or value is noted and the walk goes on, so one pass reports
  // every problem of the file (problems()); only a non-mapping where keys belong stops it.
  Status walk(const YAML::Node& node, const std::string& path) {
    if (!node.IsMap()) {
      if (path.empty()) return err(node, "", "a scenario is a YAML mapping of keys (name:, backend:, fabric:, workload:)");
      return err(node, path, "expected a mapping of keys");
    }
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar()) {
        note(err(it->first, path, "keys must be plain words"));
        continue;
      }
      std::string key = it->first.Scalar();
      std::string child = path.empty() ? key : path + "." + key;
      if (!seen.insert(key).second) {
        note(err(it->first, child, "given twice in the same mapping (YAML keys are unique)"));
        continue;
      }
      if (const KeySpec* spec = schema_.find(child)) {
        note(set_leaf(*spec, it->second, loc_of(it->second.IsNull() ? it->first : it->second)));
      } else if (!schema_.keys_under(child + ".").empty()) {
        note(walk(it->second, child));
      } else {
        note(err(it->first, child, unknown_key_hint(child)));
      }
    }
    return Status::ok();
  }

  void note(const Status& st) {
    if (!st && problems_.size() < kMaxProblems) problems_.push_back(st.message());
  }
  // Every problem noted, one per line; ok when there is none.
  Status problems() const {
    if (problems_.empty()) return Status::ok();
    std::string all;
    for (const auto& p : problems_) all += (all.empty() ? "" : "\n") + p;
    return Status(Errc::invalid_argument, all);
  }

  Status set_leaf(const KeySpec& spec, const YAML::Node& node, SourceLoc loc) {
    if (out_.values.count(spec.key) && out_.values[spec.key].explicit_ && loc.file == file_)
      return located(loc, spec.key, "given twice");
    Result<Value> v = Status(Errc::internal, "unset");
    std::string text;
    if (node.IsNull()) {
      return located(loc, spec.key, fmt::format("has no value (expected {})", value_type_name(spec.type)));
    } else if (node.IsScalar()) {
      v = parse_value(spec, node.Scalar());
      text = node.Scalar();
    } else if (node.IsSequence()) {
      std::vector<std::string> items;
      for (const auto& item : node) {
        if (!item.IsScalar()) return located(loc_of(item), spec.key, "list items must be plain values");
        items.push_back(item.Scalar());
        text += (text.empty() ? "[" : ", ") + item.Scalar();
      }
      text = text.empty() ? "[]" : text + "]";
      v = parse_scalar_list(spec, items);
    } else {
      return located(loc, spec.key, fmt::format("expected {}, not a mapping", value_type_name(spec.type)));
    }
    if (!v) return located(loc, spec.key, v.status().message());
    out_.values[spec.key] = Entry{std::move(v).value(), loc, true, std::move(text)};
    return Status::ok();
  }

  SourceLoc loc_of(const YAML::Node& n) const {
    auto m = n.Mark();
    return SourceLoc{file_, m.line + 1, m.column + 1};
  }

  Status err(const YAML::Node& n, const std::string& key, const std::string& msg) const {
    return located(loc_of(n), key, msg);
  }

  static Status located(const SourceLoc& loc, const std::string& key, const std::string& msg) {
    if (key.empty()) return Status(Errc::invalid_argument, fmt::format("{}: {}", loc.to_string(), msg));
    return Status(Errc::invalid_argument, fmt::format("{}: {}: {}", loc.to_string(), key, msg));
  }

  std::string unknown_key_hint(const std::string& key) const {
    auto dot = key.rfind('.');
    std::string parent = dot == std::string::npos ? "" : key.substr(0, dot + 1);
    std::vector<std::string> siblings;
    std::set<std::string> seen;
    std::string best;
    std::size_t best_d = 1000;
    for (const auto& [k, spec] : schema_.all()) {
      if (k.rfind(parent, 0) != 0) continue;
      std::string rest = k.substr(parent.size());
      std::string first = rest.substr(0, rest.find('.'));
      if (!seen.insert(first).second) continue;
      siblings.push_back(first);
      std::size_t d = edit_distance(key.substr(parent.size()), first);
      if (d < best_d) best_d = d, best = first;
    }
    std::string msg = "unknown key";
    if (best_d <= 2) msg += fmt::format("; did you mean '{}{}'?", parent, best);
    msg += fmt::format(" (known keys{}: {})", parent.empty() ? "" : " under " + parent.substr(0, parent.size() - 1), join(siblings));
    return msg;
  }

 private:
  const Schema& schema_;
  std::vector<std::string> problems_;
  std::string file_;
  Scenario& out_;
};

}  // namespace

Result<Scenario> parse_scenario(const std::string& text, const std::string& filename,
                                const std::vector<std::string>& overrides, const Schema& schema) {
  Scenario sc;
  sc.file = filename;
  sc.checks = schema.checks();
  Parser p(schema, filename, sc);
  // A scenario is UTF-8 text in one YAML document: a NUL byte (yaml-cpp would guess UTF-16), a
  // lone carriage return (old Mac line ends: the whole file would read as one comment), invalid
  // UTF-8 or a second document are refused with where they are.
  {
    int line = 1;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c == '\n') ++line;
      if (c == 0) return Status(Errc::invalid_argument, fmt::format("{}:{}: a NUL byte: a scenario is UTF-8 text", filename, line));
      // Control characters (an escape sequence would act on the terminal that prints a value
      // back) have no place in a scenario; tabs and line ends do.
      if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7f)
        return Status(Errc::invalid_argument, fmt::format("{}:{}: a control character (0x{:02x}): a scenario is plain text", filename, line, c));
      if (c == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'))
        return Status(Errc::invalid_argument, fmt::format("{}:{}: a carriage return without a line feed: save the file with Unix (LF) or "
                                                          "Windows (CRLF) line ends", filename, line));
      if (c >= 0x80) {
        const int n = (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
        bool ok = n > 0 && c >= 0xC2 && c <= 0xF4 && i + static_cast<std::size_t>(n) < text.size();
        for (int k = 1; ok && k <= n; ++k) ok = (static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]) & 0xC0) == 0x80;
        if (!ok) return Status(Errc::invalid_argument, fmt::format("{}:{}: a byte that is not UTF-8 (0x{:02x}): a scenario is UTF-8 text", filename, line, c));
        i += static_cast<std::size_t>(n);
      }
    }
  }
  // One document: a '---' or '...' line followed by more content starts a second one. (Found
  // by reading lines, not with YAML::LoadAll: yaml-cpp 0.7's LoadAll loops forever, allocating,
  // on some malformed input such as a line starting with ',' — found by tests/fuzz.)
  int first_content = 0;
  {
    int line = 0;
    bool seen = false, after_marker = false;
    std::size_t pos = 0;
    while (pos <= text.size()) {
      const std::size_t nl = text.find('\n', pos);
      std::string l = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      ++line;
      if (!l.empty() && l.back() == '\r') l.pop_back();
      const bool marker = (l.rfind("---", 0) == 0 || l.rfind("...", 0) == 0) && (l.size() == 3 || l[3] == ' ' || l[3] == '\t');
      const auto first = l.find_first_not_of(" \t");
      const bool content = first != std::string::npos && l[first] != '#' && !marker;
      if (marker && seen) after_marker = true;
      if (content && after_marker)
        return Status(Errc::invalid_argument, fmt::format("{}:{}: a second YAML document: a scenario is one document (drop the '---' and "
                                                          "what follows, or split it into two files)", filename, line));
      if (content && !seen) first_content = line;
      seen = seen || content;
      if (nl == std::string::npos) break;
      pos = nl + 1;
    }
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status(Errc::invalid_argument,
                  fmt::format("{}:{}:{}: YAML syntax error: {}", filename, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  // Text that yaml-cpp reads as nothing (it does so for some malformed lines) is not an empty file.
  if (root.IsNull() && first_content > 0)
    return Status(Errc::invalid_argument, fmt::format("{}:{}: not YAML that can be read as a scenario (a mapping of keys: name:, "
                                                      "backend:, fabric:, workload:)", filename, first_content));
  if (!root.IsNull()) RDMALAB_TRY(p.walk(root, ""));
  RDMALAB_TRY(p.problems());

  for (const auto& ov : overrides) {
    auto eq = ov.find('=');
    SourceLoc loc{fmt::format("--set {}", ov), 0, 0};
    if (eq == std::string::npos || eq == 0)
      return Status(Errc::invalid_argument, fmt::format("--set '{}': expected KEY=VALUE, e.g. --set workload.size=1MiB", ov));
    std::string key = ov.substr(0, eq);
    for (unsigned char c : ov)
      if (c < 0x20 || c == 0x7f)
        return Status(Errc::invalid_argument, fmt::format("--set {}: a control character (0x{:02x}) in the value: give plain text",
                                                          key.size() > 60 ? key.substr(0, 60) + "…" : key, c));
    const KeySpec* spec = schema.find(key);
    if (!spec) {
      std::string hint;
      std::size_t best = 1000;
      for (const auto& [k, s] : schema.all()) {
        std::size_t d = edit_distance(key, k);
        if (d < best) best = d, hint = k;
      }
      return Status(Errc::invalid_argument, fmt::format("--set '{}': unknown key '{}'{}", ov, key,
                                                        best <= 3 ? fmt::format("; did you mean '{}'?", hint) : std::string()));
    }
    YAML::Node node;
    try {
      node = YAML::Load(ov.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      return Status(Errc::invalid_argument, fmt::format("--set '{}': cannot read the value: {}", ov, e.msg));
    }
    sc.values.erase(key);
    for (const auto& other : schema.alternatives_of(key)) sc.values.erase(other);
    RDMALAB_TRY(p.set_leaf(*spec, node, loc));
  }

  // Presets fill what the file and --set left unset.
  for (const auto& preset : schema.presets()) {
    auto sel = sc.values.find(preset.selector);
    if (sel == sc.values.end() || sel->second.text != preset.name) continue;
    for (const auto& [key, value_text] : preset.values) {
      const KeySpec* spec = schema.find(key);
      if (!spec || sc.values.count(key)) continue;
      bool alt_set = false;
      for (const auto& other : schema.alternatives_of(key)) alt_set = alt_set || sc.values.count(other) > 0;
      if (alt_set) continue;
      YAML::Node node = YAML::Load(value_text);
      RDMALAB_TRY(p.set_leaf(*spec, node, SourceLoc{fmt::format("preset {}", preset.name), 0, 0}));
    }
  }
  for (const auto& [key, spec] : schema.all()) {
    if (sc.values.count(key) || spec.default_value.empty()) continue;
    auto v = parse_value(spec, spec.default_value);
    if (!v) return Status(Errc::internal, fmt::format("default of {} does not parse: {}", key, v.status().message()));
    sc.values[key] = Entry{std::move(v).value(), SourceLoc{"default", 0, 0}, false, spec.default_value};
  }
  return sc;
}

Result<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& overrides, const Schema& schema) {
  // A scenario is a small text file: anything else (a folder, a device, a fifo, something huge)
  // is refused before it is read, and at most kMaxBytes are ever read.
  constexpr std::size_t kMaxBytes = 1 << 20;
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return Status(Errc::io, fmt::format("{}: cannot open the scenario file: no such file", path));
  if (!std::filesystem::is_regular_file(st))
    return Status(Errc::invalid_argument, fmt::format("{}: not a regular file ({}): a scenario is a YAML text file", path,
                                                      std::filesystem::is_directory(st) ? "a folder" : "a device, fifo or socket"));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Errc::io, fmt::format("{}: cannot open the scenario file", path));
  std::string text(kMaxBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxBytes)
    return Status(Errc::invalid_argument, fmt::format("{}: over {} KiB: a scenario is a small text file", path, kMaxBytes / 1024));
  return parse_scenario(text, path, overrides, schema);
}

bool Scenario::has(const std::string& key) const { return values.count(key) != 0; }
bool Scenario::is_set(const std::string& key) const {
  auto it = values.find(key);
  return it != values.end() && it->second.explicit_;
}
const SourceLoc& Scenario::loc(const std::string& key) const {
  static const SourceLoc none{"(unset)", 0, 0};
  auto it = values.find(key);
  return it == values.end() ? none : it->second.loc;
}

namespace {
template <typename T>
const T& get_as(const Scenario& sc, const std::string& key) {
  auto it = sc.values.find(key);
  if (it == sc.values.end()) throw std::logic_error("scenario key not set and has no default: " + key);
  const T* v = std::get_if<T>(&it->second.value);
  if (!v) throw std::logic_error("scenario key read as the wrong type: " + key);
  return *v;
}
}  // namespace

std::string Scenario::get_string(const std::string& key) const { return get_as<std::string>(*this, key); }
std::int64_t Scenario::get_int(const std::string& key) const { return get_as<std::int64_t>(*this, key); }
double Scenario::get_number(const std::string& key) const { return get_as<double>(*this, key); }
bool Scenario::get_bool(const std::string& key) const { return get_as<bool>(*this, key); }
std::uint64_t Scenario::get_size(const std::string& key) const { return static_cast<std::uint64_t>(get_as<std::int64_t>(*this, key)); }
double Scenario::get_bandwidth(const std::string& key) const { return get_as<double>(*this, key); }
double Scenario::get_time(const std::string& key) const { return get_as<double>(*this, key); }
std::vector<std::uint64_t> Scenario::get_sizes(const std::string& key) const { return get_as<std::vector<std::uint64_t>>(*this, key); }
std::vector<std::int64_t> Scenario::get_ints(const std::string& key) const { return get_as<std::vector<std::int64_t>>(*this, key); }
std::vector<std::string> Scenario::get_strings(const std::string& key) const { return get_as<std::vector<std::string>>(*this, key); }

Status Scenario::error(const std::string& key, const std::string& message) const {
  return Status(Errc::invalid_argument, fmt::format("{}: {}: {}", loc(key).to_string(), key, message));
}

}  // namespace rdmalab
