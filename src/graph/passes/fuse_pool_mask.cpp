// Pool-mask fusion: ReLU's backward mask applied to a max-pool's backward scatter,
//
//   g  = max_pool2d_backward(gp, idx)          (idx from (p, idx) = max_pool2d(y))
//   dy = mul(g, to_dtype(gt(y, 0)))            (or mul(to_dtype(...), g))
//
// becomes one max_pool2d_backward_masked(gp, idx, p) (ops/conv.h). The scatter writes zero
// away from the windows' winners, and at a winner y equals the pooled value, so the mask reads
// p (a quarter of y for a 2x2 pool) instead of y, and dy is written once instead of being
// written, read and written again. This is W2's conv -> relu -> max_pool backward; the kernel
// keeps the unfused bits exactly (see the op).
//
// Legal when: the scatter's result and the mask are read by nothing else (they disappear),
// the constant is a scalar zero, y is the very value max_pool2d read, every dtype agrees, and
// nothing writes gp's, idx's or p's buffer between the scatter and the multiply.
#include "athanor/graph/passes.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/conv.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/pointwise.h"
#include "buffer_uses.h"

namespace ath::graph {

namespace {

bool is_scalar_zero(const Graph& g, ValueId v) {
  const Value& c = g.value(v);
  if (c.origin != ValueOrigin::Constant) return false;
  const Tensor& t = g.constants[static_cast<std::size_t>(c.index)];
  return t.numel() == 1 && t.to(kFloat64).to_vector<double>()[0] == 0.0;
}

// The node that made v as a fresh output, or null (an argument, state, constant or version).
const Node* producer(const Graph& g, ValueId v) {
  const int32_t k = detail::fresh_producer(g, v);
  return k < 0 ? nullptr : &g.nodes[static_cast<std::size_t>(k)];
}

}  // namespace

int fuse_pool_masks(Graph& g) {
  const detail::BufferUses uses = detail::buffer_uses(g);
  auto private_to_one_reader = [&](ValueId v) { return uses.private_to_one_reader(g, v); };
  // Index of the node that made each fresh value, to find the nodes between two nodes.
  auto node_index = [&](const Node* n) { return static_cast<std::size_t>(n - g.nodes.data()); };

  std::vector<bool> keep(g.nodes.size(), true);
  int fused = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    Node& mul = g.nodes[k];
    if (mul.op != &op_mul() || mul.write != WriteKind::None || mul.inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const ValueId scattered = mul.inputs[static_cast<std::size_t>(side)];
      const ValueId mask = mul.inputs[static_cast<std::size_t>(1 - side)];
      const Node* scatter = producer(g, scattered);
      const Node* cast = producer(g, mask);
      if (scatter == nullptr || cast == nullptr || scatter->op != &op_max_pool2d_backward() ||
          cast->op != &op_to_dtype())
        continue;
      const Node* compare = producer(g, cast->inputs[0]);
      if (compare == nullptr || compare->op != &op_gt() || !is_scalar_zero(g, compare->inputs[1]))
        continue;
      const ValueId y = compare->inputs[0], indices = scatter->inputs[1];
      // The indices must be output 1 of the max_pool2d that read y itself.
      const Node* pool = producer(g, indices);
      if (pool == nullptr || pool->op != &op_max_pool2d() || pool->outputs.size() != 2 ||
          pool->outputs[1] != indices || pool->inputs[0] != y)
        continue;
      const ValueId pooled = pool->outputs[0];
      const DType t = g.value(scattered).meta.dtype;
      if (g.value(mask).meta.dtype != t || g.value(mul.outputs[0]).meta.dtype != t ||
          g.value(pooled).meta.dtype != t ||
          g.value(mul.outputs[0]).meta.shape != g.value(scattered).meta.shape ||
          g.value(mask).meta.shape != g.value(scattered).meta.shape)
        continue;
      if (!private_to_one_reader(scattered) || !private_to_one_reader(mask)) continue;
      // Nothing may write what the fused node now reads later than the scatter read it.
      const ValueId grad_pooled = scatter->inputs[0];
      if (detail::written_between(g, node_index(scatter), k, {grad_pooled, indices, pooled}))
        continue;
      keep[node_index(scatter)] = false;
      keep[node_index(cast)] = false;
      if (private_to_one_reader(cast->inputs[0])) keep[node_index(compare)] = false;
      mul.op = &op_max_pool2d_backward_masked();
      mul.attrs = scatter->attrs;  // PoolGradAttrs: the input plane
      mul.inputs = {grad_pooled, indices, pooled};
      ++fused;
      break;
    }
  }
  if (fused > 0) rewrite(g, keep, std::vector<ValueId>(g.values.size(), kNoValue));
  return fused;
}

}  // namespace ath::graph
