// Chains of layout nodes (views, clone, index_select of one constant index) and what they read,
// for the heads pass: a chain is run on a tensor of element numbers, so comparing two chains'
// results compares which elements they read, whatever ops an exporter used.
#pragma once

#include <algorithm>
#include <vector>

#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/views.h"
#include "graph_edit.h"

namespace ath::graph::detail {

inline constexpr std::size_t kMaxChain = 24;

// The layout nodes from a base value up to v (in the order they run), each reading the previous
// value as input 0 and nothing else but constants: views, clone, and index_select of a
// one-element constant index.
struct Chain {
  ValueId base = kNoValue;
  std::vector<int32_t> nodes;
  bool copies = false;  // a clone or index_select on the way
};

inline bool layout_op(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || n.inputs.empty() || n.attr_source) return false;
  if (n.op == &op_view() || n.op == &op_permute() || n.op == &op_slice() || n.op == &op_select() ||
      n.op == &op_clone())
    return n.inputs.size() == 1;
  if (n.op == &op_index_select() && n.inputs.size() == 2) {
    const Tensor idx = constant_value(g, n.inputs[1]);
    return idx.defined() && idx.numel() == 1;
  }
  return false;
}

inline Chain layout_chain(const Graph& g, ValueId v) {
  Chain c{.base = v};
  while (c.nodes.size() < kMaxChain) {
    const Node* p = producer(g, c.base);
    if (p == nullptr || !layout_op(g, *p)) break;
    c.nodes.push_back(g.value(c.base).node);
    c.copies = c.copies || p->op == &op_clone() || p->op == &op_index_select();
    c.base = p->inputs[0];
  }
  std::reverse(c.nodes.begin(), c.nodes.end());
  return c;
}

// The most elements whose numbers a check writes out (int32: 64 MiB); larger bases are left as
// they are. W4 at batch 64 has 3.1M in its largest projection.
inline constexpr int64_t kMaxNumbered = int64_t{1} << 24;

// Element numbers of the base's elements (row-major), shaped like the base; int32.
inline Tensor element_numbers(const Shape& shape) {
  return arange(0, numel(shape), 1, kInt32).view(shape);
}

// What the chain reads, as element numbers of its base (or, given `start` shaped like the base,
// the entries of `start` it reads).
inline Tensor run_chain(const Graph& g, const Chain& c, Tensor start = Tensor()) {
  Tensor t = start.defined() ? start : element_numbers(g.value(c.base).meta.shape);
  for (int32_t k : c.nodes) {
    const Node& n = g.nodes[static_cast<std::size_t>(k)];
    std::vector<Tensor> in{t};
    for (std::size_t i = 1; i < n.inputs.size(); ++i) in.push_back(constant_value(g, n.inputs[i]));
    t = n.op->run(TensorSpan(in), n.attrs.get())[0];
  }
  return t;
}

inline bool same_numbers(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && equal(a.contiguous(), b.contiguous());
}

}  // namespace ath::graph::detail
