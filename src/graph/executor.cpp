#include "athanor/graph/executor.h"

#include <fmt/format.h>

#include <limits>

#include "athanor/core/error.h"
#include "athanor/ops/dispatch.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::graph {

Executor::Executor(const Graph& graph) : graph_(graph), release_after_(graph.nodes.size()) {
  constexpr int kKeep = std::numeric_limits<int>::max();
  std::vector<int> last_use(graph.values.size(), -1);
  for (std::size_t k = 0; k < graph.nodes.size(); ++k) {
    for (ValueId in : graph.nodes[k].inputs)
      last_use[static_cast<std::size_t>(in)] = static_cast<int>(k);
  }
  for (ValueId o : graph.outputs) last_use[static_cast<std::size_t>(o)] = kKeep;
  for (const GradBinding& b : graph.grads) last_use[static_cast<std::size_t>(b.grad)] = kKeep;
  for (std::size_t v = 0; v < graph.values.size(); ++v) {
    const int k = last_use[v];
    if (k >= 0 && k != kKeep && graph.values[v].origin == ValueOrigin::Node)
      release_after_[static_cast<std::size_t>(k)].push_back(static_cast<ValueId>(v));
  }
}

std::vector<Tensor> Executor::run(std::span<const Tensor> arguments) const {
  const Graph& g = graph_;
  ATH_CHECK(arguments.size() == g.arguments.size(), ValueError,
            "graph executor: the graph takes {} arguments, got {}", g.arguments.size(),
            arguments.size());
  std::vector<Tensor> slot(g.values.size());
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const Value& v = g.value(g.arguments[i]);
    const Tensor& a = arguments[i];
    ATH_CHECK(a.defined() && a.shape() == v.meta.shape && a.dtype() == v.meta.dtype, ValueError,
              "graph executor: argument {} is {}, the graph was made for {}", i,
              a.defined() ? type_string({a.shape(), a.dtype()}) : "undefined", type_string(v.meta));
    slot[static_cast<std::size_t>(g.arguments[i])] = a;
  }
  for (std::size_t i = 0; i < g.state.size(); ++i)
    slot[static_cast<std::size_t>(g.state[i])] = g.state_tensors[i];
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    if (g.values[v].origin == ValueOrigin::Constant)
      slot[v] = g.constants[static_cast<std::size_t>(g.values[v].index)];
  }

  NoGradGuard no_grad;                // the backward is in the graph already
  detail::AutocastPause no_autocast;  // so are the casts
  std::vector<Tensor> inputs;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    inputs.clear();
    for (ValueId in : n.inputs) inputs.push_back(slot[static_cast<std::size_t>(in)]);
    std::shared_ptr<const void> fresh;
    const void* attrs = n.attrs.get();
    if (n.attr_source) {
      fresh = n.attr_source();
      attrs = fresh.get();
    }
    Outputs out = n.op->run(TensorSpan(inputs), attrs);
    if (n.write == WriteKind::IntoSelf) {
      Tensor target = inputs[0];
      detail::copy_into(target, out[0]);
      slot[static_cast<std::size_t>(n.writes[0].second)] = target;
    } else {
      for (std::size_t i = 0; i < n.outputs.size(); ++i) {
        const Value& v = g.value(n.outputs[i]);
        ATH_CHECK(
            i < out.size() && out[i].shape() == v.meta.shape && out[i].dtype() == v.meta.dtype,
            ValueError,
            "graph executor: node {} ({}) made {} where the trace recorded {} (a shape that "
            "depends on the data cannot be replayed)",
            k, n.op->name,
            i < out.size() ? type_string({out[i].shape(), out[i].dtype()}) : "nothing",
            type_string(v.meta));
        slot[static_cast<std::size_t>(n.outputs[i])] = std::move(out[i]);
      }
      for (const auto& [from, to] : n.writes)
        slot[static_cast<std::size_t>(to)] = slot[static_cast<std::size_t>(from)];
    }
    for (ValueId dead : release_after_[k]) slot[static_cast<std::size_t>(dead)] = Tensor();
  }
  for (const GradBinding& b : g.grads)
    g.state_tensors[static_cast<std::size_t>(b.state)].set_grad(
        slot[static_cast<std::size_t>(b.grad)]);
  std::vector<Tensor> results;
  results.reserve(g.outputs.size());
  for (ValueId o : g.outputs) results.push_back(slot[static_cast<std::size_t>(o)]);
  return results;
}

}  // namespace ath::graph
