// gradcheck: compares the gradients autograd computes with central finite differences, in
// float64, for every output element against every input element.
//
//   Tensor x = randn({3, 4}, {.dtype = kFloat64}).requires_grad_();
//   auto r = gradcheck([](const std::vector<Tensor>& in) { return std::vector{in[0].tanh()}; },
//                      {x});
//   assert(r.ok);   // else r.message names the first mismatch
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "athanor/tensor/tensor.h"

namespace ath {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // the first mismatch: output, input, element, both values
  double max_abs_error = 0;
};

using GradcheckFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Inputs that require grad must be float64; others (indices, masks) are passed through.
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          GradcheckOptions options = {});

}  // namespace ath
