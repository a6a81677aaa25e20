// Helpers the graph tests share: an in-place write built by hand (as the tracer records add_),
// and the classification training step that compiled and eager runs are compared on.
#pragma once

#include "athanor/athanor.h"
#include "athanor/graph/graph.h"
#include "athanor/nn/module.h"
#include "athanor/optim/optimizer.h"

namespace ath::graph::test_util {

// Appends `target += source` written into target's buffer (WriteKind::IntoSelf) and returns
// target's new version.
inline ValueId add_into(Graph& g, ValueId target, ValueId source) {
  const AlphaAttrs alpha{};
  Node write{.op = &op_add(), .attrs = op_add().clone_attrs(&alpha), .inputs = {target, source}};
  Value v{.meta = g.value(target).meta, .strides = g.value(target).strides};
  v.node = static_cast<int32_t>(g.nodes.size());
  v.version_of = target;
  v.storage = g.storage_of(target);
  const ValueId next = g.add_value(v);
  write.write = WriteKind::IntoSelf;
  write.writes = {{target, next}};
  g.nodes.push_back(write);
  return next;
}

// zero_grad, cross-entropy of model(x) against y (logits flattened to [-1, classes]), backward,
// optimizer step; returns the loss. The model and optimizer must outlive the step.
inline auto classification_step(nn::Module& model, optim::Optimizer& opt) {
  return [&model, &opt](const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    Tensor out = model(x);
    Tensor loss = cross_entropy(out.reshape({-1, out.size(-1)}), y.reshape({-1}));
    loss.backward();
    opt.step();
    return loss;
  };
}

}  // namespace ath::graph::test_util
