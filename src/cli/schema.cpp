#include "athanor/cli/schema.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace ath::cli {
namespace {

// The last dotted component: "trainer.max_epochs" -> "max_epochs".
std::string_view leaf(std::string_view path) {
  auto dot = path.rfind('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

std::string_view parent(std::string_view path) {
  auto dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view{} : path.substr(0, dot);
}

bool starts_with_section(std::string_view path, std::string_view section) {
  if (section.empty()) return true;
  return path.size() > section.size() && path.starts_with(section) && path[section.size()] == '.';
}

// Whether `v` has the JSON shape `type` stores (after coercion).
bool fits(ValueType type, const nlohmann::json& v) {
  switch (type) {
    case ValueType::kAny:
      return true;
    case ValueType::kBool:
      return v.is_boolean();
    case ValueType::kInt:
      return v.is_number_integer();
    case ValueType::kFloat:
      return v.is_number_float();
    case ValueType::kNumber:
      return v.is_number();
    case ValueType::kIntOrBool:
      return v.is_boolean() || v.is_number_integer();
    case ValueType::kString:
      return v.is_string();
    case ValueType::kList:
      return v.is_array();
    case ValueType::kMap:
      return v.is_object();
    case ValueType::kClassList:
      return v.is_array();
  }
  return false;
}

const char* type_tag(ValueType type) {
  switch (type) {
    case ValueType::kAny:
      return "ANY";
    case ValueType::kBool:
      return "BOOL";
    case ValueType::kInt:
      return "INT";
    case ValueType::kFloat:
      return "FLOAT";
    case ValueType::kNumber:
      return "INT|FLOAT";
    case ValueType::kIntOrBool:
      return "BOOL|INT";
    case ValueType::kString:
      return "STR";
    case ValueType::kList:
      return "LIST";
    case ValueType::kMap:
      return "MAP";
    case ValueType::kClassList:
      return "CLASSES";
  }
  return "?";
}

}  // namespace

std::string_view describe(ValueType type) {
  switch (type) {
    case ValueType::kAny:
      return "any value";
    case ValueType::kBool:
      return "a boolean (true or false)";
    case ValueType::kInt:
      return "an integer";
    case ValueType::kFloat:
      return "a number";
    case ValueType::kNumber:
      return "a number (an integer count or a float fraction)";
    case ValueType::kIntOrBool:
      return "a boolean or an integer";
    case ValueType::kString:
      return "a string";
    case ValueType::kList:
      return "a list";
    case ValueType::kMap:
      return "a mapping";
    case ValueType::kClassList:
      return "a list of {class_path, init_args}";
  }
  return "?";
}

ValueType KeySpec::value_type() const {
  if (type) return *type;
  const auto& d = default_value;
  if (d.is_boolean()) return ValueType::kBool;
  if (d.is_number_integer()) return ValueType::kInt;
  if (d.is_number_float()) return ValueType::kFloat;
  if (d.is_string()) return ValueType::kString;
  if (d.is_array()) return classes.empty() ? ValueType::kList : ValueType::kClassList;
  if (d.is_object()) return ValueType::kMap;
  return ValueType::kAny;
}

const ClassSpec* KeySpec::find_class(std::string_view name) const {
  for (const auto& c : classes) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

Schema& Schema::add(KeySpec spec) {
  ATH_CHECK(!spec.path.empty() && spec.path.front() != '.' && spec.path.back() != '.' &&
                spec.path.find("..") == std::string::npos,
            ValueError, "Schema::add: bad key path '{}'", spec.path);
  ATH_CHECK(std::all_of(spec.path.begin(), spec.path.end(),
                        [](char c) {
                          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                                 c == '-' || c == '.';
                        }),
            ValueError, "Schema::add: key '{}' may hold only letters, digits, '_', '-' and '.'",
            spec.path);
  ATH_CHECK(find(spec.path) == nullptr, ValueError, "Schema::add: key '{}' is already declared",
            spec.path);
  ATH_CHECK(!is_section(spec.path), ValueError,
            "Schema::add: '{}' is already a section and cannot also be a key", spec.path);
  for (std::string_view p = parent(spec.path); !p.empty(); p = parent(p)) {
    ATH_CHECK(find(p) == nullptr, ValueError,
              "Schema::add: '{}' is a key and cannot also be the section of '{}'", p, spec.path);
  }
  const ValueType type = spec.value_type();
  ATH_CHECK((spec.default_value.is_null() && spec.accepts_null()) || fits(type, spec.default_value),
            ValueError, "Schema::add: the default of '{}' ({}) is not {}", spec.path,
            show_value(spec.default_value), describe(type));
  ATH_CHECK(type != ValueType::kClassList || !spec.classes.empty(), ValueError,
            "Schema::add: '{}' lists classes but names none it accepts", spec.path);
  keys_.push_back(std::move(spec));
  return *this;
}

const KeySpec* Schema::find(std::string_view path) const {
  for (const auto& k : keys_) {
    if (k.path == path) return &k;
  }
  return nullptr;
}

bool Schema::is_section(std::string_view path) const {
  if (path.empty()) return true;
  return std::any_of(keys_.begin(), keys_.end(),
                     [&](const KeySpec& k) { return starts_with_section(k.path, path); });
}

std::vector<std::string> Schema::children(std::string_view section) const {
  std::vector<std::string> out;
  const std::size_t skip = section.empty() ? 0 : section.size() + 1;
  for (const auto& k : keys_) {
    if (!starts_with_section(k.path, section)) continue;
    std::string_view rest = std::string_view(k.path).substr(skip);
    std::string name(rest.substr(0, rest.find('.')));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  return out;
}

nlohmann::json Schema::defaults() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& k : keys_) {
    std::string p(1, '/');
    p.append(k.path);
    std::replace(p.begin(), p.end(), '.', '/');
    out[nlohmann::json::json_pointer(p)] = k.default_value;
  }
  return out;
}

std::string Schema::suggest(std::string_view unknown) const {
  const std::string_view section = parent(unknown);
  if (is_section(section)) {
    std::string m = closest_match(leaf(unknown), children(section));
    if (!m.empty()) return section.empty() ? m : fmt::format("{}.{}", section, m);
  }
  // Same name in another section: --max_epochs -> trainer.max_epochs.
  for (const auto& k : keys_) {
    if (leaf(k.path) == leaf(unknown)) return k.path;
  }
  std::vector<std::string> all;
  std::set<std::string> seen;
  for (const auto& k : keys_) {
    all.push_back(k.path);
    for (std::string_view p = parent(k.path); !p.empty(); p = parent(p)) {
      if (seen.insert(std::string(p)).second) all.emplace_back(p);
    }
  }
  return closest_match(unknown, all);
}

std::string Schema::help_text() const {
  std::string out;
  for (const auto& k : keys_) {
    std::string tag = type_tag(k.value_type());
    if (!k.choices.empty()) tag = fmt::format("{{{}}}", fmt::join(k.choices, ","));
    if (k.accepts_null()) tag += "|null";
    std::string line = fmt::format("  --{} {}", k.path, tag);
    if (line.size() < 48)
      line.resize(48, ' ');
    else
      line += "  ";
    std::string def = show_value(k.default_value);
    if (def.size() > 40) def = def.substr(0, 37) + "...";
    out += fmt::format("{}{} (default: {})\n", line, k.help, def);
  }
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  // A third of the word's length (at least 2) catches typos without suggesting unrelated keys.
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  std::string best;
  std::size_t best_d = limit + 1;
  for (const auto& c : candidates) {
    // The distance is at least the difference in length: skipping those keeps a hostile
    // 1 MB key from costing a 1 MB x key-length table per candidate.
    const std::size_t gap =
        word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    if (gap >= best_d) continue;
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string show_value(const nlohmann::json& v) {
  if (v.is_string()) return fmt::format("'{}'", v.get<std::string>());
  if (v.is_null()) return "null";
  if (v.is_number_float()) {
    const double x = v.get<double>();
    if (std::isnan(x)) return ".nan";
    if (std::isinf(x)) return x > 0 ? ".inf" : "-.inf";
    std::string s = fmt::format("{}", x);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
  }
  return v.dump();
}

}  // namespace ath::cli
