// conv_relu_max_pool (ops/conv_pool.h) against relu(conv2d) -> max_pool2d in every output layout,
// across geometries, ISA copies and thread counts, with NaN inputs and bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "athanor/athanor.h"
#include "athanor/ops/conv_pool.h"
#include "support/isa_cap.h"
#include "support/op_table.h"

namespace ath {
namespace {

struct Case {
  int64_t n, c, o, h, w, k, pad, stride;
  std::array<int64_t, 2> pool;
};

// Float32-only inference kernel: its op-table row is the tests below, against float64 ops.
const testing::CoveredElsewhere covered[] = {
    {"conv_relu_max_pool", "test_conv_pool.cpp"},
    {"conv_relu_max_pool_indices", "test_conv_pool.cpp"},
    {"conv_relu_max_pool_weight_grad", "test_conv_pool.cpp"}};

// The unfused ops in float64, in the layout asked for (rounded to float32 for the layout
// conversion, which is float32-only, after the float64 arithmetic).
Tensor reference(const Tensor& x, const Tensor& w, const Tensor& b, const Case& c,
                 ActivationLayout layout) {
  const Tensor y = max_pool2d(relu(conv2d(x.to(kFloat64), w.to(kFloat64), b.to(kFloat64),
                                          {.stride = c.stride, .padding = c.pad})),
                              {.kernel = Int2(c.pool[0], c.pool[1])})
                       .to(kFloat32);
  return layout == ActivationLayout::Nchw ? y : to_blocked(y, layout);
}

ConvPoolAttrs attrs(const Case& c, ActivationLayout layout) {
  return {
      .conv = {.stride = {c.stride, c.stride}, .pad_l = {c.pad, c.pad}, .pad_r = {c.pad, c.pad}},
      .pool = c.pool,
      .dst_layout = layout};
}

// `call` throws an E whose message names `text`.
template <class E, class Fn>
void expect_error(const Fn& call, const std::string& text) {
  try {
    call();
    ADD_FAILURE() << "no error (expected one naming " << text << ")";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

// Runs fn(where) under each ISA level up to this host's and each of `threads` (the previous
// cap and count restored after); `where` names both for failure messages.
template <class Fn>
void at_every_isa_and_thread_count(std::initializer_list<int> threads, const Fn& fn) {
  for (const CpuIsa isa : testing::isas_up_to_current()) {
    testing::ScopedMaxCpuIsa cap(isa);
    for (const int t : threads) {
      const int saved = get_num_threads();
      set_num_threads(t);
      fn(std::string(cpu_isa_name(isa)) + ", " + std::to_string(t) + " threads");
      set_num_threads(saved);
    }
  }
}

constexpr ActivationLayout kLayouts[] = {ActivationLayout::Nchw, ActivationLayout::Nhwc,
                                         ActivationLayout::Blocked8, ActivationLayout::Blocked16};

TEST(ConvReluMaxPool, MatchesTheUnfusedOpsInEveryLayout) {
  // W2's first layer; 3 channels, 20 outputs (a partial block), stride 2, 5x5, a 3x2 pool
  // that leaves a row and a column over; 4 channels of 1x1 with a pool of 1.
  const Case cases[] = {{2, 1, 32, 28, 28, 3, 1, 1, {2, 2}},
                        {1, 3, 20, 17, 19, 5, 2, 2, {3, 2}},
                        {3, 4, 16, 6, 5, 1, 0, 1, {1, 1}}};
  manual_seed(3);
  for (const Case& c : cases) {
    const Tensor x = randn({c.n, c.c, c.h, c.w}), w = randn({c.o, c.c, c.k, c.k}) * 0.3,
                 b = randn({c.o}) * 0.1;
    for (const ActivationLayout layout : kLayouts) {
      const Tensor got = conv_relu_max_pool(x, w, b, attrs(c, layout));
      const Tensor want = reference(x, w, b, c, layout);
      ASSERT_EQ(got.shape(), want.shape()) << static_cast<int>(layout);
      EXPECT_TRUE(allclose(got, want, {.rtol = 1e-5, .atol = 1e-5}))
          << "c " << c.c << " o " << c.o << " layout " << static_cast<int>(layout);
    }
    // Without a bias: a zero one.
    const Tensor nb = conv_relu_max_pool(x, w, std::nullopt, attrs(c, ActivationLayout::Nchw));
    EXPECT_TRUE(allclose(nb, reference(x, w, zeros({c.o}), c, ActivationLayout::Nchw),
                         {.rtol = 1e-5, .atol = 1e-5}));
  }
}

TEST(ConvReluMaxPool, SameBitsOnEveryIsaAndThreadCount) {
  manual_seed(4);
  const Case c{2, 3, 24, 13, 11, 3, 1, 1, {2, 2}};
  const Tensor x = randn({c.n, c.c, c.h, c.w}), w = randn({c.o, c.c, 3, 3}), b = randn({c.o});
  const Tensor first = conv_relu_max_pool(x, w, b, attrs(c, ActivationLayout::Blocked16));
  at_every_isa_and_thread_count({1, 2, 3}, [&](const std::string& where) {
    const Tensor y = conv_relu_max_pool(x, w, b, attrs(c, ActivationLayout::Blocked16));
    EXPECT_TRUE(equal(y, first)) << where;
  });
}

TEST(ConvReluMaxPool, ANanSumWinsItsWindow) {
  const Case c{1, 1, 16, 6, 6, 3, 1, 1, {2, 2}};
  std::vector<float> values = randn({1, 1, 6, 6}).to_vector<float>();
  values[2 * 6 + 2] = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = from_vector(values, {1, 1, 6, 6});
  const Tensor w = randn({16, 1, 3, 3}), b = randn({16});
  for (const CpuIsa isa : testing::isas_up_to_current()) {
    testing::ScopedMaxCpuIsa cap(isa);
    const Tensor got = conv_relu_max_pool(x, w, b, attrs(c, ActivationLayout::Nchw));
    const Tensor want = reference(x, w, b, c, ActivationLayout::Nchw);
    EXPECT_TRUE(equal(isnan(got), isnan(want))) << cpu_isa_name(isa);
    EXPECT_GT(isnan(got).sum().item<int64_t>(), 0);
    const Tensor finite = logical_not(isnan(want));
    EXPECT_TRUE(allclose(masked_select(got, finite), masked_select(want, finite),
                         {.rtol = 1e-5, .atol = 1e-5}));
  }
}

TEST(ConvReluMaxPool, BadInputsNameWhatIsWrong) {
  const Tensor x = randn({1, 2, 8, 8}), w = randn({16, 2, 3, 3}), b = randn({16});
  const ConvPoolAttrs a = attrs({1, 2, 16, 8, 8, 3, 1, 1, {2, 2}}, ActivationLayout::Nchw);
  expect_error<DTypeError>([&] { conv_relu_max_pool(x.to(kFloat64), w, b, a); }, "float32");
  expect_error<ShapeError>(
      [&] {
        conv_relu_max_pool(x, randn({16, 3, 3, 3}), b, a);
      },
      "not an NCHW");
  expect_error<ShapeError>([&] { conv_relu_max_pool(x, w, randn({8}), a); }, "bias");
  ConvPoolAttrs big = a;
  big.pool = {9, 9};
  expect_error<ShapeError>([&] { conv_relu_max_pool(x, w, b, big); }, "pool window");
  ConvPoolAttrs grouped = a;
  grouped.conv.groups = 2;
  expect_error<ValueError>([&] { conv_relu_max_pool(x, w, b, grouped); }, "groups 1");
  ConvPoolAttrs zero = a;
  zero.pool = {0, 2};
  expect_error<ValueError>([&] { conv_relu_max_pool(x, w, b, zero); }, "pool size");
}

// ---- the training form: pooled values and max_pool2d's indices ------------------------------

// max_pool2d_with_indices(relu(conv2d)) in float64; the values rounded to float32.
std::pair<Tensor, Tensor> reference_indices(const Tensor& x, const Tensor& w, const Tensor& b,
                                            const Case& c) {
  auto [p, idx] =
      max_pool2d_with_indices(relu(conv2d(x.to(kFloat64), w.to(kFloat64), b.to(kFloat64),
                                          {.stride = c.stride, .padding = c.pad})),
                              {.kernel = Int2(c.pool[0], c.pool[1])});
  return {p.to(kFloat32), idx};
}

TEST(ConvReluMaxPoolIndices, MatchesMaxPoolWithIndicesOfTheUnfusedOps) {
  // W2's first layer; a partial block of 20 outputs, stride 2, 5x5, a 3x2 pool whose windows
  // run across groups of positions and leave a row and a column over; 1x1 with a pool of 1.
  // Many windows hold only negative sums: relu's zeros tie, and the first position must win.
  const Case cases[] = {{3, 1, 32, 28, 28, 3, 1, 1, {2, 2}},
                        {2, 3, 20, 17, 19, 5, 2, 2, {3, 2}},
                        {3, 4, 16, 6, 5, 1, 0, 1, {1, 1}},
                        {1, 2, 8, 9, 9, 3, 0, 1, {3, 3}}};
  manual_seed(6);
  for (const Case& c : cases) {
    const Tensor x = randn({c.n, c.c, c.h, c.w}), w = randn({c.o, c.c, c.k, c.k}) * 0.3,
                 b = randn({c.o}) * 0.1;
    const auto [want_p, want_idx] = reference_indices(x, w, b, c);
    for (const CpuIsa isa : testing::isas_up_to_current()) {
      testing::ScopedMaxCpuIsa cap(isa);
      const auto [p, idx] = conv_relu_max_pool_indices(x, w, b, attrs(c, ActivationLayout::Nchw));
      ASSERT_EQ(p.shape(), want_p.shape());
      ASSERT_EQ(idx.dtype(), kInt64);
      EXPECT_TRUE(allclose(p, want_p, {.rtol = 1e-5, .atol = 1e-5}))
          << "c " << c.c << " o " << c.o << " " << cpu_isa_name(isa);
      EXPECT_TRUE(equal(idx, want_idx)) << "c " << c.c << " o " << c.o << " " << cpu_isa_name(isa);
      // The inference form pools the same values.
      EXPECT_TRUE(equal(p, conv_relu_max_pool(x, w, b, attrs(c, ActivationLayout::Nchw))));
    }
  }
}

TEST(ConvReluMaxPoolIndices, SameBitsOnEveryIsaAndThreadCount) {
  manual_seed(7);
  const Case c{3, 2, 24, 13, 11, 3, 1, 1, {2, 2}};
  const Tensor x = randn({c.n, c.c, c.h, c.w}), w = randn({c.o, c.c, 3, 3}), b = randn({c.o});
  const auto first = conv_relu_max_pool_indices(x, w, b, attrs(c, ActivationLayout::Nchw));
  at_every_isa_and_thread_count({1, 2, 3}, [&](const std::string& where) {
    const auto got = conv_relu_max_pool_indices(x, w, b, attrs(c, ActivationLayout::Nchw));
    EXPECT_TRUE(equal(got.first, first.first)) << where;
    EXPECT_TRUE(equal(got.second, first.second)) << where;
  });
}

// Equal maxima: the first position of the window wins (a zero filter makes every sum the bias:
// negative biases pool relu's zeros, positive ones the bias itself); a NaN wins its window.
TEST(ConvReluMaxPoolIndices, TiesGoToTheFirstPositionAndNanWins) {
  manual_seed(8);
  const Case c{1, 1, 16, 6, 6, 3, 1, 1, {2, 2}};
  const Tensor w = zeros({16, 1, 3, 3});
  Tensor b = randn({16});
  std::vector<float> values = randn({1, 1, 6, 6}).to_vector<float>();
  const Tensor x = from_vector(values, {1, 1, 6, 6});
  values[3 * 6 + 4] = std::numeric_limits<float>::quiet_NaN();
  const Tensor with_nan = from_vector(values, {1, 1, 6, 6});
  for (const CpuIsa isa : testing::isas_up_to_current()) {
    testing::ScopedMaxCpuIsa cap(isa);
    const auto [p, idx] = conv_relu_max_pool_indices(x, w, b, attrs(c, ActivationLayout::Nchw));
    EXPECT_TRUE(equal(p, relu(b).view({1, 16, 1, 1}).expand({1, 16, 3, 3}).contiguous()));
    const auto [want_p, want_idx] = reference_indices(x, w, b, c);
    EXPECT_TRUE(equal(idx, want_idx)) << cpu_isa_name(isa);
    // The NaN at (3, 4) reaches every sum whose 3x3 window covers it, and wins each pool
    // window it is in (the last NaN of a window, as max_pool2d's rule has it).
    const Tensor w2 = randn({16, 1, 3, 3});
    const auto [np, nidx] =
        conv_relu_max_pool_indices(with_nan, w2, b, attrs(c, ActivationLayout::Nchw));
    const auto [wp, widx] = reference_indices(with_nan, w2, b, c);
    EXPECT_GT(isnan(np).sum().item<int64_t>(), 0);
    EXPECT_TRUE(equal(isnan(np), isnan(wp))) << cpu_isa_name(isa);
    EXPECT_TRUE(equal(nidx, widx)) << cpu_isa_name(isa);
  }
}

TEST(ConvReluMaxPoolIndices, BadInputsNameWhatIsWrong) {
  const Tensor x = randn({1, 2, 8, 8}), w = randn({16, 2, 3, 3}), b = randn({16});
  expect_error<ValueError>(
      [&] {
        conv_relu_max_pool_indices(
            x, w, b, attrs({1, 2, 16, 8, 8, 3, 1, 1, {2, 2}}, ActivationLayout::Blocked16));
      },
      "NCHW only");
  expect_error<DTypeError>(
      [&] {
        conv_relu_max_pool_indices(
            x, w.to(kFloat64), b, attrs({1, 2, 16, 8, 8, 3, 1, 1, {2, 2}}, ActivationLayout::Nchw));
      },
      "float32");
}

// ---- the weight gradient behind it -------------------------------------------------------------

// convolution_backward_weight(x, max_pool2d_backward_masked(gp, idx, p)) in float64.
std::pair<Tensor, Tensor> reference_weight_grad(const Tensor& x, const Tensor& gp,
                                                const Tensor& idx, const Tensor& p, const Case& c) {
  const int64_t conv_h = c.h + 2 * c.pad - c.k + 1, conv_w = c.w + 2 * c.pad - c.k + 1;
  const Tensor in[3] = {gp.to(kFloat64), idx, p.to(kFloat64)};
  const Tensor d = call1(op_max_pool2d_backward_masked(), TensorSpan(in, 3),
                         PoolGradAttrs{.input = {conv_h, conv_w}});
  const Tensor args[2] = {x.to(kFloat64), d};
  Outputs out = call(op_convolution_backward_weight(), TensorSpan(args, 2),
                     ConvWeightGradAttrs{.geometry = attrs(c, ActivationLayout::Nchw).conv,
                                         .kernel = {c.k, c.k},
                                         .with_bias = true});
  return {out[0].to(kFloat32), out[1].to(kFloat32)};
}

TEST(ConvReluMaxPoolWeightGrad, MatchesTheMaskedScatterAndTheWeightGradient) {
  // W2's first layer (the 1-channel 3x3 path); 3 channels of 5x5 with a 3x2 pool that leaves a
  // row and a column over (the general path, 20 outputs); 2 channels with a 3x3 pool.
  const Case cases[] = {{4, 1, 32, 28, 28, 3, 1, 1, {2, 2}},
                        {2, 3, 20, 17, 19, 5, 2, 1, {3, 2}},
                        {1, 2, 8, 9, 9, 3, 0, 1, {3, 3}}};
  manual_seed(9);
  for (const Case& c : cases) {
    const Tensor x = randn({c.n, c.c, c.h, c.w}), w = randn({c.o, c.c, c.k, c.k}) * 0.3,
                 b = randn({c.o}) * 0.1;
    const auto [p, idx] = conv_relu_max_pool_indices(x, w, b, attrs(c, ActivationLayout::Nchw));
    const Tensor gp = randn(p.shape());
    // (Not structured bindings: clang 14's lambdas cannot capture one.)
    const std::pair<Tensor, Tensor> want = reference_weight_grad(x, gp, idx, p, c);
    const ConvPoolWeightGradAttrs a{.forward = attrs(c, ActivationLayout::Nchw),
                                    .kernel = {c.k, c.k}};
    const Tensor in[4] = {x, gp, idx, p};
    Outputs first;
    at_every_isa_and_thread_count({1, 2, 3}, [&](const std::string& where) {
      Outputs got = call(op_conv_relu_max_pool_weight_grad(), TensorSpan(in, 4), a);
      EXPECT_TRUE(allclose(got[0], want.first, {.rtol = 1e-4, .atol = 1e-4}))
          << "c " << c.c << ", " << where;
      EXPECT_TRUE(allclose(got[1], want.second, {.rtol = 1e-4, .atol = 1e-4}))
          << "c " << c.c << ", " << where;
      // The same bits on every ISA and thread count (16 lanes everywhere, each product-sum one
      // fused multiply-add).
      if (first.empty()) first = got;
      EXPECT_TRUE(equal(got[0], first[0]) && equal(got[1], first[1])) << where;
    });
  }
}

TEST(ConvReluMaxPoolWeightGrad, BadInputsNameWhatIsWrong) {
  const Case c{1, 1, 16, 8, 8, 3, 1, 1, {2, 2}};
  manual_seed(10);
  const Tensor x = randn({1, 1, 8, 8});
  // (Not a structured binding: clang 14's lambdas cannot capture one.)
  const auto fwd = conv_relu_max_pool_indices(x, randn({16, 1, 3, 3}), randn({16}),
                                              attrs(c, ActivationLayout::Nchw));
  const Tensor p = fwd.first, idx = fwd.second;
  const Tensor gp = randn(p.shape());
  const ConvPoolWeightGradAttrs a{.forward = attrs(c, ActivationLayout::Nchw), .kernel = {3, 3}};
  auto run = [&](const Tensor& xx, const Tensor& gg, const Tensor& ii, const Tensor& pp,
                 const ConvPoolWeightGradAttrs& aa) {
    const Tensor in[4] = {xx, gg, ii, pp};
    call(op_conv_relu_max_pool_weight_grad(), TensorSpan(in, 4), aa);
  };
  expect_error<DTypeError>([&] { run(x, gp, idx.to(kInt32), p, a); }, "int64");
  expect_error<DTypeError>([&] { run(x.to(kFloat64), gp, idx, p, a); }, "float32");
  expect_error<ShapeError>([&] { run(x, gp, idx, randn({1, 16, 3, 3}), a); }, "one [N, O");
  ConvPoolWeightGradAttrs strided = a;
  strided.forward.conv.stride = {2, 2};
  expect_error<ValueError>([&] { run(x, gp, idx, p, strided); }, "stride 1");
  ConvPoolWeightGradAttrs wide = a;
  wide.kernel = {15, 15};  // 225 taps
  wide.forward.conv.pad_l = wide.forward.conv.pad_r = {7, 7};
  expect_error<ValueError>([&] { run(x, gp, idx, p, wide); }, "at most 196 filter taps");
}

// Indices that are not a pool's (two windows pointing at one element, one at another window's
// element) are scattered as max_pool2d_backward_masked scatters them.
TEST(ConvReluMaxPoolWeightGrad, TakesAnyIndicesAsTheMaskedScatterDoes) {
  const Case c{2, 1, 16, 8, 8, 3, 1, 1, {2, 2}};
  manual_seed(11);
  const Tensor x = randn({2, 1, 8, 8});
  const auto [p, idx] = conv_relu_max_pool_indices(x, randn({16, 1, 3, 3}), randn({16}),
                                                   attrs(c, ActivationLayout::Nchw));
  const Tensor gp = randn(p.shape());
  Tensor moved = idx.clone();
  moved.view({-1}).narrow(0, 0, 2).fill_(2);  // windows (0, 0) and (0, 1) both at element 2
  const auto [want_w, want_b] = reference_weight_grad(x, gp, moved, p, c);
  const Tensor in[4] = {x, gp, moved, p};
  Outputs got =
      call(op_conv_relu_max_pool_weight_grad(), TensorSpan(in, 4),
           ConvPoolWeightGradAttrs{.forward = attrs(c, ActivationLayout::Nchw), .kernel = {3, 3}});
  EXPECT_TRUE(allclose(got[0], want_w, {.rtol = 1e-4, .atol = 1e-4}));
  EXPECT_TRUE(allclose(got[1], want_b, {.rtol = 1e-4, .atol = 1e-4}));
}

// An eager first layer of conv_pool_trainable's kind runs the fused kernels' sums: conv2d -> relu
// -> max_pool2d gives conv_relu_max_pool_indices' bits, and the weight gradient of the masked
// scatter conv_relu_max_pool_weight_grad's, on every ISA and thread count. This is what keeps a
// compiled W2 step bit-identical to the eager one (FusePass.W2FirstConvolutionReluAndPool...).
TEST(ConvReluMaxPoolIndices, EagerFirstLayersSumInTheFusedKernelsOrder) {
  // W2's first layer; one channel of 3x3 on an odd image with a 3x2 pool that leaves a row and a
  // column over (conv_pool_trainable's kind: one channel, 3x3).
  const Case cases[] = {{3, 1, 32, 28, 28, 3, 1, 1, {2, 2}}, {2, 1, 20, 17, 19, 3, 1, 1, {3, 2}}};
  manual_seed(12);
  for (const Case& c : cases) {
    const Tensor x = randn({c.n, c.c, c.h, c.w}), w = randn({c.o, c.c, c.k, c.k}) * 0.3,
                 b = randn({c.o}) * 0.1;
    const ConvPoolAttrs a = attrs(c, ActivationLayout::Nchw);
    at_every_isa_and_thread_count({1, 2}, [&](const std::string& where) {
      const auto fused = conv_relu_max_pool_indices(x, w, b, a);
      const auto eager = max_pool2d_with_indices(relu(conv2d(x, w, b, {.padding = c.pad})),
                                                 {.kernel = Int2(c.pool[0], c.pool[1])});
      EXPECT_TRUE(equal(fused.first, eager.first)) << where;
      EXPECT_TRUE(equal(fused.second, eager.second)) << where;
      const Tensor gp = randn(fused.first.shape());
      const Tensor in[4] = {x, gp, fused.second, fused.first};
      Outputs got = call(op_conv_relu_max_pool_weight_grad(), TensorSpan(in, 4),
                         ConvPoolWeightGradAttrs{.forward = a, .kernel = {c.k, c.k}});
      const int64_t conv_h = c.h + 2 * c.pad - c.k + 1, conv_w = c.w + 2 * c.pad - c.k + 1;
      const Tensor m[3] = {gp, fused.second, fused.first};
      const Tensor d = call1(op_max_pool2d_backward_masked(), TensorSpan(m, 3),
                             PoolGradAttrs{.input = {conv_h, conv_w}});
      const Tensor args[2] = {x, d};
      Outputs want =
          call(op_convolution_backward_weight(), TensorSpan(args, 2),
               ConvWeightGradAttrs{.geometry = a.conv, .kernel = {c.k, c.k}, .with_bias = true});
      EXPECT_TRUE(equal(got[0], want[0])) << where;
      EXPECT_TRUE(equal(got[1], want[1])) << where;
    });
  }
}

}  // namespace
}  // namespace ath
