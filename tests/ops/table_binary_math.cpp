// Op-table rows: pow, maximum/minimum, fmod/remainder, lerp, clamp.
#include <cmath>
#include <limits>

#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<DType> kAllFloats{kFloat32, kFloat64, kBFloat16, kFloat16};

// torch's integer power: negative exponents give 1, +-1 or 0.
double int_pow(double b, double e) {
  if (e < 0) return b == 1 ? 1 : b == -1 ? (std::fmod(-e, 2) == 1 ? -1 : 1) : 0;
  double r = 1;
  for (int i = 0; i < static_cast<int>(e); ++i) r *= b;
  return r;
}

double py_mod(double a, double b) {  // Python's %: the sign of b
  double m = std::fmod(a, b);
  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}
double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
}
double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
}
double clamp_ref(double v, double lo, double hi) {
  return std::isnan(v) ? v : std::min(std::max(v, lo), hi);
}

Tensor ints64(std::vector<int64_t> v) { return from_vector(v); }

}  // namespace

ATH_OP_ROWS(binary_math) {
  auto pow_ref = binary_ref([](double a, double b) { return std::pow(a, b); });
  return {
      // ---- pow ----
      Row("pow")
          .inputs({In::uniform({3, 4}, 0.3, 2.5), In::uniform({4}, -2, 2)})
          .call([](const Tensors& x) { return pow(x[0], x[1]); })
          .ref(pow_ref)
          .dtypes(kAllFloats)
          .bad("bool tensors", [] { pow(zeros({2}, kBool), zeros({2}, kBool)); })
          .bad("non-broadcastable shapes",
               [] {
                 pow(ones({2, 3}), ones({2}));
               }),
      Row("pow", "strided_zero_dim")
          .inputs({In::uniform({2, 3}, 0.3, 2.5).strided(), In::uniform({}, 0.5, 2)})
          .call([](const Tensors& x) { return pow(x[0], x[1]); })
          .ref(pow_ref),
      Row("pow", "zero_size")
          .inputs({In::positive({0, 2}), In::randn({2})})
          .call([](const Tensors& x) { return pow(x[0], x[1]); })
          .ref(pow_ref),
      Row("pow", "int")
          .inputs({In::ints({3, 4}, -4, 5), In::ints({4}, 0, 6)})
          .call([](const Tensors& x) { return pow(x[0], x[1]); })
          .ref(binary_ref(int_pow))
          .exact(),
      Row("pow", "int_negative_exponent")
          .inputs({In::ints({3, 4}, -2, 3, kInt32), In::ints({4}, -3, 0, kInt32)})
          .call([](const Tensors& x) { return pow(x[0], x[1]); })
          .ref(binary_ref(int_pow))
          .exact(),
      Row("pow", "int_base_float_exponent")  // promotes to float
          .inputs({In::ints({4}, 1, 5), In::uniform({4}, -1, 2)})
          .call([](const Tensors& x) { return pow(x[0], x[1]); })
          .ref(pow_ref),
      Row("pow", "scalar_base")
          .inputs({In::randn({2, 3})})
          .call([](const Tensors& x) { return pow(2.5, x[0]); })
          .ref(unary_ref([](double e) { return std::pow(2.5, e); }))
          .dtypes(kAllFloats),
      Row("pow", "int_scalar_base")
          .inputs({In::ints({5}, 0, 10, kInt32)})
          .call([](const Tensors& x) { return pow(3, x[0]); })
          .ref(unary_ref([](double e) { return std::pow(3, e); }))
          .exact(),
      Row("pow", "zero_base")  // 0^b: gradient w.r.t. b is 0 for b >= 0 (log is not taken)
          .inputs({In::fixed({3}, {0.0, 0.0, 2.0}), In::fixed({3}, {2.0, 1.5, 1.5})})
          .call([](const Tensors& x) { return pow(x[0], x[1]); })
          .ref(pow_ref)
          .no_gradcheck(),
      Row("pow_tensor_scalar", "square")
          .inputs({In::randn({3, 4}).strided()})
          .call([](const Tensors& x) { return pow(x[0], 2); })
          .ref(unary_ref([](double v) { return v * v; }))
          .dtypes(kAllFloats)
          .bad("negative integer exponent of an integer tensor", [] { pow(ones({2}, kInt64), -1); })
          .bad("bool ** bool", [] { pow(ones({2}, kBool), true); }),
      Row("pow_tensor_scalar", "cube")
          .inputs({In::randn({5})})
          .call([](const Tensors& x) { return pow(x[0], 3); })
          .ref(unary_ref([](double v) { return v * v * v; })),
      Row("pow_tensor_scalar", "half")
          .inputs({In::positive({5})})
          .call([](const Tensors& x) { return x[0].pow(0.5); })
          .ref(unary_ref([](double v) { return std::sqrt(v); }))
          .dtypes(kAllFloats),
      Row("pow_tensor_scalar", "minus_one")
          .inputs({In::positive({5})})
          .call([](const Tensors& x) { return pow(x[0], -1); })
          .ref(unary_ref([](double v) { return 1 / v; })),
      Row("pow_tensor_scalar", "minus_two_int_exponent")
          .inputs({In::positive({5})})
          .call([](const Tensors& x) { return pow(x[0], -2); })
          .ref(unary_ref([](double v) { return 1 / (v * v); })),
      Row("pow_tensor_scalar", "general")
          .inputs({In::positive({2, 3})})
          .call([](const Tensors& x) { return pow(x[0], 2.7); })
          .ref(unary_ref([](double v) { return std::pow(v, 2.7); }))
          .dtypes(kAllFloats),
      Row("pow_tensor_scalar", "zero_exponent")
          .inputs({In::randn({4})})
          .call([](const Tensors& x) { return pow(x[0], 0); })
          .ref(unary_ref([](double) { return 1.0; })),
      Row("pow_tensor_scalar", "zero_dim")
          .inputs({In::positive({})})
          .call([](const Tensors& x) { return pow(x[0], 1.5); })
          .ref(unary_ref([](double v) { return std::pow(v, 1.5); })),
      Row("pow_tensor_scalar", "int")
          .inputs({In::ints({6}, -5, 5, kInt32)})
          .call([](const Tensors& x) { return pow(x[0], 3); })
          .ref(unary_ref([](double v) { return v * v * v; }))
          .exact(),
      Row("pow_tensor_scalar", "int_float_exponent")  // int tensor ** 2.5 is float32
          .inputs({In::ints({6}, 0, 9)})
          .call([](const Tensors& x) { return pow(x[0], 2.5); })
          .ref(unary_ref([](double v) { return std::pow(v, 2.5); })),
      Row("pow_tensor_scalar", "bool_base")  // bool ** 2 computes in int64
          .inputs({In::bools({6})})
          .call([](const Tensors& x) { return pow(x[0], 2); })
          .ref(unary_ref([](double v) { return v; }))
          .exact(),

      // ---- maximum, minimum ----
      Row("maximum")
          .inputs({In::randn({3, 4}), In::randn({3, 1})})
          .call([](const Tensors& x) { return maximum(x[0], x[1]); })
          .ref(binary_ref(nan_max))
          .dtypes(kAllFloats)
          .bad("non-broadcastable shapes", [] { maximum(ones({2}), ones({3})); }),
      Row("maximum", "nan")
          .inputs(
              {In::fixed({4}, {kNaN, 1.0, kNaN, -kInf}), In::fixed({4}, {1.0, kNaN, kNaN, 2.0})})
          .call([](const Tensors& x) { return maximum(x[0], x[1]); })
          .ref(binary_ref(nan_max))
          .dtypes(kAllFloats)
          .no_gradcheck(),
      Row("maximum", "int_float_promotion")
          .inputs({In::ints({2, 3}, -3, 3, kInt32), In::randn({3}).strided()})
          .call([](const Tensors& x) { return maximum(x[0], x[1]); })
          .ref(binary_ref(nan_max)),
      Row("maximum", "bool")
          .inputs({In::bools({4}), In::bools({4})})
          .call([](const Tensors& x) { return maximum(x[0], x[1]); })
          .ref(binary_ref(nan_max))
          .exact(),
      Row("maximum", "zero_dim_and_empty")
          .inputs({In::randn({}), In::randn({0, 2})})
          .call([](const Tensors& x) { return maximum(x[0], x[1]); })
          .ref(binary_ref(nan_max)),
      Row("minimum")
          .inputs({In::randn({2, 3}).strided(), In::randn({3})})
          .call([](const Tensors& x) { return minimum(x[0], x[1]); })
          .ref(binary_ref(nan_min))
          .dtypes(kAllFloats)
          .bad("non-broadcastable shapes", [] { minimum(ones({2}), ones({3})); }),
      Row("minimum", "nan")
          .inputs({In::fixed({3}, {kNaN, 1.0, kInf}), In::fixed({3}, {1.0, kNaN, 2.0})})
          .call([](const Tensors& x) { return minimum(x[0], x[1]); })
          .ref(binary_ref(nan_min))
          .no_gradcheck(),
      Row("minimum", "int")
          .inputs({In::ints({5}, -9, 9), In::ints({5}, -9, 9, kUInt8)})
          .call([](const Tensors& x) { return minimum(x[0], x[1]); })
          .ref(binary_ref(nan_min))
          .exact(),

      // ---- fmod, remainder ----
      Row("fmod")
          .inputs({In::uniform({3, 4}, -6, 6), In::uniform({4}, 0.7, 2)})
          .call([](const Tensors& x) { return fmod(x[0], x[1]); })
          .ref(binary_ref([](double a, double b) { return std::fmod(a, b); }))
          .dtypes(kAllFloats)
          .bad("integer modulo by zero",
               [] {
                 fmod(ints64({1, 2}), ints64({1, 0}));
               })
          .bad("integer modulo by a zero scalar",
               [] {
                 fmod(ints64({1, 2}), 0);
               })
          .bad("bool tensors", [] { fmod(zeros({2}, kBool), ones({2}, kBool)); }),
      Row("fmod", "negative_divisor")
          .inputs({In::uniform({5}, -6, 6).strided(), In::uniform({}, -2, -0.7)})
          .call([](const Tensors& x) { return fmod(x[0], x[1]); })
          .ref(binary_ref([](double a, double b) { return std::fmod(a, b); })),
      Row("fmod", "int")
          .inputs({In::ints({3, 4}, -20, 20, kInt32), In::ints({4}, 1, 6, kInt32)})
          .call([](const Tensors& x) { return fmod(x[0], neg(x[1])); })
          .ref(binary_ref([](double a, double b) { return std::fmod(a, -b); }))
          .exact(),
      Row("fmod", "scalar")
          .inputs({In::uniform({4}, -5, 5)})
          .call([](const Tensors& x) { return fmod(x[0], 1.5); })
          .ref(unary_ref([](double a) { return std::fmod(a, 1.5); })),
      Row("fmod", "float_by_zero")  // floats give NaN, as torch
          .inputs({In::fixed({2}, {1.0, -1.0})})
          .call([](const Tensors& x) { return fmod(x[0], 0.0); })
          .ref(unary_ref([](double) { return kNaN; }))
          .no_gradcheck(),
      Row("remainder")
          .inputs({In::uniform({3, 4}, -6, 6), In::uniform({3, 1}, -2, -0.7)})
          .call([](const Tensors& x) { return remainder(x[0], x[1]); })
          .ref(binary_ref(py_mod))
          .dtypes(kAllFloats)
          .bad("integer modulo by zero", [] { remainder(ints64({3}), ints64({0})); })
          .bad("non-broadcastable shapes", [] { remainder(ones({2}), ones({3})); }),
      Row("remainder", "positive_divisor")
          .inputs({In::uniform({6}, -6, 6), In::uniform({6}, 0.7, 2)})
          .call([](const Tensors& x) { return remainder(x[0], x[1]); })
          .ref(binary_ref(py_mod)),
      Row("remainder", "int")
          .inputs({In::ints({4, 3}, -20, 20), In::ints({3}, -5, 0)})
          .call([](const Tensors& x) { return remainder(x[0], x[1]); })
          .ref(binary_ref(py_mod))
          .exact(),
      Row("remainder", "int_scalar")
          .inputs({In::ints({7}, -20, 20, kInt32)})
          .call([](const Tensors& x) { return remainder(x[0], 3); })
          .ref(unary_ref([](double a) { return py_mod(a, 3); }))
          .exact(),
      Row("remainder", "uint8")
          .inputs({In::ints({5}, 0, 250, kUInt8), In::ints({5}, 1, 9, kUInt8)})
          .call([](const Tensors& x) { return remainder(x[0], x[1]); })
          .ref(binary_ref(py_mod))
          .exact(),
      Row("remainder", "int_float_scalar")  // int tensor % 2.5 is float32
          .inputs({In::ints({5}, -9, 9)})
          .call([](const Tensors& x) { return remainder(x[0], 2.5); })
          .ref(unary_ref([](double a) { return py_mod(a, 2.5); })),

      // ---- lerp ----
      Row("lerp_scalar")
          .inputs({In::randn({3, 4}), In::randn({4})})
          .call([](const Tensors& x) { return lerp(x[0], x[1], 0.3); })
          .ref(binary_ref([](double a, double b) { return a + 0.3 * (b - a); }))
          .dtypes(kAllFloats)
          .bad("integer tensors", [] { lerp(ones({2}, kInt64), ones({2}, kInt64), 0.5); })
          .bad("mixed dtypes", [] { lerp(ones({2}), ones({2}, kFloat64), 0.5); }),
      Row("lerp_scalar", "upper_half")
          .inputs({In::randn({2, 3}).strided(), In::randn({2, 1})})
          .call([](const Tensors& x) { return lerp(x[0], x[1], 0.8); })
          .ref(binary_ref([](double a, double b) { return a + 0.8 * (b - a); })),
      Row("lerp_scalar", "zero_size")
          .inputs({In::randn({0}), In::randn({})})
          .call([](const Tensors& x) { return lerp(x[0], x[1], 0.5); })
          .ref(binary_ref([](double a, double b) { return a + 0.5 * (b - a); })),
      Row("lerp")
          .inputs({In::randn({3, 4}), In::randn({3, 1}), In::uniform({4}, -0.5, 1.5)})
          .call([](const Tensors& x) { return lerp(x[0], x[1], x[2]); })
          .ref(ternary_ref([](double a, double b, double w) { return a + w * (b - a); }))
          .dtypes(kAllFloats)
          .bad("weight of another dtype", [] { lerp(ones({2}), ones({2}), ones({2}, kFloat64)); })
          .bad("non-broadcastable weight", [] { lerp(ones({2}), ones({2}), ones({3})); }),
      Row("lerp", "strided_zero_dim")
          .inputs({In::randn({2, 3}).strided(), In::randn({}), In::uniform({2, 3}, 0, 1).strided()})
          .call([](const Tensors& x) { return lerp(x[0], x[1], x[2]); })
          .ref(ternary_ref([](double a, double b, double w) { return a + w * (b - a); })),

      // ---- clamp ----
      Row("clamp")
          .inputs({In::randn({3, 4}).strided()})
          .call([](const Tensors& x) { return clamp(x[0], -0.5, 0.5); })
          .ref(unary_ref([](double v) { return clamp_ref(v, -0.5, 0.5); }))
          .dtypes(kAllFloats)
          .bad("no bounds", [] { clamp(ones({2}), std::optional<Scalar>{}, std::nullopt); })
          .bad("no tensor bounds", [] { clamp(ones({2}), std::optional<Tensor>{}, std::nullopt); })
          .bad("bool tensor", [] { clamp(ones({2}, kBool), false, true); }),
      Row("clamp", "min_only")
          .inputs({In::randn({5})})
          .call([](const Tensors& x) { return clamp_min(x[0], 0.25); })
          .ref(unary_ref([](double v) { return clamp_ref(v, 0.25, kInf); })),
      Row("clamp", "max_only")
          .inputs({In::randn({2, 3})})
          .call([](const Tensors& x) { return clamp_max(x[0], -0.25); })
          .ref(unary_ref([](double v) { return clamp_ref(v, -kInf, -0.25); }))
          .dtypes(kAllFloats),
      Row("clamp", "special")  // NaN propagates; +-inf stay outside a one-sided clamp
          .inputs({In::fixed({4}, {kNaN, -kInf, kInf, 0.0})})
          .call([](const Tensors& x) { return clamp_min(x[0], -1.0); })
          .ref(unary_ref([](double v) { return clamp_ref(v, -1, kInf); }))
          .dtypes(kAllFloats)
          .no_gradcheck(),
      Row("clamp", "min_above_max")  // torch: everything becomes max
          .inputs({In::randn({4})})
          .call([](const Tensors& x) { return clamp(x[0], 3.0, 1.0); })
          .ref(unary_ref([](double) { return 1.0; })),
      Row("clamp", "int")
          .inputs({In::ints({8}, -10, 10, kInt32)})
          .call([](const Tensors& x) { return clamp(x[0], -3, 4); })
          .ref(unary_ref([](double v) { return clamp_ref(v, -3, 4); }))
          .exact(),
      Row("clamp", "int_float_bound")  // promotes to float32
          .inputs({In::ints({6}, -5, 5)})
          .call([](const Tensors& x) { return clamp(x[0], -1.5, std::nullopt); })
          .ref(unary_ref([](double v) { return clamp_ref(v, -1.5, kInf); })),
      Row("clamp", "bool_int_bound")  // bool with an int bound computes in int64
          .inputs({In::bools({6})})
          .call([](const Tensors& x) { return clamp(x[0], std::nullopt, 0); })
          .ref(unary_ref([](double v) { return std::min(v, 0.0); }))
          .exact(),
      Row("clamp", "tensor_bounds")
          .inputs({In::randn({3, 4}), In::uniform({4}, -1, -0.2), In::uniform({3, 1}, 0.2, 1)})
          .call([](const Tensors& x) { return clamp(x[0], x[1], x[2]); })
          .ref(ternary_ref([](double v, double lo, double hi) { return clamp_ref(v, lo, hi); }))
          .dtypes(kAllFloats),
      Row("clamp", "tensor_min_only")
          .inputs({In::ints({2, 3}, -5, 5, kInt32), In::randn({3})})
          .call([](const Tensors& x) { return clamp(x[0], x[1]); })
          .ref(binary_ref([](double v, double lo) { return clamp_ref(v, lo, kInf); })),
      Row("clamp", "tensor_max_only")
          .inputs({In::randn({4}).strided(), In::randn({})})
          .call([](const Tensors& x) { return clamp(x[0], std::nullopt, x[1]); })
          .ref(binary_ref([](double v, double hi) { return clamp_ref(v, -kInf, hi); })),
  };
}

}  // namespace ath::testing
