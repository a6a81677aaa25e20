// gelu_with_backward (ops/activations.h) against the two ops it stands for, bit for bit: dense
// float32 on every ISA copy (the fused loop), float64, bfloat16 and strided operands (the two
// ops' own kernels), with its outputs written over its inputs, and the inputs it refuses.
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/ops/activations.h"
#include "support/expect_error.h"
#include "support/isa_cap.h"
#include "support/op_table.h"

namespace ath {
namespace {

// Made by the gelu_pair pass; its op-table row is the tests below, against gelu and
// gelu_backward (whose own rows check them against float64).
const testing::CoveredElsewhere covered[] = {{"gelu_with_backward", "test_gelu_pair.cpp"}};

Outputs gelu_pair(const Tensor& g, const Tensor& x, GeluAttrs a = {}) {
  const Tensor in[2] = {g, x};
  return call(op_gelu_with_backward(), TensorSpan(in, 2), a);
}

void expect_both_ops_bits(const Tensor& g, const Tensor& x, const std::string& what) {
  Outputs got = gelu_pair(g, x);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(equal(got[0], call1(op_gelu_backward(), {g, x}, GeluAttrs{})))
      << what << ": the gradient";
  EXPECT_TRUE(equal(got[1], gelu(x))) << what << ": the GELU";
}

TEST(GeluWithBackward, HasTheBitsOfGeluAndGeluBackward) {
  manual_seed(13);
  // 4099 elements: a vector tail at every width; values over GELU's whole range.
  const Tensor x = randn({4099}) * 4, g = randn({4099});
  for (const CpuIsa isa : testing::isas_up_to_current()) {
    testing::ScopedMaxCpuIsa cap(isa);
    expect_both_ops_bits(g, x, "float32 at " + std::string(cpu_isa_name(isa)));
  }
  expect_both_ops_bits(g.to(kFloat64), x.to(kFloat64), "float64");
  expect_both_ops_bits(g.to(kBFloat16), x.to(kBFloat16), "bfloat16");
  const Tensor xs = randn({6, 10}).transpose(0, 1), gs = randn({6, 10}).transpose(0, 1);
  expect_both_ops_bits(gs, xs, "strided");
}

// The memory plan may write the gradient over g and the GELU over x (EachOverItsInput): the
// kernel, run with its outputs aliasing its inputs, keeps the bits of the two ops, dense
// (every ISA copy) and strided.
TEST(GeluWithBackward, OutputsWrittenOverTheirInputsKeepTheBits) {
  manual_seed(17);
  auto run_in_place = [](const Tensor& g, const Tensor& x) {
    Tensor gw = g.clone(), xw = x.clone();
    if (!g.is_contiguous())
      gw = g.t().contiguous().clone().t(), xw = x.t().contiguous().clone().t();
    const Tensor in[2] = {gw, xw};
    Tensor out[2] = {gw, xw};
    auto kernel = op_gelu_with_backward().typed_kernel(DeviceType::CPU, g.dtype());
    kernel(TensorSpan(in, 2), std::span<Tensor>(out, 2), GeluAttrs{});
    return std::pair{gw, xw};
  };
  const Tensor x = randn({4099}) * 4, g = randn({4099});
  for (const CpuIsa isa : testing::isas_up_to_current()) {
    testing::ScopedMaxCpuIsa cap(isa);
    const auto [dx, y] = run_in_place(g, x);
    EXPECT_TRUE(equal(dx, call1(op_gelu_backward(), {g, x}, GeluAttrs{}))) << cpu_isa_name(isa);
    EXPECT_TRUE(equal(y, gelu(x))) << cpu_isa_name(isa);
  }
  const Tensor xs = randn({6, 10}).t(), gs = randn({6, 10}).t();
  const auto [dx, y] = run_in_place(gs, xs);
  EXPECT_TRUE(equal(dx, call1(op_gelu_backward(), {gs, xs}, GeluAttrs{}))) << "strided";
  EXPECT_TRUE(equal(y, gelu(xs))) << "strided";
}

TEST(GeluWithBackward, BadInputsNameWhatIsWrong) {
  testing::expect_error_naming([] { gelu_pair(ones({2}), ones({3})); }, "doesn't match");
  testing::expect_error_naming(
      [] { gelu_pair(ones({2}), ones({2}), GeluAttrs{.approximate = GeluApprox::Tanh}); },
      "only the exact GELU");
  testing::expect_error_naming([] { gelu_pair(ones({2}, kInt64), ones({2}, kInt64)); }, "floating");
  testing::expect_error_naming([] { gelu_pair(ones({2}), ones({2}, kFloat64)); },
                               "one floating dtype");
}

}  // namespace
}  // namespace ath
