// rewrite(): the one place that removes nodes and renumbers a graph, so each pass only decides
// what to keep and what to substitute.
#include "athanor/graph/passes.h"

namespace ath::graph {

void rewrite(Graph& g, const std::vector<bool>& keep, const std::vector<ValueId>& replace) {
  auto resolve = [&](ValueId v) {
    while (v != kNoValue && replace[static_cast<std::size_t>(v)] != kNoValue)
      v = replace[static_cast<std::size_t>(v)];
    return v;
  };
  // Which values survive: inputs that are arguments or state (their slots are the calling
  // convention), and what the kept nodes define; constants only if something still reads them.
  std::vector<bool> live(g.values.size(), false);
  for (ValueId a : g.arguments) live[static_cast<std::size_t>(a)] = true;
  for (ValueId s : g.state) live[static_cast<std::size_t>(s)] = true;
  std::vector<Node> nodes;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    if (!keep[k]) continue;
    Node n = std::move(g.nodes[k]);
    for (ValueId& in : n.inputs) {
      in = resolve(in);
      live[static_cast<std::size_t>(in)] = true;
    }
    for (auto& w : n.writes) {
      w.first = resolve(w.first);
      live[static_cast<std::size_t>(w.second)] = true;
    }
    for (ValueId o : n.outputs) live[static_cast<std::size_t>(o)] = true;
    nodes.push_back(std::move(n));
  }
  for (ValueId& o : g.outputs) {
    o = resolve(o);
    live[static_cast<std::size_t>(o)] = true;
  }
  for (GradBinding& b : g.grads) {
    b.grad = resolve(b.grad);
    live[static_cast<std::size_t>(b.grad)] = true;
  }
  // A value's buffer owner, through replacements: a view of a replaced value now views the
  // replacement's buffer, which is not the replacement itself when that is a view too.
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    if (!live[v] || g.values[v].storage == kNoValue) continue;
    ValueId s = resolve(g.values[v].storage);
    for (std::size_t hops = 0; hops < g.values.size(); ++hops) {
      const ValueId up = g.values[static_cast<std::size_t>(s)].storage;
      if (up == kNoValue || up == s) break;
      s = resolve(up);
    }
    g.values[v].storage = s;
  }
  // Renumber canonically, so a rewritten graph prints like one built in its new form: inputs
  // (arguments, state, constants) first in their old order, then each node's results in schedule
  // order. Constants are re-slotted.
  std::vector<ValueId> order;
  order.reserve(g.values.size());
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    if (live[v] && g.values[v].origin != ValueOrigin::Node)
      order.push_back(static_cast<ValueId>(v));
  }
  for (const Node& n : nodes) {
    for (ValueId o : n.outputs) order.push_back(o);
    for (const auto& w : n.writes) order.push_back(w.second);
  }
  std::vector<ValueId> new_id(g.values.size(), kNoValue);
  std::vector<Value> values;
  std::vector<Tensor> constants;
  for (ValueId id : order) {
    const auto v = static_cast<std::size_t>(id);
    if (!live[v] || new_id[v] != kNoValue) continue;
    new_id[v] = static_cast<ValueId>(values.size());
    Value val = std::move(g.values[v]);
    if (val.origin == ValueOrigin::Constant) {
      constants.push_back(std::move(g.constants[static_cast<std::size_t>(val.index)]));
      val.index = static_cast<int32_t>(constants.size() - 1);
    }
    values.push_back(std::move(val));
  }
  auto map = [&](ValueId v) {
    return v == kNoValue ? kNoValue : new_id[static_cast<std::size_t>(resolve(v))];
  };
  for (Value& v : values) {
    v.storage = map(v.storage);
    v.version_of = map(v.version_of);
  }
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    Node& n = nodes[k];
    for (ValueId& in : n.inputs) in = map(in);
    for (ValueId& o : n.outputs) o = map(o);
    for (auto& w : n.writes) w = {map(w.first), map(w.second)};
    for (ValueId o : n.outputs) values[static_cast<std::size_t>(o)].node = static_cast<int32_t>(k);
    for (const auto& w : n.writes)
      values[static_cast<std::size_t>(w.second)].node = static_cast<int32_t>(k);
  }
  for (std::size_t v = 0; v < values.size(); ++v) {
    if (values[v].storage == kNoValue) values[v].storage = static_cast<ValueId>(v);
  }
  for (ValueId& a : g.arguments) a = map(a);
  for (ValueId& s : g.state) s = map(s);
  for (ValueId& o : g.outputs) o = map(o);
  for (GradBinding& b : g.grads) b.grad = map(b.grad);
  g.values = std::move(values);
  g.nodes = std::move(nodes);
  g.constants = std::move(constants);
}

bool has_side_effects(const Node& n) {
  return n.write != WriteKind::None || n.op->name == "philox_seed_offset";
}

void reorder_nodes(Graph& g, const std::vector<int32_t>& order) {
  std::vector<int32_t> new_pos(order.size());
  std::vector<Node> nodes;
  nodes.reserve(order.size());
  for (std::size_t p = 0; p < order.size(); ++p) {
    new_pos[static_cast<std::size_t>(order[p])] = static_cast<int32_t>(p);
    nodes.push_back(std::move(g.nodes[static_cast<std::size_t>(order[p])]));
  }
  g.nodes = std::move(nodes);
  for (Value& v : g.values)
    if (v.origin == ValueOrigin::Node) v.node = new_pos[static_cast<std::size_t>(v.node)];
}

}  // namespace ath::graph
