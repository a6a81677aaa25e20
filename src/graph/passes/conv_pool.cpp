// conv_pool (inference only): a network's first convolution, its ReLU and the max pool after it
// become one conv_relu_max_pool node (ops/conv_pool.h):
//
//   (p, idx) = max_pool2d(convolution_relu(x, w[, b]))   -> p = conv_relu_max_pool(x, w[, b])
//
// Legal when: the convolution has at most 4 input channels (where oneDNN's first-layer kernel
// and a separate pool cost more than they compute), groups 1, dilation 1, float32; its output
// is read by the pool alone and is no graph output; the pool's windows do not overlap (kernel
// == stride, no padding, dilation 1, floor mode) and nobody reads its indices. The fused node
// computes relu before the max instead of after, which is the same value (relu is monotonic),
// and sums each convolution output in its own order: within a few ulp of the unfused graph.
// blocked_layout, which runs next, gives the node the activation layout the next layer reads.
#include "athanor/ops/conv_pool.h"

#include "athanor/graph/passes.h"
#include "athanor/ops/conv.h"
#include "athanor/ops/epilogue.h"
#include "buffer_uses.h"
#include "graph_edit.h"

namespace ath::graph {

namespace {

constexpr int64_t kMaxInputChannels = 4;

using detail::is_f32;

}  // namespace

int fuse_conv_pools(Graph& g) {
  if (detail::writes_memory(g)) return 0;
  const detail::ValueUses uses = detail::value_uses(g);
  detail::GraphEdit edit(g);
  int fused = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& conv = g.nodes[k];
    if (conv.op != &op_convolution_relu() || conv.attr_source || conv.outputs.size() != 1 ||
        conv.inputs.size() < 2)
      continue;
    const auto& c = *static_cast<const ConvAttrs*>(conv.attrs.get());
    const ValueId x = conv.inputs[0], w = conv.inputs[1], y = conv.outputs[0];
    if (c.groups != 1 || c.transposed || c.dilation[0] != 1 || c.dilation[1] != 1 ||
        !is_f32(g, x, 4) || !is_f32(g, w, 4) || !is_f32(g, y, 4) ||
        g.value(w).meta.shape[1] > kMaxInputChannels)
      continue;
    if (conv.inputs.size() == 3 && !is_f32(g, conv.inputs[2], 1)) continue;
    const int32_t pool_k = uses.sole_reader(y);
    if (pool_k < 0) continue;
    const Node& pool = g.nodes[static_cast<std::size_t>(pool_k)];
    if (pool.op != &op_max_pool2d() || pool.attr_source || pool.inputs[0] != y ||
        pool.outputs.size() != 2)
      continue;
    const auto& m = *static_cast<const MaxPool2dAttrs*>(pool.attrs.get());
    const ValueId pooled = pool.outputs[0], indices = pool.outputs[1];
    if (!detail::disjoint_pool_windows(m) || !uses.of(indices).empty() ||
        uses.pinned[static_cast<std::size_t>(indices)])
      continue;
    const ConvPoolAttrs a{.conv = c, .pool = m.kernel, .dst_layout = ActivationLayout::Nchw};
    const std::vector<ValueId> fused_out =
        edit.insert(pool_k, op_conv_relu_max_pool(), a, std::vector<ValueId>(conv.inputs));
    ATH_CHECK(g.value(fused_out[0]).meta.shape == g.value(pooled).meta.shape, Error,
              "conv_pool: the fused node's shape {} differs from the pool's {}",
              to_string(g.value(fused_out[0]).meta.shape), to_string(g.value(pooled).meta.shape));
    edit.replace(pooled, fused_out[0]);
    edit.remove(static_cast<int32_t>(k));
    edit.remove(pool_k);
    ++fused;
  }
  edit.finish();
  return fused;
}

}  // namespace ath::graph
