// The products autocast sends to low precision (matmul, linear, conv2d: forward and both
// backward passes) in bfloat16 and float16, against float64 math on the same operand values.
// Their contract is low-precision operands, float32 accumulation and one rounding of each
// result, whichever way the host runs them (oneDNN's bfloat16 kernels, or float32 kernels on
// exact copies: dnnl_utils.h's bf16_products_native), so each result is within a few roundings
// of the dtype (2^-8 for bfloat16, 2^-11 for float16) of the reference, relative to its scale.
#include <gtest/gtest.h>

#include <functional>

#include "athanor/athanor.h"

namespace ath::testing {
namespace {

double rel_error(const Tensor& got, const Tensor& want) {
  const double scale = max(want.abs()).item<double>();
  return max((got.to(kFloat64) - want).abs()).item<double>() / scale;
}

// f's output and the gradients of sum(f(inputs) * w) for every input, in `dt` and in float64 on
// the same values.
void expect_matches_float64(DType dt, const std::vector<Tensor>& inputs,
                            const std::function<Tensor(const std::vector<Tensor>&)>& f,
                            double tol) {
  std::vector<Tensor> low, ref;
  for (const Tensor& t : inputs) {
    low.push_back(t.to(dt).requires_grad_());
    ref.push_back(t.to(dt).to(kFloat64).requires_grad_());
  }
  Tensor y = f(low), y64 = f(ref);
  ASSERT_EQ(y.dtype(), dt);
  EXPECT_LT(rel_error(y, y64), tol) << "forward";
  Tensor w = randn(y.shape());
  (y * w.to(dt)).sum().backward();
  (y64 * w.to(dt).to(kFloat64)).sum().backward();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(low[i].grad().dtype(), dt);
    EXPECT_LT(rel_error(low[i].grad(), ref[i].grad()), tol) << "gradient of input " << i;
  }
}

TEST(LowPrecisionProducts, MatchFloat64OnTheSameValues) {
  for (DType dt : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    // Output rounding (half an ulp) plus the gradient's rounded operands: a few ulps.
    const double tol = dt == kBFloat16 ? 4.0 / 256 : 4.0 / 2048;
    manual_seed(11);
    expect_matches_float64(
        dt, {randn({33, 70}), randn({70, 19})}, [](const auto& in) { return matmul(in[0], in[1]); },
        tol);
    expect_matches_float64(
        dt, {randn({4, 9, 16}), randn({4, 16, 5})},
        [](const auto& in) { return matmul(in[0], in[1]); }, tol);
    expect_matches_float64(
        dt, {randn({17, 24}), randn({12, 24}), randn({12})},
        [](const auto& in) { return linear(in[0], in[1], in[2]); }, tol);
    expect_matches_float64(
        dt, {randn({2, 3, 11, 13}), randn({8, 3, 3, 3}), randn({8})},
        [](const auto& in) { return conv2d(in[0], in[1], in[2], {.padding = 1}); }, tol);
  }
}

}  // namespace
}  // namespace ath::testing
