// Gradient clipping (PyTorch's torch.nn.utils.clip_grad_norm_ / clip_grad_value_; kept in
// optim here). Parameters without a gradient are ignored.
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   optim::SGD opt(model.parameters(), {.lr = 0.1});
//   Tensor loss = model(randn({8, 4})).pow(2).mean();
//   loss.backward();
//   Tensor norm = optim::clip_grad_norm_(model.parameters(), 1.0);   // L2 over all gradients
//   assert(norm.dim() == 0 && norm.item<double>() >= 0);
//   optim::clip_grad_norm_(model.parameters(), 5.0, INFINITY);       // max-abs norm
//   optim::clip_grad_value_(model.parameters(), 0.5);                // clamp to [-0.5, 0.5]
//   opt.step();
#pragma once

#include <vector>

#include "athanor/tensor/tensor.h"

namespace ath::optim {

// Scales every gradient in place by min(1, max_norm / (total_norm + 1e-6)), where total_norm is
// the norm_type-norm of all gradients concatenated, and returns total_norm as a 0-d tensor of
// the gradients' (promoted) dtype (a float32 0 when no parameter has a gradient). Two registry
// ops (grad_norm, clip_grads_by_norm: a tracer sees them) and no host read, unless
// error_if_nonfinite asks for the check. norm_type is > 0, or INFINITY for the largest absolute
// value. Per-gradient norms accumulate in double over a fixed chunking (the result does not depend
// on the thread count); like PyTorch, each gradient's norm, the total and the scale are then
// rounded to the gradients' dtype. A NaN or infinite total is a ValueError with error_if_nonfinite;
// without it the gradients are scaled anyway (becoming NaN), as in PyTorch.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient to [-clip_value, clip_value] in place (NaN stays NaN).
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

}  // namespace ath::optim
