// JSON hyperparameters -> the YAML of Lightning's hparams.yaml, via yaml-cpp's emitter (which
// takes care of quoting keys and strings with special characters).
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

void emit(YAML::Emitter& out, const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [k, v] : j.items()) {
        out << YAML::Key;
        if (looks_typed(k)) out << YAML::DoubleQuoted;
        out << k << YAML::Value;
        emit(out, v);
      }
      out << YAML::EndMap;
      break;
    case nlohmann::json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& v : j) emit(out, v);
      out << YAML::EndSeq;
      break;
    case nlohmann::json::value_t::string: {
      const auto& s = j.get_ref<const std::string&>();
      if (looks_typed(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case nlohmann::json::value_t::boolean:
      out << (j.get<bool>() ? "true" : "false");
      break;
    case nlohmann::json::value_t::number_integer:
      out << j.get<int64_t>();
      break;
    case nlohmann::json::value_t::number_unsigned:
      out << j.get<uint64_t>();
      break;
    case nlohmann::json::value_t::number_float:
      out << yaml_float(j.get<double>());
      break;
    default:  // null, discarded, binary
      out << YAML::Null;
      break;
  }
}

}  // namespace

std::string hparams_to_yaml(const nlohmann::json& hparams) {
  YAML::Emitter out;
  emit(out, hparams);
  std::string s = out.c_str();
  return s + "\n";
}

}  // namespace ath::train
