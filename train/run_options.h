#pragma once
// One parser for the options of every app (train_cifar, train_unet, predict). Each option is
// declared once: its key, the field of the app's options struct it fills (the field's initial
// value is its default), its help text and the check of its value. From those declarations come
// the JSON of the options (what checkpoints record), the flags (--batch-size for the key
// batch_size), --help, and one layering, later sources overriding earlier ones:
//   defaults < --preset NAME < --config FILE.json < flags < --set key=value (repeatable)
// An unknown key or a value of the wrong type is an error naming the key and where the value
// came from (the flag, the --set, the config file and line); so are strings that are not UTF-8
// and JSON nested deeper than kMaxConfigDepth (a config is flat; a value nested 300,000 deep
// once overflowed the stack). Then each value is checked (its range, its choices) in the order
// declared — a config file's value named with its line — then the checks across options.
//
// An app declares its options once, in a function that returns them:
//   train::RunOptions<UnetConfig> o("train_unet", "train a UNet to segment ...");
//   o.section("Model");
//   o.add("depth", &UnetConfig::depth, "UNet poolings", train::in_range<int64_t>(1, 8));
//   o.include(train::machine_options());  // the groups the apps share (common_options.h)
//   o.check([](const UnetConfig& c) { ... });  // a rule across options
// and reads them with o.parse(argc, argv), or o.read(json) for a config built in code.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace rg::train {

using Json = nlohmann::json;

inline constexpr int kMaxConfigDepth = 8;
inline constexpr int64_t kMaxConfigFileBytes = 1 << 20;

// How an option appears on the command line.
enum class Flag {
  standard,     // --key-with-dashes VALUE; a boolean: --key-with-dashes alone sets it true;
                // a list of strings: repeatable (--fault A --fault B)
  negated,      // a boolean: --no-key-with-dashes sets it false (--no-progress)
  positional,   // a list of strings: the arguments without a flag (predict's inputs)
  config_only,  // no flag: --config and --set only
  // A flag only: not a key of --config or --set, and not in the JSON checkpoints record
  // (--fault: an experiment, not a recipe).
  command_line_only,
};

// Where an app's options come from: every layer, or its command line alone (predict: a
// command, not a recipe).
enum class Sources { all, command_line };

// Ends of an interval: [lo, hi], (lo, hi), (lo, hi], [lo, hi).
enum class Interval { closed, open, left_open, right_open };

// The check of one value; it throws rg::Error naming the key. Doubles are checked finite first,
// whatever their check (JSON numbers such as 1e400 parse to infinity; a program may set NaN).
template <class T>
using Check = std::function<void(const std::string& key, const T& value)>;

std::string number_text(double v);  // the shortest exact text: 1e+06, 1048576, 0.001, nan
inline std::string number_text(int64_t v) {
  return std::to_string(v);
}

// The usual checks, each with its message: "<key> must be in [lo, hi] <note>, got <value>".
template <class T>
Check<T> in_range(T lo, T hi, std::string note = {}) {
  return [=](const std::string& key, const T& v) {
    RG_CHECK(v >= lo && v <= hi, key, " must be in [", number_text(lo), ", ", number_text(hi), "]",
             note.empty() ? "" : " ", note, ", got ", number_text(v));
  };
}
template <class T>
Check<T> at_least(T lo, std::string note = {}) {
  return [=](const std::string& key, const T& v) {
    RG_CHECK(v >= lo, key, " must be >= ", number_text(lo), note.empty() ? "" : " ", note, ", got ",
             number_text(v));
  };
}
Check<double> in_interval(double lo, double hi, Interval ends, std::string note = {});
Check<double> positive();                                     // "<key> must be > 0, got <v>"
Check<std::string> one_of(std::vector<std::string> choices);  // "<key> must be a, b or c, got 'd'"
Check<std::string> not_empty(std::string what);               // "<key> must <what>"

// The types an option may have, as a config names them.
enum class ValueKind { boolean, integer, number, text, integers, texts };

// An option's default: the struct's initial value, or derived from other options by a
// derived_defaults rule — which JSON null (in a config, --set key=null) asks for too, as leaving
// the option out does.
enum class Default { fixed, derived };

// One declared option, apart from the struct field it fills.
struct OptionInfo {
  std::string key{};
  std::string help{};
  std::string section{};  // its group in --help; empty: the current one
  ValueKind kind = ValueKind::text;
  Flag flag = Flag::standard;
  std::string value_name{};  // in --help: INT, NUMBER, TEXT, ...
  // The value of a flag's or --set's text when that is not JSON of the option's type ("64x64" for
  // a list of sides); empty: the usual reading (JSON, or the bare text for a string).
  std::function<Json(const std::string& text)> from_text{};
  // A flag taking several values (--data folder DIR) sets the keys of the object this returns.
  int min_values = 1, max_values = 1;
  std::function<Json(const std::vector<std::string>& texts)> from_values{};
  Default default_kind = Default::fixed;
  // A boolean's second flag, --no-<key> (setting it false; the two exclude each other): its
  // help. Empty: none.
  std::string negated_help{};

