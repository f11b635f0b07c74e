// Scenario files: YAML lab sheets that say what to run, on what, with which parameters.
//
// Every key a scenario may use is declared in a Schema (core declares the common keys; each
// backend adds its own), with its type, default, allowed values and range. A file is checked
// completely before anything runs: YAML syntax, unknown keys, wrong types, units, ranges.
// Errors name the file, line and column, the key, and what would be allowed.
// The format is documented in docs/scenarios.md.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "rdmalab/status.h"

namespace rdmalab {

struct SourceLoc {
  std::string file;  // file path, or "--set" for a command-line override, or "default"
  int line = 0;      // 1-based; 0 when not from a file
  int column = 0;
  std::string to_string() const;
  bool from_command_line() const { return file.rfind("--set", 0) == 0; }  // a --set override
};

enum class ValueType {
  string,       // free text
  enumeration,  // one of KeySpec::allowed
  integer,      // whole number in [min, max]
  number,       // real number in [min, max]
  boolean,      // true | false
  size,         // bytes with a unit: 64KiB
  bandwidth,    // bytes/s with a unit: 100Gbps, 12.5GB/s
  time,         // seconds with a unit: 1.5us
  size_list,    // a size, a list of sizes, or a power-of-two range "2B..8MiB"
  int_list,     // a list of whole numbers in [min, max]
  string_list,  // a list of free-text strings
};
const char* value_type_name(ValueType t) noexcept;

struct KeySpec {
  std::string key;            // dotted path: workload.size
  ValueType type = ValueType::string;
  std::string default_value;  // in the same text form a user writes; empty = no default
  std::string help;
  std::vector<std::string> allowed;  // enumeration
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
};

using Value = std::variant<std::string, std::int64_t, double, bool, std::vector<std::uint64_t>, std::vector<std::int64_t>,
                           std::vector<std::string>>;

struct Scenario;

class Schema {
 public:
  // A check of several keys that holds whichever backend runs (a fabric's shape agrees with
  // fabric.nodes), declared by whoever declares the keys; check_run runs them (run.h).
  using Check = std::function<Status(const Scenario&)>;

  // Adds a key; replaces an earlier spec with the same key.
  void add(KeySpec spec);
  void add(std::string key, ValueType type, std::string default_value, std::string help,
           double min = -std::numeric_limits<double>::infinity(), double max = std::numeric_limits<double>::infinity(),
           std::vector<std::string> allowed = {}) {
    add(KeySpec{std::move(key), type, std::move(default_value), std::move(help), std::move(allowed), min, max});
  }
  // An enumeration: one of `allowed`.
  void add_choice(std::string key, std::string default_value, std::string help, std::vector<std::string> allowed) {
    add(std::move(key), ValueType::enumeration, std::move(default_value), std::move(help), -std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::infinity(), std::move(allowed));
  }
  const KeySpec* find(const std::string& key) const;
  const std::map<std::string, KeySpec>& all() const { return keys_; }
  void set_allowed(const std::string& key, std::vector<std::string> allowed);
  // Adds names to an enumeration (those it does not have yet), in order.
  void add_allowed(const std::string& key, const std::vector<std::string>& names);
  void add_check(Check check) { checks_.push_back(std::move(check)); }
  const std::vector<Check>& checks() const { return checks_; }
  // Two keys that say the same thing two ways (size / sizes): a --set of one replaces the
  // other when the file gave it.
  void add_alternatives(const std::string& a, const std::string& b) { alternatives_.emplace_back(a, b); }
  std::vector<std::string> alternatives_of(const std::string& key) const;
  // Known keys under a prefix ("workload."), for "did you mean" messages.
  std::vector<std::string> keys_under(const std::string& prefix) const;

  // A preset: when the scenario sets `selector` (an enumeration key) to `name`, every key of
  // `values` the scenario does not set itself takes the preset's value (as text, parsed like a
  // file's). `source` says where the numbers come from (docs). Keys not in the schema are skipped.
  struct Preset {
    std::string selector, name, source;
    std::vector<std::pair<std::string, std::string>> values;
  };
  void add_preset(Preset preset) { presets_.push_back(std::move(preset)); }
  const std::vector<Preset>& presets() const { return presets_; }

 private:
  std::vector<Check> checks_;
  std::vector<Preset> presets_;
  std::map<std::string, KeySpec> keys_;
  std::vector<std::pair<std::string, std::string>> alternatives_;
};

// The keys core itself understands (name, backend, seed, fabric basics, workload parameters).
Schema core_schema();

struct Entry {
  Value value;
  SourceLoc loc;
  bool explicit_ = false;  // written in the file or by --set (not a default)
  std::string text;        // as written ("64KiB", "[1, 2]"), or the default's text: for forms
  // Where its value came from: "file:line:column", "--set key=value", or "default".
  std::string source() const { return explicit_ ? loc.to_string() : "default"; }
};

struct Scenario {
  std::string file;
  std::map<std::string, Entry> values;  // every schema key, explicit or default
  std::vector<Schema::Check> checks;    // the schema's checks of several keys (check_run runs them)

  bool has(const std::string& key) const;       // present (explicit or default)
  bool is_set(const std::string& key) const;    // written by the user
  const SourceLoc& loc(const std::string& key) const;

  std::string get_string(const std::string& key) const;
  std::int64_t get_int(const std::string& key) const;
  double get_number(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::uint64_t get_size(const std::string& key) const;
  double get_bandwidth(const std::string& key) const;  // bytes per second
  double get_time(const std::string& key) const;       // seconds
  std::vector<std::uint64_t> get_sizes(const std::string& key) const;
  std::vector<std::int64_t> get_ints(const std::string& key) const;
  std::vector<std::string> get_strings(const std::string& key) const;

  // A clear error about a key, for checks that need several keys at once:
  // "scenarios/x.yaml:12:9: workload.tx_depth: ...".
  Status error(const std::string& key, const std::string& message) const;
};

// Parses and checks a scenario. `overrides` are "key=value" strings from --set, applied on top
// of the file (the value is read as YAML, so lists work: --set 'workload.sizes=[1KiB,2KiB]').
// Errors: io (file unreadable), invalid_argument (anything wrong in it), with location.
Result<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& overrides, const Schema& schema);
Result<Scenario> parse_scenario(const std::string& text, const std::string& filename,
                                const std::vector<std::string>& overrides, const Schema& schema);

// Parses one text value as the given type. Exposed for the GUI form and tests.
Result<Value> parse_value(const KeySpec& spec, const std::string& text);

}  // namespace rdmalab
