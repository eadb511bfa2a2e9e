#include "train/run_options.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace rg::train {
namespace fs = std::filesystem;

namespace {

const char* type_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::boolean:
      return "a boolean";
    case ValueKind::integer:
      return "an integer";
    case ValueKind::number:
      return "a number";
    case ValueKind::text:
      return "a string";
    case ValueKind::integers:
      return "a list of integers";
    case ValueKind::texts:
      return "a list of strings";
  }
  return "?";
}

bool same_type(ValueKind kind, const Json& v) {
  auto all = [&](bool (Json::*is)() const noexcept) {
    return v.is_array() &&
           std::all_of(v.begin(), v.end(), [&](const Json& e) { return (e.*is)(); });
  };
  switch (kind) {
    case ValueKind::boolean:
      return v.is_boolean();
    case ValueKind::integer:
      return v.is_number_integer();
    case ValueKind::number:
      return v.is_number();
    case ValueKind::text:
      return v.is_string();
    case ValueKind::integers:
      return all(&Json::is_number_integer);
    case ValueKind::texts:
      return all(&Json::is_string);
  }
  return false;
}

std::string dashed(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

// Text for a message, cut short (at a UTF-8 character boundary).
std::string clipped(const std::string& text, std::size_t limit = 80) {
  if (text.size() <= limit) return text;
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes)";
}

// A value for a message: dumped (its depth is bounded by parse_json, so dump()'s recursion is)
// and cut short (its length is not).
std::string shown(const Json& v) {
  return clipped(v.dump(-1, ' ', false, Json::error_handler_t::replace));
}

// The offset of the first byte that breaks UTF-8, or npos. Options end up in JSON (the
// checkpoint's metadata), whose writer holds every string to the well-formed sequences of
// Unicode's table 3-7: besides the shape of lead and continuation bytes, no overlong forms
// (C0, C1; E0 below A0; F0 below 90), no surrogates (ED above 9F) and nothing past U+10FFFF
// (F4 above 8F; F5-FF). A shape-only check let "\xC1\xBE" through to a crash (a fuzz finding).
std::size_t invalid_utf8_at(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = 0;                           // bytes in the sequence
    unsigned char lo = 0x80, hi = 0xBF;  // the range of its second byte
    if (c < 0x80)
      n = 1;
    else if (c >= 0xC2 && c <= 0xDF)
      n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
      n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
      n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (n == 0 || i + n > s.size()) return i;
    for (int k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return i;
    }
    i += static_cast<std::size_t>(n);
  }
  return std::string::npos;
}

void check_utf8(const std::string& text, const std::string& what) {
  const std::size_t at = invalid_utf8_at(text);
  RG_CHECK(at == std::string::npos, what, ": the value is not valid UTF-8 (byte ", at,
           "); options are stored as JSON, which holds only UTF-8 text");
}

// Parses JSON text, refusing nesting deeper than kMaxConfigDepth as the parser meets it.
// `allow_invalid`: a discarded value instead of an error for text that is not JSON; else the
// error names the line and column where the text stops being JSON.
Json parse_json(const std::string& text, const std::string& what, bool allow_invalid) {
  const Json::parser_callback_t depth_guard = [&](int depth, Json::parse_event_t event, Json&) {
    if (depth >= kMaxConfigDepth &&
        (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start))
      fail(what, ": JSON nests lists or objects deeper than ", kMaxConfigDepth, " levels");
    return true;
  };
  if (allow_invalid) return Json::parse(text, depth_guard, /*allow_exceptions=*/false);
  try {
    return Json::parse(text, depth_guard);
  } catch (const Json::parse_error& e) {
    // e.byte: 1 + the offset of the byte the parser stopped at.
    const std::size_t at = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const auto line =
        1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    const std::size_t line_start = at == 0 ? 0 : text.rfind('\n', at - 1) + 1;  // npos + 1 = 0
    std::string detail = e.what();  // "[json.exception...] parse error at line L, column C: why"
    if (const auto colon = detail.find(": "); colon != std::string::npos)
      detail = detail.substr(colon + 2);
    fail(what, " is not valid JSON at line ", line, ", column ", at - line_start + 1, ": ",
         clipped(detail, 200));  // its "last read" token may be long
  } catch (const Json::out_of_range& e) {
    // A number past a double's range ("1e700"): nlohmann says which, not where (a fuzz finding:
    // it escaped as an uncaught exception).
    std::string detail = e.what();  // "[json.exception.out_of_range.406] number overflow ..."
    if (const auto space = detail.find("] "); space != std::string::npos)
      detail = detail.substr(space + 2);
    fail(what, " is not valid JSON: ", clipped(detail, 200), " (beyond a double's range)");
  }
}

