// pack_linear (inference only): a float32 linear / linear_relu whose weight is a constant (or a
// view of one) becomes linear_packed (ops/linear_packed.h): the weight is reordered into the
// format oneDNN's matmul reads fastest once, here, instead of being read as a transposed
// row-major operand at every call (3.4x slower for a one-row input).
#include "athanor/graph/passes.h"
#include "athanor/ops/epilogue.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/linear_packed.h"
#include "constant_value.h"

namespace ath::graph {

int pack_linears(Graph& g) {
  int packed = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    Node& n = g.nodes[k];
    const bool relu = n.op == &op_linear_relu();
    if ((n.op != &op_linear() && !relu) || n.write != WriteKind::None || n.attr_source ||
        n.inputs.size() < 2)
      continue;
    const Value& x = g.value(n.inputs[0]);
    const Value& y = g.value(n.outputs[0]);
    if (x.meta.dtype != kFloat32 || y.meta.dtype != kFloat32 || x.meta.shape.empty()) continue;
    const Tensor w = detail::constant_value(g, n.inputs[1]);
    if (!w.defined() || w.dtype() != kFloat32 || w.dim() != 2) continue;
    if (n.inputs.size() == 3 && g.value(n.inputs[2]).meta.dtype != kFloat32) continue;
    const int64_t in_features = w.shape()[1];
    if (in_features == 0 || numel(x.meta.shape) == 0) continue;
    const LinearPackedAttrs a{.rows = numel(x.meta.shape) / in_features,
                              .in_features = in_features,
                              .out_features = w.shape()[0],
                              .with_bias = n.inputs.size() == 3,
                              .relu = relu};
    const ValueId weight = g.add_constant(linear_pack_weight(w, a));
    n.op = &op_linear_packed();
    n.attrs = op_linear_packed().clone_attrs(&a);
    n.inputs[1] = weight;
    ++packed;
  }
  // Drop the plain weights (and their views) nothing reads any more.
  if (packed > 0) eliminate_dead_code(g);
  return packed;
}

}  // namespace ath::graph
