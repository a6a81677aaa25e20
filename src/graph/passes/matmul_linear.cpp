// linear (inference only): a matrix product by a constant weight, and the bias add that follows
// it, become one linear node, so oneDNN adds the bias as it writes the product (no second pass
// over the output) and the epilogue pass can then fuse a following ReLU:
//
//   y = mm(x, W) [-> view(y, [..., N])] -> add(bias, .)   ->   linear(x, W^T, bias) [-> view]
//   y = mm(x, W) (no bias add)                            ->   linear(x, W^T)
//
// W is a constant [K, N] (what ONNX MatMul and the TorchScript exporter's MatMul + Add hold);
// linear takes its weight as [N, K], so W^T is added as a constant, made once here. The bias is
// a constant of N elements broadcast along the last dim only (shape [N], [1, N], ...) whose add
// does not change the product's shape; ONNX's Gemm already lowers to linear.
//
// Bit-identical: the same oneDNN product over the same weight layout, and the bias is added to
// the same float32 sums (oneDNN adds it to the accumulator before the single rounding to the
// output... which is what a separate add does too: both round sum + bias once).
#include "athanor/ops/linalg.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/views.h"
#include "graph_edit.h"

namespace ath::graph {

namespace {

using detail::GraphEdit;
using detail::ValueUses;

// The bias constant of `add_k` when it is add(c, y) or add(y, c), alpha 1, c of N elements along
// the last dim only, same dtype, and the sum has y's type; else kNoValue.
ValueId bias_operand(const Graph& g, const Node& add, ValueId y, int64_t n) {
  if (add.op != &op_add() || add.inputs.size() != 2 || add.attr_source) return kNoValue;
  if (!(static_cast<const AlphaAttrs*>(add.attrs.get())->alpha == Scalar(1))) return kNoValue;
  const ValueId c = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
  if (c == y || (add.inputs[0] != y && add.inputs[1] != y)) return kNoValue;
  const Tensor* t = detail::constant_tensor(g, c);
  const Value& yv = g.value(y);
  if (t == nullptr || t->dtype() != yv.meta.dtype || t->numel() != n || t->dim() == 0 ||
      t->dim() > static_cast<int64_t>(yv.meta.shape.size()))
    return kNoValue;
  for (int64_t d = 0; d + 1 < t->dim(); ++d)
    if (t->shape()[d] != 1) return kNoValue;
  const Value& sum = g.value(add.outputs[0]);
  if (sum.meta.shape != yv.meta.shape || sum.meta.dtype != yv.meta.dtype) return kNoValue;
  return c;
}

}  // namespace

int fuse_matmul_linear(Graph& g) {
  if (g.nodes.empty() || detail::writes_memory(g)) return 0;
  const ValueUses uses = detail::value_uses(g);
  GraphEdit edit(g);
  int changed = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    const bool product = n.op == &op_mm() || n.op == &op_matmul();
    if (!product || n.inputs.size() != 2 || n.outputs.size() != 1 || n.attr_source) continue;
    const Tensor* w = detail::constant_tensor(g, n.inputs[1]);
    const ValueId y = n.outputs[0];
    const DType t = g.value(y).meta.dtype;
    const Value& x = g.value(n.inputs[0]);
    if (w == nullptr || w->dim() != 2 || x.meta.shape.size() < 2 || !is_floating(t) ||
        w->dtype() != t || x.meta.dtype != t)
      continue;
    const int64_t cols = w->shape()[1];
    // The bias add: y's only reader, or the only reader of y's one view that keeps the last dim.
    ValueId sum = kNoValue, bias = kNoValue, result = y;
    int32_t add_k = uses.sole_reader(y);
    if (add_k >= 0 && g.nodes[static_cast<std::size_t>(add_k)].op == &op_view()) {
      const ValueId v = g.nodes[static_cast<std::size_t>(add_k)].outputs[0];
      result = g.value(v).meta.shape.back() == cols ? v : kNoValue;
      add_k = result == kNoValue ? -1 : uses.sole_reader(v);
    }
    if (add_k >= 0) {
      const Node& add = g.nodes[static_cast<std::size_t>(add_k)];
      bias = bias_operand(g, add, result, cols);
      if (bias != kNoValue) sum = add.outputs[0];
    }
    std::vector<ValueId> inputs{n.inputs[0], edit.constant(w->t().contiguous())};
    if (bias != kNoValue) {
      const Tensor& b = *detail::constant_tensor(g, bias);
      inputs.push_back(b.dim() == 1 ? bias : edit.constant(b.reshape({cols}).contiguous()));
      edit.remove(add_k);
      edit.replace(sum, result);
    }
    Node& m = edit.node(static_cast<int32_t>(k));
    const NoAttrs none{};
    m.op = &op_linear();
    m.attrs = op_linear().clone_attrs(&none);
    m.inputs = std::move(inputs);
    ++changed;
  }
  edit.finish();
  return changed;
}

}  // namespace ath::graph
