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
// Any node: mappings -> objects, sequences -> arrays, scalars resolved.
nlohmann::json yaml_node_to_json(const YAML::Node& node);

}  // namespace ath::cli::detail
