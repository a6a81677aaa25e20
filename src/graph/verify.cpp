#include "athanor/graph/verify.h"

#include <fmt/format.h>

#include "athanor/core/error.h"

namespace ath::graph {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw ValueError(fmt::format("graph verifier: {}", what));
}

}  // namespace

void verify(const Graph& g) {
  const auto num_values = static_cast<ValueId>(g.values.size());
  std::vector<bool> defined(g.values.size(), false);
  auto check_id = [&](ValueId v, const std::string& where) {
    if (v < 0 || v >= num_values)
      fail(fmt::format("{} refers to %{}, which does not exist", where, v));
  };
  auto check_slots = [&](const std::vector<ValueId>& slots, ValueOrigin origin, const char* kind) {
    for (std::size_t i = 0; i < slots.size(); ++i) {
      check_id(slots[i], fmt::format("{} slot {}", kind, i));
      const Value& v = g.value(slots[i]);
      if (v.origin != origin || v.index != static_cast<int32_t>(i))
        fail(fmt::format("{} slot {} names %{}, whose record says otherwise", kind, i, slots[i]));
      defined[static_cast<std::size_t>(slots[i])] = true;
    }
  };
  check_slots(g.arguments, ValueOrigin::Argument, "argument");
  check_slots(g.state, ValueOrigin::State, "state");
  if (g.state_tensors.size() != g.state.size() || g.state_grad_of.size() != g.state.size())
    fail(fmt::format("{} state values but {} bound tensors and {} gradient roles", g.state.size(),
                     g.state_tensors.size(), g.state_grad_of.size()));
  std::vector<ValueId> const_slots;
  for (std::size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.origin == ValueOrigin::Constant) {
      if (v.index < 0 || static_cast<std::size_t>(v.index) >= g.constants.size())
        fail(fmt::format("%{} is constant slot {}, of {}", i, v.index, g.constants.size()));
      defined[i] = true;
    }
    if (v.origin != ValueOrigin::Node && (v.storage < 0 || v.storage >= num_values ||
                                          g.value(v.storage).origin == ValueOrigin::Node))
      fail(fmt::format("input %{} must share storage only with another input", i));
  }
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    const std::string where = fmt::format("node {} ({})", k, n.op ? n.op->name : "null op");
    if (n.op == nullptr || !n.attrs) fail(where + " has no op or no attributes");
    if (n.op->num_inputs >= 0 && static_cast<int>(n.inputs.size()) != n.op->num_inputs)
      fail(fmt::format("{} has {} inputs, its op takes {}", where, n.inputs.size(),
                       n.op->num_inputs));
    for (ValueId in : n.inputs) {
      check_id(in, where);
      if (!defined[static_cast<std::size_t>(in)])
        fail(fmt::format("{} reads %{} before it is defined", where, in));
    }
    auto define = [&](ValueId v, int32_t output) {
      check_id(v, where);
      const Value& val = g.value(v);
      if (defined[static_cast<std::size_t>(v)])
        fail(fmt::format("%{} is defined twice ({})", v, where));
      if (val.origin != ValueOrigin::Node || val.node != static_cast<int32_t>(k) ||
          val.output != output)
        fail(fmt::format("%{} is defined by {} but its record names node {} output {}", v, where,
                         val.node, val.output));
      defined[static_cast<std::size_t>(v)] = true;
    };
    if (n.write == WriteKind::IntoSelf && !n.outputs.empty())
      fail(where + " writes into its input 0 and so has no fresh outputs");
    if (n.write != WriteKind::IntoSelf && n.op->num_outputs >= 0 &&
        static_cast<int>(n.outputs.size()) != n.op->num_outputs)
      fail(fmt::format("{} has {} outputs, its op makes {}", where, n.outputs.size(),
                       n.op->num_outputs));
    for (std::size_t i = 0; i < n.outputs.size(); ++i)
      define(n.outputs[i], static_cast<int32_t>(i));
    if ((n.write == WriteKind::None) != n.writes.empty())
      fail(where + ": its write kind and its list of writes disagree");
    if (n.write == WriteKind::IntoSelf &&
        (n.writes.size() != 1 || n.inputs.empty() || n.writes[0].first != n.inputs[0]))
      fail(where + " writes into its input 0, but its write names another value");
    for (std::size_t w = 0; w < n.writes.size(); ++w) {
      const auto [from, to] = n.writes[w];
      check_id(from, where);
      if (std::find(n.inputs.begin(), n.inputs.end(), from) == n.inputs.end())
        fail(fmt::format("{} writes %{}, which is not one of its inputs", where, from));
      define(to, static_cast<int32_t>(n.outputs.size() + w));
      const Value& a = g.value(from);
      const Value& b = g.value(to);
      if (b.version_of != from || b.storage != a.storage || b.meta.shape != a.meta.shape ||
          b.meta.dtype != a.meta.dtype)
        fail(fmt::format("{}: %{} must be a new version of %{} (same storage, shape and dtype)",
                         where, to, from));
    }
  }
  for (ValueId o : g.outputs) {
    check_id(o, "the outputs");
    if (!defined[static_cast<std::size_t>(o)]) fail(fmt::format("output %{} is never defined", o));
  }
  for (const GradBinding& b : g.grads) {
    if (b.state < 0 || static_cast<std::size_t>(b.state) >= g.state.size())
      fail(fmt::format("a gradient binding names state slot {}, of {}", b.state, g.state.size()));
    check_id(b.grad, "a gradient binding");
  }
}

}  // namespace ath::graph
