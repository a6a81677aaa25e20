// Op-table rows: relu, leaky_relu, elu/selu, gelu (and its fused backward), silu, mish, softplus,
// hardtanh, hardsigmoid, hardswish.
#include <cmath>
#include <limits>
#include <numbers>

#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const std::vector<DType> kAllFloats{kFloat32, kFloat64, kBFloat16, kFloat16};

double sigmoid_d(double v) { return 1 / (1 + std::exp(-v)); }
double softplus_d(double v, double beta, double threshold) {
  return v * beta > threshold ? v : std::log(1 + std::exp(v * beta)) / beta;
}
double elu_d(double v, double alpha, double scale) {
  return v > 0 ? scale * v : scale * alpha * (std::exp(v) - 1);
}
double gelu_d(double v) { return v * 0.5 * (1 + std::erf(v / std::sqrt(2.0))); }
// g * (Phi(x) + x * phi(x))
double gelu_backward_d(double g, double x) {
  return g * (0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
              x * std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi));
}
double gelu_tanh_d(double v) {
  const double k = std::sqrt(2 / std::numbers::pi);
  return 0.5 * v * (1 + std::tanh(k * (v + 0.044715 * v * v * v)));
}
double relu6(double v) { return std::min(std::max(v, 0.0), 6.0); }

// A float-only activation refuses integer tensors, naming itself.
template <class F>
std::function<void()> int_input(F f) {
  return [f] { f(ones({2}, kInt64)); };
}

}  // namespace

