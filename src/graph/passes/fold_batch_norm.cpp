// bn_fold (inference only): an eval-mode batch_norm right after a convolution or linear with
// constant weights is folded into them,
//
//   w' = w * s,  b' = (b - mean) * s + beta,  s = gamma / sqrt(var + eps)   (per output channel)
//
// so the normalization costs nothing at run time and the convolution can take its epilogue
// (relu, blocked layout) next. Computed in float64 and rounded once; the result differs from
// the unfolded graph by rounding only (convolution and normalization are no longer rounded
// separately). Exporters that keep BatchNormalization nodes (PyTorch with constant folding off,
// TensorFlow converters) leave one after nearly every convolution.
#include "athanor/graph/passes.h"
#include "athanor/ops/conv.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/nn_functional.h"
#include "athanor/ops/pointwise.h"
#include "buffer_uses.h"
#include "constant_value.h"

namespace ath::graph {

namespace {

bool is_constant(const Graph& g, ValueId v) { return detail::constant_value(g, v).defined(); }

Tensor constant(const Graph& g, ValueId v) { return detail::constant_value(g, v); }

// The folded weight and bias of producer `p` (a convolution or linear) with the batch_norm `bn`.
std::pair<Tensor, Tensor> folded(const Graph& g, const Node& p, const Node& bn,
                                 const BatchNormAttrs& a) {
  const Tensor w = constant(g, p.inputs[1]).to(kFloat64);
  const int64_t out = w.shape()[0];
  const Tensor ones = full({out}, 1.0, kFloat64), zeros = full({out}, 0.0, kFloat64);
  const Tensor mean = constant(g, bn.inputs[1]).to(kFloat64);
  const Tensor var = constant(g, bn.inputs[2]).to(kFloat64);
  const Tensor gamma = a.has_weight ? constant(g, bn.inputs[3]).to(kFloat64) : ones;
  const Tensor beta = a.has_bias ? constant(g, bn.inputs[4]).to(kFloat64) : zeros;
  const Tensor b = p.inputs.size() == 3 ? constant(g, p.inputs[2]).to(kFloat64) : zeros;
  const Tensor s = gamma / sqrt(var + a.eps);
  Shape per_channel(static_cast<std::size_t>(w.dim()), 1);
  per_channel[0] = out;
  const DType t = g.value(p.outputs[0]).meta.dtype;
  return {(w * s.reshape(per_channel)).to(t).contiguous(), ((b - mean) * s + beta).to(t)};
}

bool foldable_producer(const Graph& g, const Node& p) {
  if (p.write != WriteKind::None || p.attr_source || p.outputs.size() != 1) return false;
  if (p.op == &op_convolution()) {
    if (static_cast<const ConvAttrs*>(p.attrs.get())->transposed) return false;
  } else if (p.op != &op_linear()) {
    return false;
  }
  if (!is_constant(g, p.inputs[1])) return false;
  return p.inputs.size() == 2 || is_constant(g, p.inputs[2]);
}

}  // namespace

int fold_batch_norms(Graph& g) {
  const detail::BufferUses uses = detail::buffer_uses(g);
  std::vector<bool> keep(g.nodes.size(), true);
  int folded_count = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& bn = g.nodes[k];
    if (bn.op != &op_batch_norm() || bn.write != WriteKind::None) continue;
    const auto& a = *static_cast<const BatchNormAttrs*>(bn.attrs.get());
    if (a.training || !a.has_running) continue;
    bool constants = true;
    for (std::size_t i = 1; i < bn.inputs.size(); ++i)
      constants = constants && (bn.inputs[i] == kNoValue || is_constant(g, bn.inputs[i]));
    if (!constants) continue;
    // Only the normalized output may be read (the others are the batch statistics of training).
    bool extra_read = false;
    for (std::size_t o = 1; o < bn.outputs.size(); ++o) {
      const auto s = static_cast<std::size_t>(g.storage_of(bn.outputs[o]));
      extra_read = extra_read || !uses.readers[s].empty() || uses.pinned[s];
    }
    const ValueId y = bn.inputs[0];
    const Value& yv = g.value(y);
    if (extra_read || yv.origin != ValueOrigin::Node || g.storage_of(y) != y ||
        !uses.private_to_one_reader(g, y) || !is_floating(yv.meta.dtype))
      continue;
    Node& p = g.nodes[static_cast<std::size_t>(yv.node)];
    if (!foldable_producer(g, p)) continue;
    // A linear's channels are its last dim: batch_norm normalizes dim 1, so only [N, C] inputs.
    if (p.op == &op_linear() && yv.meta.shape.size() != 2) continue;
    auto [w, b] = folded(g, p, bn, a);
    const ValueId wv = g.add_constant(w), bv = g.add_constant(b);
    p.inputs = {p.inputs[0], wv, bv};
    const ValueId out = bn.outputs[0];
    p.outputs[0] = out;
    g.values[static_cast<std::size_t>(out)].node = yv.node;
    keep[k] = false;
    ++folded_count;
  }
  if (folded_count > 0) rewrite(g, keep, std::vector<ValueId>(g.values.size(), kNoValue));
  return folded_count;
}

}  // namespace ath::graph
