#include "yaml_scalar.h"

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "athanor/cli/schema.h"

namespace ath::cli::detail {

using nlohmann::json;

namespace {
bool digit(char c) { return c >= '0' && c <= '9'; }

// Digits from i on; returns how many.
std::size_t digits(std::string_view s, std::size_t i) {
  std::size_t n = 0;
  while (i + n < s.size() && digit(s[i + n])) ++n;
  return n;
}

// [-+]?[0-9]+
bool is_yaml_int(std::string_view s) {
  const std::size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  const std::size_t n = digits(s, i);
  return n > 0 && i + n == s.size();
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool is_yaml_float(std::string_view s) {
  std::size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  const std::size_t whole = digits(s, i);
  i += whole;
  if (i < s.size() && s[i] == '.') {
    const std::size_t frac = digits(s, i + 1);
    if (whole == 0 && frac == 0) return false;
    i += 1 + frac;
  } else if (whole == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    const std::size_t exp = digits(s, i);
    if (exp == 0) return false;
    i += exp;
  }
  return i == s.size();
}
}  // namespace

json resolve_plain(std::string_view s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  // YAML 1.2 core schema, matched by hand (std::regex trips GCC 12's -Wmaybe-uninitialized in
  // sanitizer builds, and is slow besides).
  const std::string str(s);
  if (is_yaml_int(str)) {
    int64_t v = 0;
    const char* b = str.data() + (str[0] == '+' ? 1 : 0);
    auto [p, ec] = std::from_chars(b, str.data() + str.size(), v);
    if (ec == std::errc() && p == str.data() + str.size()) return v;
    return std::strtod(str.c_str(), nullptr);  // out of int64's range: a float, as YAML readers do
  }
  if (is_yaml_float(str)) return std::strtod(str.c_str(), nullptr);
  const std::string_view body = (str[0] == '+' || str[0] == '-') ? s.substr(1) : s;
  if (body == ".inf" || body == ".Inf" || body == ".INF") {
    return str[0] == '-' ? -std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::infinity();
  }
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::numeric_limits<double>::quiet_NaN();
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

namespace {

// Depth-first over the graph as the readers see it (aliases expanded). `path` holds the nodes
// from the root to here: meeting one of them again is a cycle.
struct GraphCheck {
  const std::string& source;
  std::vector<YAML::Node> path;
  int64_t visited = 0;

  void visit(const YAML::Node& node) {
    for (const YAML::Node& above : path) {
      if (above.is(node)) {
        throw ConfigError(fmt::format(
            "{}: a YAML alias refers to a node that contains it (a cycle); aliases must point "
            "to complete nodes outside themselves",
            source));
      }
    }
    if (static_cast<int>(path.size()) >= kMaxYamlDepth) {
      throw ConfigError(
          fmt::format("{}: YAML nested deeper than {} levels", source, kMaxYamlDepth));
    }
    if (++visited > kMaxYamlNodes) {
      throw ConfigError(fmt::format(
          "{}: YAML expands to more than {} nodes once its aliases are expanded (nested aliases "
          "multiply; write the values out or use fewer alias levels)",
          source, kMaxYamlNodes));
    }
    if (node.IsScalar()) {
      require_utf8(node.Scalar(),
                   fmt::format("{}:{}: a YAML string", source, node.Mark().line + 1));
    }
    if (!node.IsSequence() && !node.IsMap()) return;
    path.push_back(node);
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (node.IsSequence()) {
        visit(*it);
      } else {
        visit(it->first);
        visit(it->second);
      }
    }
    path.pop_back();
  }
};

}  // namespace

void require_utf8(std::string_view text, const std::string& what) {
  if (!simdjson::validate_utf8(text.data(), text.size())) {
    throw ConfigError(fmt::format("{} is not valid UTF-8 (configs are UTF-8 text)", what));
  }
}

void check_yaml_graph(const YAML::Node& root, const std::string& source) {
  GraphCheck{.source = source}.visit(root);
}

}  // namespace ath::cli::detail
