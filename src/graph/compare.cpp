// first_difference(): whether two traces of the same code recorded the same computation. The
// compiled step replays a graph only once two consecutive traces agree, so whatever the code
// decided outside the op registry (creating optimizer state on its first step, a plain double
// that changes every step) shows up here as a difference instead of being baked in.
#include "athanor/graph/compare.h"

#include <fmt/format.h>

#include <cstring>

namespace ath::graph {

namespace {

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype() || a.device() != b.device()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  const std::size_t bytes = static_cast<std::size_t>(a.numel()) * element_size(a.dtype());
  return bytes == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), bytes) == 0;
}

std::string describe(const Graph& g, std::size_t k) {
  return fmt::format("node {} ({})", k, g.nodes[k].op->name);
}

}  // namespace

std::string first_difference(const Graph& a, const Graph& b) {
  if (a.nodes.size() != b.nodes.size())
    return fmt::format("{} ops were recorded, then {}", a.nodes.size(), b.nodes.size());
  if (a.values.size() != b.values.size() || a.state.size() != b.state.size() ||
      a.constants.size() != b.constants.size() || a.arguments != b.arguments)
    return fmt::format("the inputs differ ({} state tensors and {} constants, then {} and {})",
                       a.state.size(), a.constants.size(), b.state.size(), b.constants.size());
  for (std::size_t k = 0; k < a.nodes.size(); ++k) {
    const Node& x = a.nodes[k];
    const Node& y = b.nodes[k];
    if (x.op != y.op) return fmt::format("{} became {}", describe(a, k), y.op->name);
    if (x.inputs != y.inputs || x.outputs != y.outputs || x.write != y.write ||
        x.writes != y.writes)
      return fmt::format("{} reads or writes other values", describe(a, k));
    if (static_cast<bool>(x.attr_source) != static_cast<bool>(y.attr_source))
      return fmt::format("{}: attributes from a source in one trace only", describe(a, k));
    if (!x.attr_source && !x.op->attrs_equal(x.attrs.get(), y.attrs.get()))
      return fmt::format(
          "{} has other attributes (a value computed outside the ops changes "
          "between calls: pass it as a tensor)",
          describe(a, k));
  }
  for (std::size_t v = 0; v < a.values.size(); ++v) {
    const Value& x = a.values[v];
    const Value& y = b.values[v];
    if (x.origin != y.origin || x.meta.shape != y.meta.shape || x.meta.dtype != y.meta.dtype ||
        x.strides != y.strides || x.storage != y.storage || x.version_of != y.version_of)
      return fmt::format("value %{} differs ({} then {})", v, type_string(x.meta, x.strides),
                         type_string(y.meta, y.strides));
  }
  if (a.state_grad_of != b.state_grad_of) return "another state input is a parameter's gradient";
  for (std::size_t s = 0; s < a.state.size(); ++s) {
    if (a.state_grad_of[s] >= 0) continue;  // bound by role: the parameter's current .grad
    if (a.state_tensors[s].impl() != b.state_tensors[s].impl())
      return fmt::format("state input {} (%{}) is another tensor", s, a.state[s]);
  }
  for (std::size_t c = 0; c < a.constants.size(); ++c) {
    if (!same_values(a.constants[c], b.constants[c]))
      return fmt::format(
          "constant {} has other values (a value computed outside the ops "
          "changes between calls)",
          c);
  }
  if (a.outputs != b.outputs) return "the outputs differ";
  if (a.grads.size() != b.grads.size()) return "other gradients are assigned";
  for (std::size_t i = 0; i < a.grads.size(); ++i) {
    if (a.grads[i].state != b.grads[i].state || a.grads[i].grad != b.grads[i].grad)
      return "other gradients are assigned";
  }
  return {};
}

}  // namespace ath::graph
