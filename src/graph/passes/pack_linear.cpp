// pack_linear (inference only): a float32 linear / linear_relu whose weight is a constant (or a
// view of one) becomes linear_packed (ops/linear_packed.h): the weight is reordered into the
// format oneDNN's matmul reads fastest once, here, instead of being read as a transposed
// row-major operand at every call (3.4x slower for a one-row input).
//
// What reads the linear alone (directly or through one reshape, as exporters write a
// Transformer) can become the primitive's post-op, applied while the product's tile is in
// registers instead of in another pass over memory:
// - an exact GELU (W4's feed-forward at batch 16: a [2048, 512] gelu, 0.23 ms, per block);
//   oneDNN evaluates erf with its own polynomial: within a few float32 ulp of gelu's;
// - an add of a value computed before the linear (a residual connection: h + proj(f(h))), as
//   a binary-add post-op reading it in place.
#include "athanor/graph/passes.h"
#include "athanor/ops/activations.h"
#include "athanor/ops/epilogue.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/linear_packed.h"
#include "athanor/ops/pointwise.h"
#include "constant_value.h"
#include "graph_edit.h"

namespace ath::graph {

namespace {

// A node fused into the linear before it: it goes, and its result's readers read `result`.
struct Epilogue {
  int32_t node = -1;
  ValueId reads = kNoValue;     // the value it reads from the linear (maybe a reshape of it)
  ValueId residual = kNoValue;  // the add's other operand
  bool gelu = false;
};

// The exact gelu or the residual add reading linear node k's result y alone, directly or
// through one reshape that nothing else reads; node -1 when there is none.
Epilogue epilogue_after(const Graph& g, const detail::ValueUses& uses, std::size_t k, ValueId y) {
  int32_t r = uses.sole_reader(y);
  ValueId in = y;
  if (r >= 0 && g.nodes[static_cast<std::size_t>(r)].op->name == std::string_view("view")) {
    in = g.nodes[static_cast<std::size_t>(r)].outputs[0];
    r = uses.sole_reader(in);
  }
  if (r < 0) return {};
  const Node& n = g.nodes[static_cast<std::size_t>(r)];
  if (n.op == &op_gelu() && n.inputs.size() == 1 &&
      static_cast<const GeluAttrs*>(n.attrs.get())->approximate == GeluApprox::None)
    return {.node = r, .reads = in, .gelu = true};
  if (n.op != &op_add() || n.inputs.size() != 2 || n.inputs[0] == n.inputs[1] ||
      static_cast<const AlphaAttrs*>(n.attrs.get())->alpha.to<double>() != 1.0)
    return {};
  const ValueId other = n.inputs[0] == in ? n.inputs[1] : n.inputs[0];
  const Value& o = g.value(other);
  // Same type as the sum (no broadcast), and ready when the linear runs.
  if (o.meta.shape != g.value(n.outputs[0]).meta.shape || o.meta.dtype != kFloat32 ||
      g.value(in).meta.shape != o.meta.shape)
    return {};
  if (o.origin == ValueOrigin::Node && o.node >= static_cast<int32_t>(k)) return {};
  return {.node = r, .reads = in, .residual = other};
}

}  // namespace

int pack_linears(Graph& g) {
  // Epilogues reason about values, not buffers (graph_edit.h): not where memory is written.
  const bool epilogues = !detail::writes_memory(g);
  const detail::ValueUses uses = detail::value_uses(g);
  detail::GraphEdit edit(g);
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
    const Epilogue epi = epilogues && !relu ? epilogue_after(g, uses, k, n.outputs[0]) : Epilogue{};
    const LinearPackedAttrs a{.rows = numel(x.meta.shape) / in_features,
                              .in_features = in_features,
                              .out_features = w.shape()[0],
                              .with_bias = n.inputs.size() == 3,
                              .relu = relu,
                              .gelu = epi.gelu,
                              .residual = epi.residual != kNoValue};
    const ValueId weight = edit.constant(linear_pack_weight(w, a));
    n.op = &op_linear_packed();
    n.attrs = op_linear_packed().clone_attrs(&a);
    n.inputs[1] = weight;
    if (a.residual) n.inputs.push_back(epi.residual);
    if (epi.node >= 0) {  // its readers read the (reshaped) product, now with the epilogue
      edit.remove(epi.node);
      edit.replace(g.nodes[static_cast<std::size_t>(epi.node)].outputs[0], epi.reads);
    }
    ++packed;
  }
  edit.finish();
  // Drop the plain weights (and their views) nothing reads any more.
  if (packed > 0) eliminate_dead_code(g);
  return packed;
}

}  // namespace ath::graph
