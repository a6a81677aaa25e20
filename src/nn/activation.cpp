#include "athanor/nn/activation.h"

#include "athanor/core/error.h"
#include "athanor/ops/ops.h"
#include "repr.h"

namespace ath::nn {

namespace {

// PyTorch's _get_softmax_dim, for a Softmax built without a dim.
int64_t softmax_dim(const std::optional<int64_t>& dim, const Tensor& x) {
  if (dim) return *dim;
  return x.dim() == 0 || x.dim() == 1 || x.dim() == 3 ? 0 : 1;
}

std::string dim_repr(const std::optional<int64_t>& dim) {
  return dim ? fmt::format("dim={}", *dim) : "dim=None";
}

}  // namespace

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

Tensor LeakyReLU::forward(const Tensor& x) { return leaky_relu(x, options.negative_slope); }
std::string LeakyReLU::extra_repr() const {
  return "negative_slope=" + detail::py_float(options.negative_slope);
}

Tensor ELU::forward(const Tensor& x) { return elu(x, options.alpha); }
std::string ELU::extra_repr() const { return "alpha=" + detail::py_float(options.alpha); }

Tensor SELU::forward(const Tensor& x) { return selu(x); }

Tensor GELU::forward(const Tensor& x) { return gelu(x, options.approximate); }
std::string GELU::extra_repr() const {
  return options.approximate == GeluApprox::Tanh ? "approximate='tanh'" : "approximate='none'";
}

Tensor SiLU::forward(const Tensor& x) { return silu(x); }
Tensor Mish::forward(const Tensor& x) { return mish(x); }

Tensor Softplus::forward(const Tensor& x) { return softplus(x, options.beta, options.threshold); }
// PyTorch's defaults are the ints 1 and 20, which Python prints without ".0": plain {} matches
// them and prints fractional values as Python does.
std::string Softplus::extra_repr() const {
  return fmt::format("beta={}, threshold={}", options.beta, options.threshold);
}

Hardtanh::Hardtanh(HardtanhOptions o) : Module("Hardtanh"), options(o) {
  ATH_CHECK(o.max_val > o.min_val, ValueError,
            "Hardtanh: max_val ({}) must be greater than min_val ({})", o.max_val, o.min_val);
}
Tensor Hardtanh::forward(const Tensor& x) { return hardtanh(x, options.min_val, options.max_val); }
std::string Hardtanh::extra_repr() const {
  return fmt::format("min_val={}, max_val={}", detail::py_float(options.min_val),
                     detail::py_float(options.max_val));
}

Tensor Hardsigmoid::forward(const Tensor& x) { return hardsigmoid(x); }
Tensor Hardswish::forward(const Tensor& x) { return hardswish(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }

Tensor Softmax::forward(const Tensor& x) { return softmax(x, softmax_dim(options.dim, x)); }
std::string Softmax::extra_repr() const { return dim_repr(options.dim); }

Tensor LogSoftmax::forward(const Tensor& x) { return log_softmax(x, softmax_dim(options.dim, x)); }
std::string LogSoftmax::extra_repr() const { return dim_repr(options.dim); }

}  // namespace ath::nn