  std::string flag_name() const;  // "--batch-size", "--no-progress", "inputs"
  bool is_config_key() const { return flag != Flag::command_line_only; }
  // Whether `value` may be its value: of its type, or null for a derived default.
  bool accepts(const Json& value) const;
  OptionInfo& reads_text(std::function<Json(const std::string&)> convert, std::string name);
  OptionInfo& takes_values(int min, int max, std::function<Json(const std::vector<std::string>&)>,
                           std::string name);
  OptionInfo& derived_default();
  OptionInfo& negated_by(std::string help);
};

struct Preset {
  std::string name;
  Json values;  // options by key, merged over the defaults
};

// The layering of the options, on JSON: what every app shares, whatever its struct.
class OptionTable {
 public:
  OptionTable(std::string program, std::string description, Sources sources = Sources::all);
  virtual ~OptionTable() = default;

  const std::string& program() const { return program_; }
  const std::vector<OptionInfo>& options() const { return options_; }
  // Options declared after this go under `title` in --help.
  void section(std::string title) { section_ = std::move(title); }

  // Every config key with its default (null: derived from the others): what a config may hold.
  Json defaults() const;
  std::vector<std::string> preset_names() const;
  const Json& preset(const std::string& name) const;  // throws naming the known ones

  // The layers, each onto `values` (an object of options by key; the keys it lacks keep their
  // defaults): `overrides` from `source` (a message's first words), --config's file, one --set.
  void merge(Json& values, const Json& overrides, const std::string& source) const;
  // A file's errors name it and the line of the key, "run.json:3"; `origins` gets that place of
  // each key, so that a value failing its check later is named with it.
  using Origins = std::map<std::string, std::string>;
  void merge_file(Json& values, const std::string& path,  // regular, <= 1 MiB, JSON
                  Origins* origins = nullptr) const;
  void apply_set(Json& values, const std::string& assignment) const;

  // Every layer of argv (with the place in --config's file of each value set there), or the
  // help text when --help was asked for.
  struct Layers {
    Json values = Json::object();
    Origins origins{};
    bool help_requested = false;
    std::string help;
  };
  Layers layer_command_line(int argc, char** argv) const;

 protected:
  OptionInfo& declare(OptionInfo info);
  void declare_presets(std::vector<Preset> presets);
  const OptionInfo* find(const std::string& key) const;
  // The values' keys are declared and their types right (a config built in code, a test's).
  void check_types(const Json& values) const;
  // Every option's default, the command line's included (for --help); from the app's struct.
  virtual Json default_values() const = 0;
  // Throws `error`, about `key`'s value, with the place in a config file that set it if one did.
  [[noreturn]] static void fail_from(const Error& error, const std::string& key,
                                     const Origins& origins);

 private:
  void set_value(Json& values, const OptionInfo& option, Json value,
                 const std::string& source) const;
  std::string footer(const Json& defaults) const;

  std::string program_, description_, section_ = "Options";
  Sources sources_;
  std::vector<OptionInfo> options_;
  std::vector<Preset> presets_;
};

template <class Config>
struct CommandLine {
  Config config{};
  bool help_requested = false;
  std::string help;
};

template <class T>
constexpr ValueKind value_kind() {
  if constexpr (std::is_same_v<T, bool>)
    return ValueKind::boolean;
  else if constexpr (std::is_same_v<T, int64_t>)
    return ValueKind::integer;
  else if constexpr (std::is_same_v<T, double>)
    return ValueKind::number;
  else if constexpr (std::is_same_v<T, std::string>)
    return ValueKind::text;
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
    return ValueKind::integers;
  else {
    static_assert(std::is_same_v<T, std::vector<std::string>>,
                  "an option is a bool, int64_t, double, string, or a list of int64_t or string");
    return ValueKind::texts;
  }
}

// The options of one app, read into its struct `Config` (default-constructible: its initial
// values are the defaults).
template <class Config>
class RunOptions : public OptionTable {
 public:
  using OptionTable::OptionTable;

  // Declares the option `key` that fills `field`, checked by `check` (empty: any value of its
  // type). Returns the declaration, for a flag of several values or a text of its own.
  // `field` may be a member of a struct `Config` extends.
  template <class T, class Owner>
  requires std::derived_from<Config, Owner> OptionInfo& add(
      std::string key, T Owner::*field, std::string help, std::type_identity_t<Check<T>> check = {},
      Flag flag = Flag::standard) {
    bindings_.push_back({[field](Config& c, const Json& v) { c.*field = v.get<T>(); },
                         [field](const Config& c) { return Json(c.*field); },
                         [field, key, check](const Config& c) {
                           if constexpr (std::is_same_v<T, double>)
                             RG_CHECK(std::isfinite(c.*field), key,
                                      " must be a finite number, got ", number_text(c.*field));
                           if (check) check(key, c.*field);
                         }});
    return declare(
        {.key = std::move(key), .help = std::move(help), .kind = value_kind<T>(), .flag = flag});
  }

