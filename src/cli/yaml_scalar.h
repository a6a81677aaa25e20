// YAML scalars as typed values (internal to the cli layer): YAML 1.2's core schema for plain
// scalars, so `3` is an integer, `1e-3` and `1.0` floats, `true`/`null` what they say, and
// quoted scalars always strings.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ath::cli::detail {

// A plain (unquoted) scalar's value.
nlohmann::json resolve_plain(std::string_view text);
// A scalar node's value (quoted or !!str-tagged scalars stay strings).
nlohmann::json resolve_scalar(const YAML::Node& node);
// Any node: mappings -> objects, sequences -> arrays, scalars resolved. The node must have
// passed check_yaml_graph (aliases make a node graph, not a tree).
nlohmann::json yaml_node_to_json(const YAML::Node& node);

// Limits on a parsed document as every reader here walks it, with aliases expanded: yaml-cpp
// shares an aliased node, so `&x [*x]` is a cycle (unbounded recursion) and nested aliases
// ("billion laughs") expand exponentially. Nodes deeper than kMaxYamlDepth or more than
// kMaxYamlNodes of them (after expansion) are refused.
inline constexpr int kMaxYamlDepth = 64;
inline constexpr int64_t kMaxYamlNodes = 1'000'000;

// Throws ConfigError naming `source` for a cycle, a document nested too deeply, one whose
// aliases expand past the limits, or a string (key or value) that is not valid UTF-8 (JSON,
// YAML output and messages all need UTF-8; found by fuzz_config).
void check_yaml_graph(const YAML::Node& root, const std::string& source);

// Throws ConfigError "<what> is not valid UTF-8 ..." unless `text` is.
void require_utf8(std::string_view text, const std::string& what);

}  // namespace ath::cli::detail
