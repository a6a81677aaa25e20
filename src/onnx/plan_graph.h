// A graph as a saved plan stores it (saved_plan.h): the records of its values and nodes as JSON,
// node attributes as the bytes OpDef::encode_attrs makes (hex), constants by name in the plan's
// tensor table; and the checks a graph read back must pass before an executor may run it.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "athanor/graph/graph.h"

namespace ath::onnx::detail {

// The JSON record of `g`. `constant_name` gives the table name each constant tensor is stored
// under. Throws NotImplementedError for a graph a plan cannot hold: attributes read from an
// attribute source at replay, attributes that cannot be encoded (a pointer), state or gradient
// bindings (an inference graph has none), a tensor off the CPU.
nlohmann::json graph_to_json(const graph::Graph& g,
                             const std::function<std::string(const Tensor&)>& constant_name);

// The graph a record describes; `constant` returns the tensor stored under a name (shape and
// dtype are checked against the record here). Throws FormatError for a malformed record: a
// missing or mistyped field, an unknown op or dtype, attribute bytes that do not decode, a
// value id out of range. Call check_loaded_graph before running the result.
graph::Graph graph_from_json(const nlohmann::json& j,
                             const std::function<Tensor(const std::string&)>& constant);

// Checks that a graph read from a plan is one the passes could have made, so the memory planner
// and the executor can trust it: graph::verify's invariants, every value's storage owner owning
// itself, views sharing their input's storage, fresh outputs owning their own; every node's shape
// rule (run on stand-ins, no data read) giving the recorded outputs' shapes and dtypes (and the
// recorded strides for views); arguments contiguous; `pairs` (the inter-op schedule's
// paired_first) increasing, disjoint, in range, and each pair independent. Throws FormatError
// naming the node or value.
void check_loaded_graph(const graph::Graph& g, std::span<const int32_t> pairs);

// Bytes as lowercase hex and back (FormatError for odd lengths and other characters).
std::string hex_encode(std::string_view bytes);
std::string hex_decode(std::string_view text);

}  // namespace ath::onnx::detail
