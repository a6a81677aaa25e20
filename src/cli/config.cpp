// Reading configs: YAML (yaml-cpp) -> values checked and typed by the schema -> nlohmann::json.
// Values are coerced from the YAML node, not from a generic JSON form, so a string key keeps
// the scalar as written ("1.10" stays "1.10") and messages quote what the user typed.
#include "athanor/cli/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "athanor/io/regular_file.h"
#include "yaml_scalar.h"

namespace ath::cli {
namespace {

using nlohmann::json;

// Where a value came from: a file (messages add the node's line) or an argument.
struct Where {
  std::string source;
  bool is_file = false;

  std::string at(const YAML::Node& node) const {
    if (is_file && node.IsDefined() && node.Mark().line >= 0) {
      return fmt::format("{}:{}", source, node.Mark().line + 1);
    }
    return source;
  }
};

json::json_pointer pointer(std::string_view dotted) {
  std::string p(1, '/');  // (not "/" + ...: GCC 12 -O3 warns falsely on that)
  p.append(dotted);
  std::replace(p.begin(), p.end(), '.', '/');
  return json::json_pointer(p);
}

std::string join(std::string_view section, std::string_view key) {
  return section.empty() ? std::string(key) : fmt::format("{}.{}", section, key);
}

// How a node reads in a message: 'three', a mapping, a list, null.
std::string show_node(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  return fmt::format("'{}'", n.Scalar());
}

bool is_null_node(const YAML::Node& n) {
  return !n.IsDefined() || n.IsNull() || (n.IsScalar() && detail::resolve_scalar(n).is_null());
}

[[noreturn]] void fail(const Where& w, const YAML::Node& n, std::string_view path,
                       std::string_view what) {
  throw ConfigError(fmt::format("{}: {}: {}", w.at(n), path, what));
}

[[noreturn]] void unknown_key(const Where& w, const YAML::Node& n, const std::string& what,
                              const std::string& suggestion) {
  std::string msg = fmt::format("unknown {} in {}", what, w.at(n));
  if (!suggestion.empty()) msg += fmt::format("; did you mean '{}'?", suggestion);
  throw ConfigError(msg);
}

json coerce(const KeySpec& spec, const YAML::Node& node, const std::string& path, const Where& w);

// [{class_path: Name, init_args: {...}}, ...] (a bare name is a class with default init_args).
json coerce_classes(const KeySpec& spec, const YAML::Node& node, const std::string& path,
                    const Where& w) {
  if (!node.IsSequence())
    fail(w, node, path, fmt::format("expected a list, got {}", show_node(node)));
  std::vector<std::string> names;
  for (const auto& c : spec.classes) names.push_back(c.name);
  json out = json::array();
  for (std::size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    const std::string item_path = fmt::format("{}[{}]", path, i);
    // (A default YAML::Node is a defined null, so presence is tracked separately.)
    YAML::Node class_node, args_node;
    bool has_class = false, has_args = false;
    if (item.IsScalar()) {
      class_node = item;
      has_class = true;
    } else if (item.IsMap()) {
      for (auto it = item.begin(); it != item.end(); ++it) {
        const std::string k = it->first.Scalar();
        if (k == "class_path") {
          class_node = it->second;
          has_class = true;
        } else if (k == "init_args") {
          args_node = it->second;
          has_args = true;
        } else {
          unknown_key(w, it->first, fmt::format("key '{}.{}'", item_path, k),
                      closest_match(k, {"class_path", "init_args"}).empty()
                          ? ""
                          : join(item_path, closest_match(k, {"class_path", "init_args"})));
        }
      }
      if (!has_class) fail(w, item, item_path, "missing class_path");
    } else {
      fail(w, item, item_path,
           fmt::format("expected a class name or {{class_path, init_args}}, got {}",
                       show_node(item)));
    }
    if (!class_node.IsScalar()) {
      fail(w, class_node, item_path + ".class_path",
           fmt::format("expected a class name, got {}", show_node(class_node)));
    }
    // "lightning.pytorch.callbacks.EarlyStopping" names the same class as "EarlyStopping".
    std::string name = class_node.Scalar();
    if (auto dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
    const ClassSpec* cls = spec.find_class(name);
    if (cls == nullptr) {
      std::string msg = fmt::format("{}: {}: unknown class '{}'", w.at(class_node), item_path,
                                    class_node.Scalar());
      if (auto m = closest_match(name, names); !m.empty()) {
        msg += fmt::format("; did you mean '{}'?", m);
      }
      msg += fmt::format(" (known: {})", fmt::join(names, ", "));
      throw ConfigError(msg);
    }
    json args = json::object();
    for (const auto& a : cls->init_args) args[a.path] = a.default_value;
    if (has_args && !is_null_node(args_node)) {
      if (!args_node.IsMap()) {
        fail(w, args_node, item_path + ".init_args",
             fmt::format("expected a mapping, got {}", show_node(args_node)));
      }
      std::vector<std::string> arg_names;
      for (const auto& a : cls->init_args) arg_names.push_back(a.path);
      for (auto it = args_node.begin(); it != args_node.end(); ++it) {
        const std::string k = it->first.Scalar();
        const auto a = std::find_if(cls->init_args.begin(), cls->init_args.end(),
                                    [&](const KeySpec& s) { return s.path == k; });
        if (a == cls->init_args.end()) {
          std::string m = closest_match(k, arg_names);
          unknown_key(w, it->first, fmt::format("init_args key '{}' for {}", k, cls->name), m);
        }
        args[k] = coerce(*a, it->second, fmt::format("{}.init_args.{}", item_path, k), w);
      }
    }
    out.push_back({{"class_path", cls->name}, {"init_args", std::move(args)}});
  }
  return out;
}

json coerce(const KeySpec& spec, const YAML::Node& node, const std::string& path, const Where& w) {
  const ValueType type = spec.value_type();
  if (is_null_node(node)) {
    if (spec.accepts_null()) return nullptr;
    if (type == ValueType::kClassList) return json::array();
    fail(w, node, path, fmt::format("expected {}, got null", describe(type)));
  }
  json v;
  switch (type) {
    case ValueType::kAny:
      v = detail::yaml_node_to_json(node);
      break;
    case ValueType::kList:
    case ValueType::kMap:
      if (type == ValueType::kList ? !node.IsSequence() : !node.IsMap()) {
        fail(w, node, path, fmt::format("expected {}, got {}", describe(type), show_node(node)));
      }
      v = detail::yaml_node_to_json(node);
      break;
    case ValueType::kClassList:
      return coerce_classes(spec, node, path, w);
    default: {
      if (!node.IsScalar()) {
        fail(w, node, path, fmt::format("expected {}, got {}", describe(type), show_node(node)));
      }
      const json r = detail::resolve_scalar(node);
      const bool ok =
          (type == ValueType::kBool && r.is_boolean()) ||
          (type == ValueType::kInt && r.is_number_integer()) ||
          ((type == ValueType::kFloat || type == ValueType::kNumber) && r.is_number()) ||
          (type == ValueType::kIntOrBool && (r.is_boolean() || r.is_number_integer())) ||
          type == ValueType::kString;
      if (!ok)
        fail(w, node, path, fmt::format("expected {}, got {}", describe(type), show_node(node)));
      if (type == ValueType::kString) {
        v = node.Scalar();
      } else if (type == ValueType::kFloat) {
        v = r.get<double>();
      } else {
        v = r;
      }
    }
  }
  if (!spec.choices.empty() && std::find(spec.choices.begin(), spec.choices.end(),
                                         v.get<std::string>()) == spec.choices.end()) {
    std::vector<std::string> quoted;
    for (const auto& c : spec.choices) quoted.push_back(fmt::format("'{}'", c));
    std::string msg = fmt::format("invalid choice '{}' (choose from {})", v.get<std::string>(),
                                  fmt::join(quoted, ", "));
    if (auto m = closest_match(v.get<std::string>(), spec.choices); !m.empty()) {
      msg += fmt::format("; did you mean '{}'?", m);
    }
    fail(w, node, path, msg);
  }
  if (spec.check) {
    if (std::string why = spec.check(v); !why.empty()) {
      fail(w, node, path, fmt::format("{}, got {}", why, show_value(v)));
    }
  }
  return v;
}

void merge_node(const Schema& schema, json& config, const YAML::Node& node,
                const std::string& section, const Where& w) {
  if (is_null_node(node)) return;  // "model:" with nothing under it
  if (!node.IsMap()) {
    throw ConfigError(fmt::format("{}: {}: expected a mapping, got {}", w.at(node),
                                  section.empty() ? "the config" : section, show_node(node)));
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) {
      throw ConfigError(
          fmt::format("{}: keys must be names, got {}", w.at(it->first), show_node(it->first)));
    }
    const std::string full = join(section, it->first.Scalar());
    if (const KeySpec* spec = schema.find(full)) {
      config[pointer(full)] = coerce(*spec, it->second, full, w);
    } else if (schema.is_section(full) && !it->first.Scalar().empty() &&
               it->first.Scalar().find('.') == std::string::npos) {
      merge_node(schema, config, it->second, full, w);
    } else {
      unknown_key(w, it->first, fmt::format("key '{}'", full), schema.suggest(full));
    }
  }
}

YAML::Node parse_yaml(std::string_view text, const std::string& source) {
  YAML::Node node;
  try {
    node = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}:{}:{}: malformed YAML: {}", source, e.mark.line + 1,
                                  e.mark.column + 1, e.msg));
  }
  detail::check_yaml_graph(node, source);
  return node;
}

}  // namespace

