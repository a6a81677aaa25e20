// conv_pool_train (training graphs): a step's first convolution, its ReLU and the max pool
// after it become one conv_relu_max_pool_indices node (ops/conv_pool.h):
//
//   y = convolution_relu(x, w[, b]); (p, idx) = max_pool2d(y)
//     -> (p, idx) = conv_relu_max_pool_indices(x, w[, b])
//
// It runs after pool_mask, which leaves the pool the only reader of y: the backward reads p and
// idx (max_pool2d_backward_masked) and x (the weight gradient), never y. So y, 4 times p's
// bytes for a 2x2 pool, is neither written nor read, and the few-channel convolution runs in
// the kernel that keeps its sums in registers (oneDNN's first-layer kernel ran W2's 1 -> 32
// channel convolution at 40 GFLOP/s on two threads).
//
// Then the backward: the masked scatter and the weight gradient that reads it become one
// conv_relu_max_pool_weight_grad, so the pre-pool gradient is not written either (see
// fuse_weight_grads below).
//
// Legal when: conv_pool_trainable holds for the filter (one channel, 3x3: ops/conv_pool.h),
// groups 1, dilation 1, float32; y's buffer is read by the pool alone and is no output nor
// written in place; the pool's windows do not overlap (kernel == stride, no padding, dilation 1,
// floor mode). The fused node's indices
// are max_pool2d's (its winner rule over relu's output), and its sums those of an eager
// few-channel conv2d (ops/kernels/cpu/conv_kernels.h): the rewrite is bit-identical.
#include "athanor/graph/passes.h"
#include "athanor/ops/conv.h"
#include "athanor/ops/conv_pool.h"
#include "athanor/ops/epilogue.h"
#include "buffer_uses.h"

namespace ath::graph {

namespace {

using detail::fresh_producer;
using detail::is_f32;

// The backward half: the fused forward's masked scatter and the weight gradient that reads it,
//
//   d = max_pool2d_backward_masked(gp, idx, p); (dw, db) = convolution_backward_weight(x, d)
//     -> (dw, db) = conv_relu_max_pool_weight_grad(x, gp, idx, p)
//
// where (p, idx) = conv_relu_max_pool_indices(x, ...) with the same geometry and stride 1, the
// weight gradient has a bias, and d's buffer is read by it alone. d (the pre-pool gradient) is
// then never written.
int fuse_weight_grads(Graph& g) {
  const detail::BufferUses uses = detail::buffer_uses(g);
  std::vector<bool> keep(g.nodes.size(), true);
  int fused = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    Node& wg = g.nodes[k];
    if (wg.op != &op_convolution_backward_weight() || wg.attr_source ||
        wg.write != WriteKind::None || wg.inputs.size() != 2 || wg.outputs.size() != 2)
      continue;
    const auto& wa = *static_cast<const ConvWeightGradAttrs*>(wg.attrs.get());
    const int32_t mask_k = fresh_producer(g, wg.inputs[1]);
    if (!wa.with_bias || mask_k < 0) continue;
    const Node& masked = g.nodes[static_cast<std::size_t>(mask_k)];
    if (masked.op != &op_max_pool2d_backward_masked() || masked.inputs.size() != 3) continue;
    const ValueId gp = masked.inputs[0], idx = masked.inputs[1], p = masked.inputs[2];
    const int32_t fwd_k = fresh_producer(g, idx);
    if (fwd_k < 0) continue;
    const Node& fwd = g.nodes[static_cast<std::size_t>(fwd_k)];
    if (fwd.op != &op_conv_relu_max_pool_indices() || fwd.outputs[0] != p ||
        fwd.outputs[1] != idx || fwd.inputs[0] != wg.inputs[0])
      continue;
    const auto& fa = *static_cast<const ConvPoolAttrs*>(fwd.attrs.get());
    const int64_t taps = g.value(wg.inputs[0]).meta.shape[1] * wa.kernel[0] * wa.kernel[1];
    if (!(fa.conv == wa.geometry) || fa.conv.stride[0] != 1 || fa.conv.stride[1] != 1 ||
        taps > kMaxConvPoolTaps || !is_f32(g, gp, 4) ||
        !uses.private_to_one_reader(g, wg.inputs[1]))
      continue;
    // The fused node reads gp, idx, p and x where the weight gradient ran: nothing may write
    // them after the scatter read them (or x after the forward).
    if (detail::written_between(g, static_cast<std::size_t>(fwd_k), k, {gp, idx, p, wg.inputs[0]}))
      continue;
    const ConvPoolWeightGradAttrs a{.forward = fa, .kernel = wa.kernel};
    wg.op = &op_conv_relu_max_pool_weight_grad();
    wg.attrs = op_conv_relu_max_pool_weight_grad().clone_attrs(&a);
    wg.inputs = {wg.inputs[0], gp, idx, p};
    keep[static_cast<std::size_t>(mask_k)] = false;
    ++fused;
  }
  if (fused > 0) rewrite(g, keep, std::vector<ValueId>(g.values.size(), kNoValue));
  return fused;
}

}  // namespace

