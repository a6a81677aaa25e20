// JSON hyperparameters -> the YAML of Lightning's hparams.yaml, in PyYAML's block layout (what
// yaml.dump writes there), with yaml-cpp deciding how each string must be quoted.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "athanor/train/csv_logger.h"

namespace ath::train {
namespace {

// PyYAML (YAML 1.1, what Lightning reads hparams.yaml with) only takes "1.0e-05" as a float
// when it has a '.'; "1e-05" would come back as a string.
std::string yaml_float(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  std::string s = fmt::format("{}", v);
  if (s.find('.') != std::string::npos) return s;
  const std::size_t e = s.find('e');
  if (e == std::string::npos) return s + ".0";
  return s.substr(0, e) + ".0" + s.substr(e);
}

// Strings that a YAML reader would resolve to a number, bool or null must stay strings.
bool looks_typed(const std::string& s) {
  if (s.empty()) return true;
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* w : {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", ".nan",
                        ".inf", "-.inf", "+.inf"}) {
    if (l == w) return true;
  }
  const char* b = s.data();
  const char* e = b + s.size();
  if (*b == '+') ++b;
  double d = 0;
  auto [end, err] = std::from_chars(b, e, d);
  return err == std::errc() && end == e;
}

// One scalar as PyYAML would read it back with the same type: yaml-cpp decides the quoting of
// strings (special characters, leading indicators), typed-looking strings are double-quoted.
std::string scalar(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::string: {
      const auto& s = j.get_ref<const std::string&>();
      YAML::Emitter out;
      if (looks_typed(s)) out << YAML::DoubleQuoted;
      out << s;
      return out.c_str();
    }
    case nlohmann::json::value_t::boolean:
      return j.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_integer:
      return std::to_string(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return std::to_string(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return yaml_float(j.get<double>());
    default:  // null, discarded, binary
      return "null";
  }
}

// PyYAML's block style, as yaml.dump writes Lightning's hparams.yaml: keys sorted (JSON objects
// are), a nested mapping indented by two, a sequence under a key not indented (its dashes under
// the key's first letter), empty collections as {} and []. `out` ends mid-line: the caller has
// written what comes before the value on its line ("key:" or "- ").
void emit(std::string& out, const nlohmann::json& j, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  if (j.is_object() && !j.empty()) {
    bool first = true;
    for (const auto& [k, v] : j.items()) {
      if (!first) out += pad;
      first = false;
      out += scalar(nlohmann::json(k)) + ":";
      if (v.is_object() && !v.empty()) {
        out += "\n" + pad + "  ";
        emit(out, v, indent + 2);
      } else if (v.is_array() && !v.empty()) {
        out += "\n" + pad;
        emit(out, v, indent);
      } else {
        out += " ";
        emit(out, v, indent);
      }
    }
  } else if (j.is_array() && !j.empty()) {
    bool first = true;
    for (const auto& v : j) {
      if (!first) out += pad;
      first = false;
      out += "- ";
      emit(out, v, indent + 2);
    }
  } else {
    out += j.is_object() ? "{}" : j.is_array() ? "[]" : scalar(j);
    out += "\n";
  }
}

}  // namespace

std::string hparams_to_yaml(const nlohmann::json& hparams) {
  std::string out;
  emit(out, hparams, 0);
  return out;
}

}  // namespace ath::train
