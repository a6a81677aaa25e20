// to_yaml: block-style YAML in schema order, written by hand rather than by YAML::Emitter so
// that floats keep their point (1.0 reads back as a float, not the integer 1) and strings that
// would read back as something else ("null", "3", "yes") are quoted.
#include <cmath>

#include "athanor/cli/config.h"
#include "yaml_scalar.h"

namespace ath::cli {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

bool needs_quotes(const std::string& s) {
  if (s.empty() || !detail::resolve_plain(s).is_string()) return true;
  // YAML 1.1 booleans, for readers such as PyYAML.
  static const char* const k11[] = {"y",  "Y",  "yes", "Yes", "YES", "n",   "N",   "no",
                                    "No", "NO", "on",  "On",  "ON",  "off", "Off", "OFF"};
  for (const char* w : k11) {
    if (s == w) return true;
  }
  if (std::string_view("-?:,[]{}#&*!|>'\"%@` ").find(s.front()) != std::string_view::npos) {
    return true;
  }
  if (s.back() == ' ' || s.find(": ") != std::string::npos || s.find(" #") != std::string::npos ||
      s.back() == ':') {
    return true;
  }
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

std::string scalar(const ordered_json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    return needs_quotes(s) ? ordered_json(s).dump() : s;  // JSON escapes are valid in YAML
  }
  return show_value(json(v));
}

struct Writer {
  const Schema& schema;
  bool comments;
  std::string out;

  void comment(const std::string& path, int indent) {
    if (!comments) return;
    if (const KeySpec* k = schema.find(path); k != nullptr && !k->help.empty()) {
      out += std::string(indent, ' ') + "# " + k->help + "\n";
    }
  }

  // After "key:" (or "- "): the value inline, or a newline and its block.
  void value(const ordered_json& v, int indent, const std::string& path) {
    if (v.is_object() && !v.empty()) {
      out += "\n";
      map_body(v, indent + 2, path, false);
    } else if (v.is_array() && !v.empty()) {
      out += "\n";
      seq_body(v, indent, path);
    } else {
      out.push_back(' ');
      out += v.is_object() ? std::string("{}") : v.is_array() ? "[]" : scalar(v);
      out.push_back('\n');
    }
  }

  // `first_inline`: the first key continues a "- " already written.
  void map_body(const ordered_json& m, int indent, const std::string& path, bool first_inline) {
    for (auto it = m.begin(); it != m.end(); ++it) {
      const std::string child = path.empty() ? it.key() : path + "." + it.key();
      if (!first_inline) {
        comment(child, indent);
        out += std::string(indent, ' ');
      }
      first_inline = false;
      out += scalar(ordered_json(it.key())) + ":";
      value(it.value(), indent, child);
    }
  }

  void seq_body(const ordered_json& s, int indent, const std::string& path) {
    for (const auto& item : s) {
      out += std::string(indent, ' ') + "-";
      if (item.is_object() && !item.empty()) {
        out += " ";
        map_body(item, indent + 2, path + "[]", true);
      } else if (item.is_array() && !item.empty()) {
        out += "\n";
        seq_body(item, indent + 2, path + "[]");
      } else {
        value(item, indent, path + "[]");
      }
    }
  }
};

// Class lists in their declared order: class_path, then init_args as the class declares them.
ordered_json ordered_classes(const KeySpec& spec, const json& list) {
  ordered_json out = ordered_json::array();
  for (const auto& item : list) {
    const ClassSpec* cls =
        item.is_object() && item.contains("class_path") && item["class_path"].is_string()
            ? spec.find_class(item["class_path"].get<std::string>())
            : nullptr;
    if (cls == nullptr) {
      out.push_back(ordered_json(item));
      continue;
    }
    ordered_json args = ordered_json::object();
    const json given = item.value("init_args", json::object());
    for (const auto& a : cls->init_args) {
      args[a.path] = ordered_json(given.contains(a.path) ? given[a.path] : a.default_value);
    }
    for (auto it = given.begin(); it != given.end(); ++it) {
      if (!args.contains(it.key())) args[it.key()] = ordered_json(it.value());
    }
    out.push_back({{"class_path", cls->name}, {"init_args", std::move(args)}});
  }
  return out;
}

}  // namespace

std::string to_yaml(const Schema& schema, const json& config, bool comments) {
  ordered_json doc = ordered_json::object();
  for (const auto& k : schema.keys()) {
    std::string p(1, '/');
    p.append(k.path);
    std::replace(p.begin(), p.end(), '.', '/');
    const json::json_pointer ptr(p);
    const json v = config.contains(ptr) ? config[ptr] : k.default_value;
    doc[ordered_json::json_pointer(p)] = k.value_type() == ValueType::kClassList && v.is_array()
                                             ? ordered_classes(k, v)
                                             : ordered_json(v);
  }
  Writer w{schema, comments, {}};
  w.map_body(doc, 0, "", false);
  return w.out;
}

}  // namespace ath::cli
