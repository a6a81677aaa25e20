#include "athanor/nn/bilinear.h"

#include <cmath>

#include "athanor/core/error.h"
#include "athanor/nn/init.h"
#include "athanor/ops/ops.h"
#include "repr.h"

namespace ath::nn {

Bilinear::Bilinear(BilinearOptions o) : Module("Bilinear"), options(o) {
  ATH_CHECK(o.in1 >= 0 && o.in2 >= 0 && o.out >= 0, ValueError,
            "Bilinear: in1, in2 and out must be non-negative, got in1={} in2={} out={}", o.in1,
            o.in2, o.out);
  weight = register_parameter("weight", empty({o.out, o.in1, o.in2}, o.dtype));
  bias = register_parameter("bias", o.bias ? empty({o.out}, o.dtype) : Tensor());
  reset_parameters();
}

// PyTorch's Bilinear.reset_parameters: both from U(-1/sqrt(in1), 1/sqrt(in1)).
void Bilinear::reset_parameters() {
  const double bound = options.in1 > 0 ? 1.0 / std::sqrt(static_cast<double>(options.in1)) : 0.0;
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

// y[b, o] = sum_ij x1[b, i] W[o, i, j] x2[b, j]: one GEMM against W laid out [in1, out * in2],
// then a batched matrix-vector product with x2 (B x [out, in2] @ [in2, 1]).
Tensor Bilinear::forward(const Tensor& x1, const Tensor& x2) {
  const BilinearOptions& o = options;
  ATH_CHECK(x1.dim() >= 1 && x1.dim() == x2.dim(), ShapeError,
            "Bilinear: inputs must have the same number of dims (>= 1), got shapes {} and {}",
            ath::to_string(x1.shape()), ath::to_string(x2.shape()));
  ATH_CHECK(x1.size(-1) == o.in1 && x2.size(-1) == o.in2, ShapeError,
            "Bilinear: expected inputs [*, {}] and [*, {}], got shapes {} and {}", o.in1, o.in2,
            ath::to_string(x1.shape()), ath::to_string(x2.shape()));
  Shape lead(x1.shape().begin(), x1.shape().end() - 1);
  ATH_CHECK(lead == Shape(x2.shape().begin(), x2.shape().end() - 1), ShapeError,
            "Bilinear: inputs must agree in all but the last dim, got shapes {} and {}",
            ath::to_string(x1.shape()), ath::to_string(x2.shape()));
  int64_t rows = 1;
  for (int64_t d : lead) rows *= d;
  Tensor a = x1.reshape({rows, o.in1});
  Tensor b = x2.reshape({rows, o.in2, 1});
  Tensor w = weight.permute({1, 0, 2}).reshape({o.in1, o.out * o.in2});
  Tensor y = bmm(matmul(a, w).reshape({rows, o.out, o.in2}), b).reshape({rows, o.out});
  if (bias.defined()) y = y + bias;
  Shape out_shape = lead;
  out_shape.push_back(o.out);
  return y.reshape(out_shape);
}

std::string Bilinear::extra_repr() const {
  return fmt::format("in1_features={}, in2_features={}, out_features={}, bias={}", options.in1,
                     options.in2, options.out, detail::py_bool(options.bias));
}

}  // namespace ath::nn
