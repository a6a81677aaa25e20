// AccumulateGrad: the backward node at a leaf tensor. It runs the leaf's hooks and adds the
// incoming gradient into `leaf.grad()`.
#pragma once

#include <memory>

#include "athanor/tensor/autograd_meta.h"

namespace ath {

class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  std::string_view name() const override { return "AccumulateGrad"; }
  GradList apply(GradList&& grads) override;
  const std::shared_ptr<TensorImpl>& leaf() const { return leaf_; }

 private:
  std::shared_ptr<TensorImpl> leaf_;  // keeps the leaf alive while the graph is
};

// The edge along which a gradient for `t` flows: its grad_fn, or the (shared) accumulator of a
// leaf that requires grad; invalid when t needs no gradient.
Edge gradient_edge(const Tensor& t);

}  // namespace ath
