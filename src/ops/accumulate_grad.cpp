#include "athanor/ops/accumulate_grad.h"

#include "athanor/ops/copy.h"
#include "athanor/ops/pointwise.h"
#include "athanor/tensor/grad_mode.h"

namespace ath {

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {
  output_meta.push_back({leaf_->sizes, leaf_->dtype});
}

GradList AccumulateGrad::apply(GradList&& grads) {
  Tensor g = std::move(grads[0]);
  if (!g.defined()) return {};
  Tensor leaf(leaf_);
  AutogradMeta& m = autograd_meta(leaf);
  for (auto& [id, hook] : m.hooks) {
    Tensor replaced = hook(g);
    if (replaced.defined()) g = replaced;
  }
  if (!m.grad) {
    // Keep the gradient only if nobody else holds it: the same tensor may flow to several
    // leaves (add's backward passes one gradient to both inputs), and an in-place change to one
    // leaf's grad (gradient clipping) must not reach the other.
    bool exclusive = g.impl_ptr().use_count() == 1 && g.impl()->storage.use_count() == 1 &&
                     g.is_contiguous() && !GradMode::is_enabled();
    m.grad = exclusive ? g.impl_ptr() : (GradMode::is_enabled() ? g : g.clone()).impl_ptr();
  } else if (GradMode::is_enabled()) {  // create_graph: accumulate with history
    m.grad = add(Tensor(m.grad), g).impl_ptr();
  } else {
    Tensor acc(m.grad);
    acc.add_(g);  // in place: the buffer a data-parallel bucket may alias stays where it is
  }
  if (!m.post_accumulate_hooks.empty()) {
    // A copy: a hook may remove itself (or others) while they run.
    auto hooks = m.post_accumulate_hooks;
    for (auto& [id, hook] : hooks) hook(leaf);
  }
  return {};
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = autograd_meta_if(t);
  if (m == nullptr || !m->requires_grad) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  std::shared_ptr<Node> acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    m->grad_accumulator = acc;
  }
  return {acc, 0};
}

}  // namespace ath