  // Named recipes (--preset NAME), whose name `field` records ("preset" in a config).
  void presets(std::string Config::*field, std::vector<Preset> presets) {
    std::string names;
    for (std::size_t i = 0; i < presets.size(); ++i)
      names += (i == 0 ? "" : i + 1 == presets.size() ? " or " : ", ") + presets[i].name;
    add("preset", field, "the named recipe the options started from (--preset NAME: " + names + ")",
        {}, Flag::config_only);
    declare_presets(std::move(presets));
  }

  // The options of a group, with its rules across options; or, with `only`, just those keys
  // (and none of its rules). The group's struct is a base of `Config`, or its member `member`.
  template <class Part>
  requires std::derived_from<Config, Part> RunOptions& include(
      const RunOptions<Part>& part, const std::vector<std::string>& only = {}) {
    return include_through(
        part, [](auto& c) -> decltype(auto) { return (c); }, only);
  }
  template <class Part>
  RunOptions& include(const RunOptions<Part>& part, Part Config::*member,
                      const std::vector<std::string>& only = {}) {
    return include_through(
        part, [member](auto& c) -> decltype(auto) { return (c.*member); }, only);
  }

  // A rule across options, checked after every value's own check.
  void check(std::function<void(const Config&)> rule) { rules_.push_back(std::move(rule)); }
  // A default that depends on other options (train_unet: files are multiclass unless --classes
  // says otherwise): `derive` sees the options read and the keys the layers set.
  void derived_defaults(std::function<void(Config&, const Json& given)> derive) {
    derived_.push_back(std::move(derive));
  }

  // The options: `values` (options by key, as the layers left them) over the defaults, checked;
  // a value that fails its check is named with its place in a config file, if `origins` has it.
  Config read(const Json& values, const Origins& origins = {}) const {
    check_types(values);
    Json given = Json::object();  // null asks for a derived default, as an absent key does
    for (const auto& [key, value] : values.items())
      if (!value.is_null()) given[key] = value;
    Config c{};
    for (std::size_t i = 0; i < bindings_.size(); ++i)
      if (given.contains(options()[i].key)) bindings_[i].read(c, given.at(options()[i].key));
    for (const auto& derive : derived_) derive(c, given);
    validate(c, origins);
    return c;
  }

  // Checks options set in code (a test's, a run's): each value, then the rules across options.
  void validate(const Config& c, const Origins& origins = {}) const {
    for (std::size_t i = 0; i < bindings_.size(); ++i) {
      try {
        bindings_[i].check(c);
      } catch (const Error& e) {
        fail_from(e, options()[i].key, origins);
      }
    }
    for (const auto& rule : rules_) rule(c);
  }

  // What a checkpoint records: every config key's value.
  Json to_json(const Config& c) const {
    Json j = Json::object();
    for (std::size_t i = 0; i < bindings_.size(); ++i)
      if (options()[i].is_config_key()) j[options()[i].key] = bindings_[i].write(c);
    return j;
  }

  // argv's options (throws rg::Error naming a bad flag or value), or the help text.
  CommandLine<Config> parse(int argc, char** argv) const {
    Layers layers = layer_command_line(argc, argv);
    if (layers.help_requested) return {Config{}, true, std::move(layers.help)};
    return {read(layers.values, layers.origins), false, ""};
  }

  // One option's access to the struct, by its declaration's index (include() copies them).
  struct Binding {
    std::function<void(Config&, const Json&)> read;
    std::function<Json(const Config&)> write;
    std::function<void(const Config&)> check;
  };
  const std::vector<Binding>& bindings() const { return bindings_; }
  const std::vector<std::function<void(const Config&)>>& rules() const { return rules_; }

 protected:
  Json default_values() const override {
    Json j = Json::object();
    const Config defaults;
    for (std::size_t i = 0; i < bindings_.size(); ++i)
      j[options()[i].key] = bindings_[i].write(defaults);
    return j;
  }

 private:
  // `part` of the struct: `Config&` -> `Part&` (and const -> const).
  template <class Part, class PartOf>
  RunOptions& include_through(const RunOptions<Part>& part, PartOf part_of,
                              const std::vector<std::string>& only) {
    for (std::size_t i = 0; i < part.options().size(); ++i) {
      const OptionInfo& info = part.options()[i];
      if (!only.empty() && std::find(only.begin(), only.end(), info.key) == only.end()) continue;
      const auto& b = part.bindings()[i];
      bindings_.push_back(
          {[read = b.read, part_of](Config& c, const Json& v) { read(part_of(c), v); },
           [write = b.write, part_of](const Config& c) { return write(part_of(c)); },
           [check = b.check, part_of](const Config& c) { check(part_of(c)); }});
      declare(info);
    }
    if (only.empty())
      for (const auto& rule : part.rules())
        rules_.push_back([rule, part_of](const Config& c) { rule(part_of(c)); });
    return *this;
  }

  std::vector<Binding> bindings_;
  std::vector<std::function<void(const Config&)>> rules_;
  std::vector<std::function<void(Config&, const Json&)>> derived_;
};

}  // namespace rg::train
