// Log-softmax + NLL fusion: the classic classifier head written as two ops,
//
//   ls       = log_softmax(x, class dim)
//   loss, tw = nll_loss(ls, target, weight)
//   dls      = nll_loss_backward(g, target, weight, tw)     (when the step has a backward)
//   dx       = log_softmax_backward(dls, ls)
//
// becomes the one fused op athanor has for it (ops/losses.h):
//
//   loss, lse, tw = cross_entropy(x, target, weight)
//   dx            = cross_entropy_backward(g, x, target, weight, lse, tw)
//
// so the [N, C] log-probabilities are never written, read back, or kept for the backward (the
// kernel keeps one logsumexp per row), and the backward is one pass instead of two.
//
// Not bit-identical: cross_entropy computes loss = lse - x[t] with its own exp and sums (within
// a few ulp of the two-op form; the pass tests bound the difference). Every other pass keeps
// bits; this one is switched off by name ("log_softmax_nll") where bits must match eager.
//
// Legal when: ls is read only by the nll_loss (and its log_softmax_backward), is no output or
// gradient and is never written; dls is read only by the log_softmax_backward; the softmax runs
// over the class dim (1, or 0 for a single sample); nothing writes x between the log_softmax and
// the nodes that now read it.
#include "athanor/graph/passes.h"
#include "athanor/ops/losses.h"
#include "athanor/ops/nn_functional.h"
#include "buffer_uses.h"

namespace ath::graph {

namespace {

bool writes_between(const Graph& g, ValueId v, std::size_t from, std::size_t to) {
  for (std::size_t j = from + 1; j < to; ++j)
    for (const auto& w : g.nodes[j].writes)
      if (g.storage_of(w.first) == g.storage_of(v)) return true;
  return false;
}

}  // namespace

int fuse_log_softmax_nll(Graph& g) {
  const detail::BufferUses u = detail::buffer_uses(g);
  std::vector<bool> keep(g.nodes.size(), true);
  int fused = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& softmax = g.nodes[k];
    if (softmax.op != &op_log_softmax() || softmax.write != WriteKind::None) continue;
    const ValueId x = softmax.inputs[0], ls = softmax.outputs[0];
    const Value& xv = g.value(x);
    const auto rank = static_cast<int64_t>(xv.meta.shape.size());
    int64_t dim = static_cast<const SoftmaxAttrs*>(softmax.attrs.get())->dim;
    if (dim < 0) dim += rank;
    if (rank == 0 || dim != (rank == 1 ? 0 : 1)) continue;
    if (xv.meta.dtype != kFloat32 && xv.meta.dtype != kFloat64) continue;
    if (g.storage_of(ls) != ls || u.pinned[static_cast<std::size_t>(ls)]) continue;
    const std::vector<int32_t>& ls_readers = u.readers[static_cast<std::size_t>(ls)];
    if (ls_readers.empty() || ls_readers.size() > 2) continue;
    const auto nll_at = static_cast<std::size_t>(ls_readers[0]);
    Node& nll = g.nodes[nll_at];
    if (nll.op != &op_nll_loss() || nll.inputs[0] != ls || nll.outputs.size() != 2) continue;
    const auto& na = *static_cast<const NllLossAttrs*>(nll.attrs.get());
    // The backward half, when there is one: dls = nll_loss_backward(...) read only by
    // log_softmax_backward(dls, ls).
    std::size_t nll_back_at = 0, softmax_back_at = 0;
    if (ls_readers.size() == 2) {
      softmax_back_at = static_cast<std::size_t>(ls_readers[1]);
      const Node& sb = g.nodes[softmax_back_at];
      if (sb.op != &op_log_softmax_backward() || sb.inputs[1] != ls ||
          !(*static_cast<const SoftmaxAttrs*>(sb.attrs.get()) ==
            *static_cast<const SoftmaxAttrs*>(softmax.attrs.get())))
        continue;
      const ValueId dls = sb.inputs[0];
      const Value& dv = g.value(dls);
      if (dv.origin != ValueOrigin::Node || g.storage_of(dls) != dls) continue;
      nll_back_at = static_cast<std::size_t>(dv.node);
      const Node& nb = g.nodes[nll_back_at];
      if (nb.op != &op_nll_loss_backward() || nb.inputs[1] != nll.inputs[1] ||
          nb.inputs[2] != nll.inputs[2] || nb.inputs[3] != nll.outputs[1])
        continue;
      if (u.readers[static_cast<std::size_t>(dls)].size() != 1 ||
          u.pinned[static_cast<std::size_t>(dls)])
        continue;
      if (writes_between(g, x, k, nll_back_at)) continue;
    }
    if (writes_between(g, x, k, nll_at)) continue;

    // Forward: the nll node becomes cross_entropy(x, target, weight) -> (loss, lse, tw).
    const CrossEntropyAttrs ca{.reduction = na.reduction,
                               .ignore_index = na.ignore_index,
                               .label_smoothing = 0,
                               .has_weight = na.has_weight};
    Value lse;
    lse.meta = {g.value(nll.inputs[1]).meta.shape, xv.meta.dtype, xv.meta.device};
    lse.strides = contiguous_strides(lse.meta.shape);
    lse.node = static_cast<int32_t>(nll_at);
    lse.output = 1;
    const ValueId lse_id = g.add_value(lse);
    Node& ce = nll;
    ce.op = &op_cross_entropy();
    ce.attrs = std::make_shared<const CrossEntropyAttrs>(ca);
    ce.inputs[0] = x;
    const ValueId tw = ce.outputs[1];
    ce.outputs = {ce.outputs[0], lse_id, tw};
    g.values[static_cast<std::size_t>(tw)].output = 2;
    keep[k] = false;
    if (softmax_back_at != 0) {
      // Backward: the nll_loss_backward node becomes cross_entropy_backward and makes dx.
      Node& nb = g.nodes[nll_back_at];
      const ValueId dx = g.nodes[softmax_back_at].outputs[0];
      nb.op = &op_cross_entropy_backward();
      nb.attrs = std::make_shared<const CrossEntropyAttrs>(ca);
      nb.inputs = {nb.inputs[0], x, ce.inputs[1], ce.inputs[2], lse_id, tw};
      nb.outputs = {dx};
      g.values[static_cast<std::size_t>(dx)].node = static_cast<int32_t>(nll_back_at);
      g.values[static_cast<std::size_t>(dx)].output = 0;
      keep[softmax_back_at] = false;
    }
    ++fused;
  }
  if (fused > 0) rewrite(g, keep, std::vector<ValueId>(g.values.size(), kNoValue));
  return fused;
}

}  // namespace ath::graph