ATH_OP_ROWS(activations) {
  auto relu_ref = unary_ref([](double v) { return std::isnan(v) ? v : std::max(v, 0.0); });
  return {
      Row("relu")
          .inputs({In::randn({3, 4}).strided()})
          .call([](const Tensors& x) { return relu(x[0]); })
          .ref(relu_ref)
          .dtypes(kAllFloats)
          .bad("bool input", [] { relu(ones({2}, kBool)); }),
      Row("relu", "method_zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return x[0].relu(); })
          .ref(relu_ref),
      Row("relu", "nan_zero_size")
          .inputs({In::fixed({3}, {kNaN, -1.0, 2.0})})
          .call([](const Tensors& x) { return relu(x[0]); })
          .ref(relu_ref)
          .dtypes(kAllFloats)
          .no_gradcheck(),
      Row("relu", "int")
          .inputs({In::ints({7}, -5, 5, kInt32)})
          .call([](const Tensors& x) { return relu(x[0]); })
          .ref(relu_ref)
          .exact(),
      Row("leaky_relu")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return leaky_relu(x[0], 0.2); })
          .ref(unary_ref([](double v) { return v > 0 ? v : 0.2 * v; }))
          .dtypes(kAllFloats)
          .bad("integer input", int_input([](const Tensor& t) { return leaky_relu(t); })),
      Row("leaky_relu", "default_slope_strided")
          .inputs({In::randn({2, 3}).strided()})
          .call([](const Tensors& x) { return leaky_relu(x[0]); })
          .ref(unary_ref([](double v) { return v > 0 ? v : 0.01 * v; })),
      Row("elu")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return elu(x[0], 1.5); })
          .ref(unary_ref([](double v) { return elu_d(v, 1.5, 1.0); }))
          .dtypes(kAllFloats)
          .bad("integer input", int_input([](const Tensor& t) { return elu(t); })),
      Row("elu", "selu")
          .inputs({In::randn({2, 3}).strided()})
          .call([](const Tensors& x) { return selu(x[0]); })
          .ref(unary_ref([](double v) { return elu_d(v, kSeluAlpha, kSeluScale); }))
          .dtypes(kAllFloats)
          .bad("integer input", int_input([](const Tensor& t) { return selu(t); })),
      Row("elu", "large_inputs")  // exp of large x must not leak inf/NaN into the gradient
          .inputs({In::fixed({4}, {-80.0, -3.0, 50.0, 700.0})})
          .call([](const Tensors& x) { return elu(x[0]); })
          .ref(unary_ref([](double v) { return elu_d(v, 1.0, 1.0); })),
      Row("gelu")
          .inputs({In::uniform({3, 4}, -4, 4)})
          .call([](const Tensors& x) { return gelu(x[0]); })
          .ref(unary_ref(gelu_d))
          .dtypes(kAllFloats)
          .bad("integer input", int_input([](const Tensor& t) { return gelu(t); })),
      // Long enough for the vectorized loop, through the erf polynomial's switch at |x| 1.3
      // and its tails.
      Row("gelu", "wide_range_strided")
          .inputs({In::uniform({5, 40}, -9, 9).strided()})
          .call([](const Tensors& x) { return gelu(x[0]); })
          .ref(unary_ref(gelu_d))
          .dtypes(kAllFloats),
      Row("gelu", "nan_inf")
          .inputs({In::fixed({4}, {kNaN, INFINITY, -20.0, 0.0})})
          .call([](const Tensors& x) { return gelu(x[0]); })
          .ref(unary_ref([](double v) { return std::isinf(v) ? v : gelu_d(v); }))
          .no_gradcheck(),
      Row("gelu_backward")
          .inputs({In::randn({4, 37}), In::uniform({4, 37}, -6, 6)})
          .call([](const Tensors& x) {
            return call1(op_gelu_backward(), {x[0], x[1]});
          })
          .ref(binary_ref(gelu_backward_d))
          .dtypes({kFloat32, kFloat64, kBFloat16})
          .bad("tanh approximation",
               [] {
                 call1(op_gelu_backward(), {ones({2}), ones({2})},
                       GeluAttrs{.approximate = GeluApprox::Tanh});
               })
          .bad("shape mismatch",
               [] {
                 call1(op_gelu_backward(), {ones({2}), ones({3})});
               })
          .bad("integer inputs",
               [] {
                 call1(op_gelu_backward(), {ones({2}, kInt64), ones({2}, kInt64)});
               }),
      Row("gelu_backward", "strided")
          .inputs({In::randn({3, 5}).strided(), In::uniform({3, 5}, -3, 3).strided()})
          .call([](const Tensors& x) {
            return call1(op_gelu_backward(), {x[0], x[1]});
          })
          .ref(binary_ref(gelu_backward_d)),
      Row("gelu", "tanh")
          .inputs({In::uniform({3, 4}, -4, 4).strided()})
          .call([](const Tensors& x) { return gelu(x[0], GeluApprox::Tanh); })
          .ref(unary_ref(gelu_tanh_d))
          .dtypes(kAllFloats),
      Row("gelu", "zero_dim")
          .inputs({In::randn({})})
          .call([](const Tensors& x) { return gelu(x[0], GeluApprox::Tanh); })
          .ref(unary_ref(gelu_tanh_d)),
      Row("silu")
          .inputs({In::uniform({3, 4}, -6, 6)})
          .call([](const Tensors& x) { return silu(x[0]); })
          .ref(unary_ref([](double v) { return v * sigmoid_d(v); }))
          .dtypes(kAllFloats)
          .bad("integer input", int_input([](const Tensor& t) { return silu(t); })),
      Row("silu", "zero_size")
          .inputs({In::randn({0, 4})})
          .call([](const Tensors& x) { return silu(x[0]); })
          .ref(unary_ref([](double v) { return v * sigmoid_d(v); })),
      Row("mish")
          .inputs({In::uniform({3, 4}, -5, 5)})
          .call([](const Tensors& x) { return mish(x[0]); })
          .ref(unary_ref([](double v) { return v * std::tanh(std::log1p(std::exp(v))); }))
          .dtypes(kAllFloats)
          .bad("integer input", int_input([](const Tensor& t) { return mish(t); })),
      Row("mish", "large_inputs")
          .inputs({In::fixed({3}, {-100.0, 30.0, 100.0})})
          .call([](const Tensors& x) { return mish(x[0]); })
          .ref(unary_ref([](double v) { return v * std::tanh(std::log1p(std::exp(v))); })),
      Row("softplus")
          .inputs({In::uniform({3, 4}, -4, 4)})
          .call([](const Tensors& x) { return softplus(x[0]); })
          .ref(unary_ref([](double v) { return softplus_d(v, 1, 20); }))
          .dtypes(kAllFloats)
          .bad("integer input", int_input([](const Tensor& t) { return softplus(t); })),
      Row("softplus", "beta_threshold")  // linear above x = 1.5
          .inputs({In::uniform({2, 5}, -3, 3).strided()})
          .call([](const Tensors& x) { return softplus(x[0], 2.0, 3.0); })
          .ref(unary_ref([](double v) { return softplus_d(v, 2, 3); }))
          .dtypes(kAllFloats)
          .tol(1e-5, 1e-5),
      Row("hardtanh")
          .inputs({In::randn({3, 4})})
          .call([](const Tensors& x) { return hardtanh(x[0], -0.5, 0.8); })
          .ref(unary_ref([](double v) { return std::min(std::max(v, -0.5), 0.8); }))
          .dtypes(kAllFloats)
          .bad("bool input", [] { hardtanh(ones({2}, kBool)); })
          .bad("uint8 with a negative bound", [] { hardtanh(ones({2}, kUInt8)); }),
      Row("hardtanh", "default_bounds")
          .inputs({In::uniform({2, 3}, -3, 3).strided()})
          .call([](const Tensors& x) { return hardtanh(x[0]); })
          .ref(unary_ref([](double v) { return std::min(std::max(v, -1.0), 1.0); })),
      Row("hardtanh", "int_truncated_bounds")  // bounds -2.5, 2.5 act as -2, 2 on integers
          .inputs({In::ints({8}, -5, 5)})
          .call([](const Tensors& x) { return hardtanh(x[0], -2.5, 2.5); })
          .ref(unary_ref([](double v) { return std::min(std::max(v, -2.0), 2.0); }))
          .exact(),
      Row("hardtanh", "uint8")
          .inputs({In::ints({6}, 0, 20, kUInt8)})
          .call([](const Tensors& x) { return hardtanh(x[0], 3, 9); })
          .ref(unary_ref([](double v) { return std::min(std::max(v, 3.0), 9.0); }))
          .exact(),
      Row("hardsigmoid")
          .inputs({In::uniform({3, 4}, -5, 5)})
          .call([](const Tensors& x) { return hardsigmoid(x[0]); })
          .ref(unary_ref([](double v) { return relu6(v + 3) / 6; }))
          .dtypes(kAllFloats)
          .bad("integer input", int_input([](const Tensor& t) { return hardsigmoid(t); })),
      Row("hardsigmoid", "zero_dim")
          .inputs({In::uniform({}, -2, 2)})
          .call([](const Tensors& x) { return hardsigmoid(x[0]); })
          .ref(unary_ref([](double v) { return relu6(v + 3) / 6; })),
      Row("hardswish")
          .inputs({In::uniform({3, 4}, -5, 5).strided()})
          .call([](const Tensors& x) { return hardswish(x[0]); })
          .ref(unary_ref([](double v) { return v * relu6(v + 3) / 6; }))
          .dtypes(kAllFloats)
          .bad("integer input", int_input([](const Tensor& t) { return hardswish(t); })),
      Row("hardswish", "kinks")
          .inputs({In::fixed({6}, {-4.0, -3.0, -1.0, 0.0, 3.0, 4.0})})
          .call([](const Tensors& x) { return hardswish(x[0]); })
          .ref(unary_ref([](double v) { return v * relu6(v + 3) / 6; }))
          .dtypes(kAllFloats)
          .no_gradcheck(),
      Row("hardswish", "zero_dim")
          .inputs({In::uniform({}, -2.5, 2.5)})
          .call([](const Tensors& x) { return hardswish(x[0]); })
          .ref(unary_ref([](double v) { return v * relu6(v + 3) / 6; })),
  };
}

}  // namespace ath::testing
