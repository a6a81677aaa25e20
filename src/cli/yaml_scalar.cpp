#include "yaml_scalar.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>

namespace ath::cli::detail {

using nlohmann::json;

json resolve_plain(std::string_view s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  static const std::regex int_re("[-+]?[0-9]+");
  static const std::regex float_re("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  static const std::regex inf_re("[-+]?\\.(inf|Inf|INF)");
  static const std::regex nan_re("\\.(nan|NaN|NAN)");
  const std::string str(s);
  if (std::regex_match(str, int_re)) {
    int64_t v = 0;
    const char* b = str.data() + (str[0] == '+' ? 1 : 0);
    auto [p, ec] = std::from_chars(b, str.data() + str.size(), v);
    if (ec == std::errc() && p == str.data() + str.size()) return v;
    return std::strtod(str.c_str(), nullptr);  // out of int64's range: a float, as YAML readers do
  }
  if (std::regex_match(str, float_re)) return std::strtod(str.c_str(), nullptr);
  if (std::regex_match(str, inf_re)) {
    return str[0] == '-' ? -std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::infinity();
  }
  if (std::regex_match(str, nan_re)) return std::numeric_limits<double>::quiet_NaN();
  return str;
}

json resolve_scalar(const YAML::Node& node) {
  const std::string& tag = node.Tag();
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return node.Scalar();
  return resolve_plain(node.Scalar());
}

json yaml_node_to_json(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  if (node.IsScalar()) return resolve_scalar(node);
  if (node.IsSequence()) {
    json out = json::array();
    for (const auto& item : node) out.push_back(yaml_node_to_json(item));
    return out;
  }
  json out = json::object();
  for (auto it = node.begin(); it != node.end(); ++it) {
    out[it->first.Scalar()] = yaml_node_to_json(it->second);
  }
  return out;
}

}  // namespace ath::cli::detail