int fuse_conv_pools_for_training(Graph& g) {
  const detail::BufferUses uses = detail::buffer_uses(g);
  std::vector<bool> keep(g.nodes.size(), true);
  int fused = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    Node& pool = g.nodes[k];
    if (pool.op != &op_max_pool2d() || pool.attr_source || pool.outputs.size() != 2 ||
        pool.write != WriteKind::None)
      continue;
    const ValueId y = pool.inputs[0];
    const int32_t conv_k = fresh_producer(g, y);
    if (conv_k < 0) continue;
    Node& conv = g.nodes[static_cast<std::size_t>(conv_k)];
    if (conv.op != &op_convolution_relu() || conv.attr_source || conv.outputs.size() != 1 ||
        conv.inputs.size() < 2 || conv.write != WriteKind::None)
      continue;
    const auto& c = *static_cast<const ConvAttrs*>(conv.attrs.get());
    const ValueId x = conv.inputs[0], w = conv.inputs[1];
    if (c.groups != 1 || c.transposed || c.dilation[0] != 1 || c.dilation[1] != 1 ||
        !is_f32(g, x, 4) || !is_f32(g, w, 4) || !is_f32(g, y, 4) ||
        !conv_pool_trainable(g.value(w).meta.shape[1], g.value(w).meta.shape[2],
                             g.value(w).meta.shape[3]))
      continue;
    if (conv.inputs.size() == 3 && !is_f32(g, conv.inputs[2], 1)) continue;
    if (!uses.private_to_one_reader(g, y)) continue;
    const auto& m = *static_cast<const MaxPool2dAttrs*>(pool.attrs.get());
    if (!detail::disjoint_pool_windows(m)) continue;
    // The fused node computes at the pool's place: nothing may write what the convolution read
    // in between (in a traced step nothing does; the optimizer writes last).
    const ValueId b = conv.inputs.size() == 3 ? conv.inputs[2] : x;
    if (detail::written_between(g, static_cast<std::size_t>(conv_k), k, {x, w, b})) continue;
    // The pool's node becomes the fused one (its outputs and position stay); the convolution's
    // node goes.
    const ConvPoolAttrs a{.conv = c, .pool = m.kernel, .dst_layout = ActivationLayout::Nchw};
    pool.op = &op_conv_relu_max_pool_indices();
    pool.attrs = op_conv_relu_max_pool_indices().clone_attrs(&a);
    pool.inputs = conv.inputs;
    keep[static_cast<std::size_t>(conv_k)] = false;
    ++fused;
  }
  if (fused > 0) rewrite(g, keep, std::vector<ValueId>(g.values.size(), kNoValue));
  return fused + fuse_weight_grads(g);
}

}  // namespace ath::graph
