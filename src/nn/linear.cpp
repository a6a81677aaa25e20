#include "athanor/nn/linear.h"

#include <cmath>

#include "athanor/core/error.h"
#include "athanor/nn/init.h"
#include "athanor/ops/ops.h"

namespace ath::nn {

Linear::Linear(LinearOptions o) : Module("Linear"), options(o) {
  ATH_CHECK(o.in >= 0 && o.out >= 0, ValueError,
            "Linear: in and out must be non-negative, got in={} out={}", o.in, o.out);
  weight = register_parameter("weight", empty({o.out, o.in}, o.dtype));
  bias = register_parameter("bias", o.bias ? empty({o.out}, o.dtype) : Tensor());
  reset_parameters();
}

void Linear::reset_parameters() {
  init::kaiming_uniform_(weight, {.a = std::sqrt(5.0)});
  if (bias.defined()) {
    const double bound = options.in > 0 ? 1.0 / std::sqrt(static_cast<double>(options.in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) {
  return bias.defined() ? linear(x, weight, bias) : linear(x, weight);
}

std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", options.in, options.out,
                     options.bias ? "True" : "False");
}

}  // namespace ath::nn
