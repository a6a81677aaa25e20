// What the inference passes (linear, gelu, select_view, attention, heads) share: who reads each
// value, the constants a pattern compares against, and GraphEdit, which collects removals,
// substitutions and new nodes and applies them through rewrite() in one step.
//
// These passes reason about values, not buffers: they run only on graphs that write no memory
// in place (an inference session's), where a value is exactly its producer's result and a node
// whose results nothing reads any more can go.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "athanor/graph/graph.h"
#include "athanor/graph/passes.h"
#include "constant_value.h"

namespace ath::graph::detail {

inline bool writes_memory(const Graph& g) {
  return std::any_of(g.nodes.begin(), g.nodes.end(),
                     [](const Node& n) { return n.write != WriteKind::None; });
}

// The nodes reading each value directly (once per node, in schedule order), and the values a
// rewrite must keep: graph outputs and assigned gradients.
struct ValueUses {
  std::vector<std::vector<int32_t>> readers;
  std::vector<bool> pinned;

  const std::vector<int32_t>& of(ValueId v) const { return readers[static_cast<std::size_t>(v)]; }
  // v is read by node k alone and is no output: it may disappear into a rewrite of k.
  bool only(ValueId v, int32_t k) const {
    const auto& r = of(v);
    return !pinned[static_cast<std::size_t>(v)] && r.size() == 1 && r[0] == k;
  }
  // The one node reading v (which is no output), or -1.
  int32_t sole_reader(ValueId v) const {
    const auto& r = of(v);
    return !pinned[static_cast<std::size_t>(v)] && r.size() == 1 ? r[0] : -1;
  }
};

inline ValueUses value_uses(const Graph& g) {
  ValueUses u{std::vector<std::vector<int32_t>>(g.values.size()),
              std::vector<bool>(g.values.size(), false)};
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    for (ValueId in : g.nodes[k].inputs) {
      auto& r = u.readers[static_cast<std::size_t>(in)];
      if (r.empty() || r.back() != static_cast<int32_t>(k)) r.push_back(static_cast<int32_t>(k));
    }
  }
  for (ValueId o : g.outputs) u.pinned[static_cast<std::size_t>(o)] = true;
  for (const GradBinding& b : g.grads) u.pinned[static_cast<std::size_t>(b.grad)] = true;
  return u;
}

// The node that made v (a fresh result; no version), or null for inputs.
inline const Node* producer(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (val.origin != ValueOrigin::Node || val.version_of != kNoValue) return nullptr;
  return &g.nodes[static_cast<std::size_t>(val.node)];
}

inline const Tensor* constant_tensor(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (val.origin != ValueOrigin::Constant) return nullptr;
  return &g.constants[static_cast<std::size_t>(val.index)];
}

// The value of a one-element floating constant, or nullopt.
inline std::optional<double> scalar_constant(const Graph& g, ValueId v) {
  const Tensor* t = constant_tensor(g, v);
  if (t == nullptr || t->numel() != 1 || !is_floating(t->dtype())) return std::nullopt;
  return t->to(kFloat64).reshape({1}).to_vector<double>()[0];
}

// Whether a one-element constant holds `want` to within `tol` (relative).
inline bool scalar_is(const Graph& g, ValueId v, double want, double tol = 0) {
  const std::optional<double> s = scalar_constant(g, v);
  return s.has_value() && std::abs(*s - want) <= tol * std::abs(want);
}

// Collects a pass's changes and applies them in one rewrite(): nodes removed, values replaced,
// nodes mutated in place (through node()), and new nodes placed just before or after an existing
// one.
class GraphEdit {
 public:
  explicit GraphEdit(Graph& g)
      : g_(g),
        keep_(g.nodes.size(), true),
        before_(g.nodes.size()),
        after_(g.nodes.size()),
        replace_(g.values.size()) {
    std::fill(replace_.begin(), replace_.end(), kNoValue);
  }

  Graph& graph() { return g_; }
  Node& node(int32_t k) { return g_.nodes[static_cast<std::size_t>(k)]; }
  void remove(int32_t k) { keep_[static_cast<std::size_t>(k)] = false; }
  bool removed(int32_t k) const { return !keep_[static_cast<std::size_t>(k)]; }
  // Every read of `from` reads `to` instead. The node that makes `from` must be removed (else
  // two nodes would define `to`), and `to` must have from's type; a different layout is fine
  // where only kernels read `from` (they take inputs of any strides).
  void replace(ValueId from, ValueId to) { replace_[static_cast<std::size_t>(from)] = to; }

  ValueId constant(const Tensor& t) {
    const ValueId v = g_.add_constant(t);
    replace_.resize(g_.values.size(), kNoValue);
    return v;
  }

  // A new node that runs just before node `at`; returns its results. Its inputs must be
  // defined before `at` runs.
  template <class A>
  std::vector<ValueId> insert(int32_t at, const Op<A>& op, const A& attrs,
                              std::vector<ValueId> inputs) {
    return insert_erased(at, op, op.clone_attrs(&attrs), std::move(inputs));
  }
  // The same, just after node `at` (after the nodes inserted after it so far).
  template <class A>
  std::vector<ValueId> insert_after(int32_t at, const Op<A>& op, const A& attrs,
                                    std::vector<ValueId> inputs) {
    return insert_erased(at, op, op.clone_attrs(&attrs), std::move(inputs), true);
  }
  std::vector<ValueId> insert_erased(int32_t at, const OpDef& op, std::shared_ptr<const void> attrs,
                                     std::vector<ValueId> inputs, bool after = false) {
    std::vector<ValueId> out = g_.add_node_erased(op, std::move(attrs), std::move(inputs));
    (after ? after_ : before_)[static_cast<std::size_t>(at)].push_back(std::move(g_.nodes.back()));
    g_.nodes.pop_back();
    replace_.resize(g_.values.size(), kNoValue);
    ++inserted_;
    return out;
  }

  bool changed() const {
    return inserted_ > 0 || std::find(keep_.begin(), keep_.end(), false) != keep_.end() ||
           std::any_of(replace_.begin(), replace_.end(), [](ValueId v) { return v != kNoValue; });
  }

  // Applies the changes (renumbering every value).
  void finish() {
    if (!changed()) return;
    std::vector<Node> nodes;
    for (std::size_t k = 0; k < g_.nodes.size(); ++k) {
      for (Node& n : before_[k]) nodes.push_back(std::move(n));
      if (keep_[k]) nodes.push_back(std::move(g_.nodes[k]));
      for (Node& n : after_[k]) nodes.push_back(std::move(n));
    }
    g_.nodes = std::move(nodes);
    rewrite(g_, std::vector<bool>(g_.nodes.size(), true), replace_);
  }

 private:
  Graph& g_;
  std::vector<bool> keep_;
  std::vector<std::vector<Node>> before_, after_;
  std::vector<ValueId> replace_;
  int inserted_ = 0;
};

}  // namespace ath::graph::detail