// The line of each key of the top-level object of `text`, JSON that parsed: an error about a
// key's value names where it is. A repeated key's last line, as the parser keeps its last value.
std::map<std::string, int64_t> key_lines(const std::string& text) {
  std::map<std::string, int64_t> lines;
  int64_t line = 1, depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == '"') {  // a string, on one line (JSON strings hold no raw line break)
      const std::size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;  // skips the escaped character, \" included
      const std::size_t next = text.find_first_not_of(" \t\r\n", i + 1);
      if (depth == 1 && next != std::string::npos && text[next] == ':') {
        const Json key = Json::parse(text.substr(start, i + 1 - start), nullptr, false);
        if (key.is_string()) lines[key.get<std::string>()] = line;
      }
    }
  }
  return lines;
}

// The value of a flag's or --set's `text` for `option` (null: an unknown key, which the merge
// refuses): JSON of the option's type, else the option's own reading of text (a size), else the
// text itself — a bare word is a string; so is anything given for a string option (--set
// loss_scale=1024).
Json value_of_text(const OptionInfo* option, const std::string& text, const std::string& what) {
  Json value = parse_json(text, what, /*allow_invalid=*/true);
  if (option && option->from_text && (value.is_discarded() || !same_type(option->kind, value))) {
    try {
      return option->from_text(text);
    } catch (const Error& e) {
      fail(what, ": ", e.what());  // the reader's own words, after where the text came from
    }
  }
  if (value.is_discarded() || (option && option->kind == ValueKind::text && !value.is_string()))
    return text;
  return value;
}

std::string default_text(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::string number_text(double v) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return std::string(text, end);
}

Check<double> in_interval(double lo, double hi, Interval ends, std::string note) {
  return [=](const std::string& key, const double& v) {
    const bool open_lo = ends == Interval::open || ends == Interval::left_open;
    const bool open_hi = ends == Interval::open || ends == Interval::right_open;
    RG_CHECK((open_lo ? v > lo : v >= lo) && (open_hi ? v < hi : v <= hi), key, " must be in ",
             open_lo ? "(" : "[", number_text(lo), ", ", number_text(hi), open_hi ? ")" : "]",
             note.empty() ? "" : " ", note, ", got ", number_text(v));
  };
}

Check<double> positive() {
  return [](const std::string& key, const double& v) {
    RG_CHECK(v > 0, key, " must be > 0, got ", number_text(v));
  };
}

Check<std::string> one_of(std::vector<std::string> choices) {
  return [choices = std::move(choices)](const std::string& key, const std::string& v) {
    if (std::find(choices.begin(), choices.end(), v) != choices.end()) return;
    std::string list;
    for (std::size_t i = 0; i < choices.size(); ++i)
      list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
    fail(key, " must be ", list, ", got '", clipped(v), "'");
  };
}

Check<std::string> not_empty(std::string what) {
  return [what = std::move(what)](const std::string& key, const std::string& v) {
    RG_CHECK(!v.empty(), key, " must ", what);
  };
}

std::string OptionInfo::flag_name() const {
  switch (flag) {
    case Flag::standard:
    case Flag::command_line_only:
      return "--" + dashed(key);
    case Flag::negated:
      return "--no-" + dashed(key);
    case Flag::positional:
      return key;
    case Flag::config_only:
      return "";
  }
  return "";
}

bool OptionInfo::accepts(const Json& value) const {
  return same_type(kind, value) || (value.is_null() && default_kind == Default::derived);
}

OptionInfo& OptionInfo::derived_default() {
  default_kind = Default::derived;
  return *this;
}

OptionInfo& OptionInfo::negated_by(std::string help) {
  RG_CHECK(kind == ValueKind::boolean && flag == Flag::standard, "the option '", key,
           "': only a boolean's standard flag has a --no- twin");
  negated_help = std::move(help);
  return *this;
}

OptionInfo& OptionInfo::reads_text(std::function<Json(const std::string&)> convert,
                                   std::string name) {
  from_text = std::move(convert);
  value_name = std::move(name);
  return *this;
}

OptionInfo& OptionInfo::takes_values(int min, int max,
                                     std::function<Json(const std::vector<std::string>&)> convert,
                                     std::string name) {
  min_values = min;
  max_values = max;
  from_values = std::move(convert);
  value_name = std::move(name);
  return *this;
}

OptionTable::OptionTable(std::string program, std::string description, Sources sources)
    : program_(std::move(program)), description_(std::move(description)), sources_(sources) {}

OptionInfo& OptionTable::declare(OptionInfo info) {
  RG_CHECK(!find(info.key), program_, ": the option '", info.key, "' is declared twice");
  if (info.section.empty()) info.section = section_;
  options_.push_back(std::move(info));
  return options_.back();
}