std::vector<Override> parse_overrides(const std::vector<std::string>& args) {
  std::vector<Override> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!a.starts_with("--") || a.size() == 2 || a[2] == '=') {
      throw ConfigError(
          fmt::format("unexpected argument '{}' (overrides look like --section.key=value)", a));
    }
    if (auto eq = a.find('='); eq != std::string::npos) {
      out.push_back({a.substr(2, eq - 2), a.substr(eq + 1), a});
    } else if (i + 1 < args.size() && !args[i + 1].starts_with("--")) {
      out.push_back({a.substr(2), args[i + 1], a + " " + args[i + 1]});
      ++i;
    } else {
      throw ConfigError(
          fmt::format("argument '{}' expects a value ({}=VALUE or {} VALUE)", a, a, a));
    }
  }
  return out;
}

void merge_yaml(const Schema& schema, json& config, std::string_view yaml,
                const std::string& source) {
  merge_node(schema, config, parse_yaml(yaml, source), "", Where{source, true});
}

void merge_yaml_file(const Schema& schema, json& config, const std::string& path) {
  // Checked before opening: a FIFO would block the open until a writer appears.
  if (const std::string problem = regular_file_problem(path); !problem.empty()) {
    throw ConfigError(fmt::format("cannot read config file '{}': {}", path, problem));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError(fmt::format("cannot read config file '{}': {}", path, std::strerror(errno)));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ConfigError(fmt::format("cannot read config file '{}'", path));
  merge_yaml(schema, config, ss.str(), path);
}

void apply_override(const Schema& schema, json& config, const Override& o) {
  const Where w{fmt::format("argument '{}'", o.argument), false};
  const KeySpec* spec = schema.find(o.key);
  if (spec == nullptr && (o.key.empty() || !schema.is_section(o.key))) {
    unknown_key(w, YAML::Node(), fmt::format("key '{}'", o.key), schema.suggest(o.key));
  }
  // A string takes the text as typed, like jsonargparse: no YAML quoting needed on a shell
  // ("null" is null only where the key allows it).
  if (spec != nullptr && spec->value_type() == ValueType::kString) {
    const bool null_text =
        spec->accepts_null() && (o.value.empty() || o.value == "null" || o.value == "~");
    detail::require_utf8(o.value, w.source);
    YAML::Node n = null_text ? YAML::Node() : YAML::Node(o.value);
    if (!null_text) n.SetTag("!");  // read as if quoted: the text itself
    config[pointer(o.key)] = coerce(*spec, n, o.key, w);
    return;
  }
  const YAML::Node node = parse_yaml(o.value, w.source);
  if (spec != nullptr) {
    config[pointer(o.key)] = coerce(*spec, node, o.key, w);
  } else {
    merge_node(schema, config, node, o.key, w);
  }
}

json resolve_config(const Schema& schema, std::string_view base_yaml,
                    const std::vector<std::string>& files, const std::vector<Override>& overrides) {
  json config = schema.defaults();
  if (files.empty() && !base_yaml.empty()) {
    merge_yaml(schema, config, base_yaml, "<default config>");
  }
  for (const auto& f : files) merge_yaml_file(schema, config, f);
  for (const auto& o : overrides) apply_override(schema, config, o);
  return config;
}

json yaml_to_json(std::string_view yaml, const std::string& source) {
  YAML::Node n;
  try {
    n = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    throw FormatError(fmt::format("{}:{}:{}: malformed YAML: {}", source, e.mark.line + 1,
                                  e.mark.column + 1, e.msg));
  }
  detail::check_yaml_graph(n, source);
  return detail::yaml_node_to_json(n);
}

}  // namespace ath::cli