void OptionTable::declare_presets(std::vector<Preset> presets) {
  presets_ = std::move(presets);
}

const OptionInfo* OptionTable::find(const std::string& key) const {
  for (const OptionInfo& o : options_)
    if (o.key == key) return &o;
  return nullptr;
}

Json OptionTable::defaults() const {
  Json all = default_values(), keys = Json::object();
  for (const OptionInfo& o : options_)
    if (o.is_config_key()) keys[o.key] = o.default_kind == Default::derived ? Json() : all[o.key];
  return keys;
}

std::vector<std::string> OptionTable::preset_names() const {
  std::vector<std::string> names;
  for (const Preset& p : presets_) names.push_back(p.name);
  return names;
}

const Json& OptionTable::preset(const std::string& name) const {
  std::string known;
  for (const Preset& p : presets_) {
    if (p.name == name) return p.values;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  fail("unknown preset '", clipped(name), "' (known: ", known, ")");
}

void OptionTable::set_value(Json& values, const OptionInfo& option, Json value,
                            const std::string& source) const {
  RG_CHECK(option.accepts(value), source, ": option '", option.key, "' must be ",
           type_name(option.kind), ", got ", shown(value));
  values[option.key] = std::move(value);
}

void OptionTable::merge(Json& values, const Json& overrides, const std::string& source) const {
  RG_CHECK(overrides.is_object(), source, ": the configuration must be a JSON object");
  for (const auto& [key, value] : overrides.items()) {
    const OptionInfo* option = find(key);
    if (!option || !option->is_config_key()) {
      // Sorted, as the keys of a JSON object are.
      std::vector<std::string> keys;
      for (const OptionInfo& o : options_)
        if (o.is_config_key()) keys.push_back(o.key);
      std::sort(keys.begin(), keys.end());
      std::string known;
      for (const std::string& k : keys) known += (known.empty() ? "" : ", ") + k;
      fail(source, ": unknown option '", clipped(key), "' (known: ", known, ")");
    }
    set_value(values, *option, value, source);
  }
}

void OptionTable::check_types(const Json& values) const {
  RG_CHECK(values.is_object(), program_, ": the options must be a JSON object");
  for (const auto& [key, value] : values.items()) {
    const OptionInfo* option = find(key);
    RG_CHECK(option, program_, ": unknown option '", clipped(key), "'");
    RG_CHECK(option->accepts(value), program_, ": option '", key, "' must be ",
             type_name(option->kind), ", got ", shown(value));
  }
}

void OptionTable::merge_file(Json& values, const std::string& path, Origins* origins) const {
  const std::string what = "--config '" + path + "'";
  RG_CHECK(fs::is_regular_file(path), what, ": not a regular file that can be read");
  RG_CHECK(fs::file_size(path) <= static_cast<uintmax_t>(kMaxConfigFileBytes), what,
           ": larger than ", kMaxConfigFileBytes, " bytes, too large for a configuration");
  std::ifstream in(path);
  RG_CHECK(in.good(), what, ": cannot open the file");
  std::ostringstream read;
  read << in.rdbuf();
  const std::string text = read.str();
  const Json file = parse_json(text, what, /*allow_invalid=*/false);
  RG_CHECK(file.is_object(), path, ": the configuration must be a JSON object");
  const std::map<std::string, int64_t> lines = key_lines(text);
  for (const auto& [key, value] : file.items()) {
    const auto line = lines.find(key);
    const std::string origin =
        line == lines.end() ? path : path + ":" + std::to_string(line->second);
    merge(values, {{key, value}}, origin);
    if (origins) (*origins)[key] = origin;
  }
}

void OptionTable::apply_set(Json& values, const std::string& assignment) const {
  const auto eq = assignment.find('=');
  RG_CHECK(eq != std::string::npos && eq > 0, "--set '", clipped(assignment),
           "': expected key=value");
  const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  check_utf8(assignment, "--set " + clipped(key));
  const Json value = value_of_text(find(key), text, "--set " + clipped(key));
  merge(values, {{key, value}}, "--set " + clipped(assignment));
}

std::string OptionTable::footer(const Json& defaults) const {
  if (sources_ == Sources::command_line) return "";
  std::ostringstream s;
  s << "\nOptions are read in this order, each over the ones before: the defaults, "
    << (presets_.empty() ? "" : "--preset NAME, ")
    << "--config FILE.json (a JSON object of options by key), the flags, --set KEY=VALUE. A "
       "flag's key is its name with _ for -: --batch-size is batch_size.\n";
  bool first = true;
  for (const OptionInfo& o : options_) {
    if (o.flag != Flag::config_only) continue;
    if (first) s << "\nOptions without a flag (--config FILE.json, --set KEY=VALUE):\n";
    first = false;
    std::string head = "  " + o.key + " = " + default_text(defaults.at(o.key));
    head.resize(std::max<std::size_t>(head.size() + 2, 30), ' ');
    s << head << o.help << "\n";
  }
  return s.str();
}

OptionTable::Layers OptionTable::layer_command_line(int argc, char** argv) const {
  CLI::App app{program_ + ": " + description_};
  app.get_formatter()->column_width(34);
  const Json defaults = default_values();
  std::string preset_name, config_file;
  std::vector<std::string> sets;
  CLI::Option *preset_flag = nullptr, *config_flag = nullptr;
  if (sources_ == Sources::all) {
    if (!presets_.empty())
      preset_flag =
          app.add_option("--preset", preset_name, find("preset")->help)->type_name("NAME");
    config_flag =
        app.add_option("--config", config_file, "a JSON file of options by key (their --set names)")
            ->type_name("FILE.json");
    app.add_option("--set", sets, "key=value over everything else, repeatable (see below)")
        ->type_name("KEY=VALUE");
  }
  // Each flag's text or texts; CLI11 keeps references to them until parse() returns.
  std::vector<std::string> texts(options_.size());
  std::vector<std::vector<std::string>> lists(options_.size());
  std::vector<CLI::Option*> flags(options_.size(), nullptr), negated(options_.size(), nullptr);
  for (std::size_t i = 0; i < options_.size(); ++i) {
    const OptionInfo& o = options_[i];
    if (o.flag == Flag::config_only) continue;
    CLI::Option* flag = nullptr;
    if (o.kind == ValueKind::boolean) {
      flag = app.add_flag(o.flag_name(), o.help);
      if (!o.negated_help.empty())
        negated[i] =
            app.add_flag("--no-" + dashed(o.key), o.negated_help)->excludes(flag)->group(o.section);
    } else if (o.kind == ValueKind::texts || o.from_values) {
      flag = app.add_option(o.flag_name(), lists[i], o.help);
      if (o.from_values) flag->expected(o.min_values, o.max_values);
    } else {
      flag = app.add_option(o.flag_name(), texts[i], o.help);
    }
    if (o.kind != ValueKind::boolean) {
      static const char* names[] = {"", "INT", "NUMBER", "TEXT", "LIST", "TEXT"};
      flag->type_name(o.value_name.empty() ? names[static_cast<int>(o.kind)] : o.value_name);
      const Json& d = defaults.at(o.key);
      if (!(d.is_string() && d.get<std::string>().empty()) && !(d.is_array() && d.empty()))
        flag->default_str(default_text(d));
    }
    flags[i] = flag->group(o.section);
  }
  app.footer(footer(defaults));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return {.values = Json::object(), .help_requested = true, .help = app.help()};
  } catch (const CLI::ParseError& e) {
    fail(program_, ": ", e.what(), " (see --help)");
  }

  Layers layers;
  Json& values = layers.values;
  if (preset_flag && preset_flag->count()) {
    merge(values, preset(preset_name), "--preset " + clipped(preset_name));
    values["preset"] = preset_name;
  }
  if (config_flag && config_flag->count()) merge_file(values, config_file, &layers.origins);
  for (std::size_t i = 0; i < options_.size(); ++i) {
    if (negated[i] && negated[i]->count()) {
      values[options_[i].key] = false;
      layers.origins.erase(options_[i].key);
    }
    if (!flags[i] || flags[i]->count() == 0) continue;
    const OptionInfo& o = options_[i];
    const std::string source = program_ + ": " + o.flag_name();
    layers.origins.erase(o.key);  // a flag over the file's value
    if (o.kind == ValueKind::boolean) {
      values[o.key] = o.flag != Flag::negated;
    } else if (o.kind == ValueKind::texts || o.from_values) {
      for (const std::string& text : lists[i]) check_utf8(text, source);
      if (o.from_values) {
        const Json set = o.from_values(lists[i]);  // named: items() would dangle on a temporary
        for (const auto& [key, value] : set.items()) {
          set_value(values, *find(key), value, source);
          layers.origins.erase(key);
        }
      } else
        values[o.key] = lists[i];
    } else {
      check_utf8(texts[i], source);  // before the value reaches JSON, whose dump() would throw
      set_value(values, o,
                o.kind == ValueKind::text ? Json(texts[i]) : value_of_text(&o, texts[i], source),
                source);
    }
  }
  for (const std::string& s : sets) {
    apply_set(values, s);
    layers.origins.erase(s.substr(0, s.find('=')));
  }
  return layers;
}

void OptionTable::fail_from(const Error& error, const std::string& key, const Origins& origins) {
  const auto origin = origins.find(key);
  if (origin == origins.end()) throw error;
  fail(error.what(), " (", origin->second, ")");
}

}  // namespace rg::train
