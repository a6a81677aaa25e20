// The layout inference ops (conv_blocked.h) against the plain ops they replace, computed in
// float64: convolutions with and without bias, residual and relu, input and output channel
// counts that are and are not multiples of the block (the padding channels must stay zero),
// plain, NHWC and blocked inputs, strides, padding and dilation; pooling; the layout round trip.
#include <athanor/athanor.h>
#include <athanor/core/cpu_isa.h>
#include <athanor/ops/conv_blocked.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "support/isa_cap.h"
#include "support/op_table.h"

namespace ath {
namespace {

using L = ActivationLayout;

// Float32-only inference kernels: their op-table rows are the tests below, against float64
// conv2d and pooling.
const testing::CoveredElsewhere covered[] = {{"conv_pack_weight", "test_conv_blocked.cpp"},
                                             {"conv_blocked", "test_conv_blocked.cpp"},
                                             {"to_blocked", "test_conv_blocked.cpp"},
                                             {"from_blocked", "test_conv_blocked.cpp"},
                                             {"pool_blocked", "test_conv_blocked.cpp"}};

std::vector<ActivationLayout> layouts_here() {
  if (cpu_isa() >= CpuIsa::Avx512) return {L::Nhwc, L::Blocked8, L::Blocked16};
  return {L::Nhwc, L::Blocked8};  // oneDNN's AVX2 kernels have no nChw16c form
}

bool is_blocked(ActivationLayout l) { return l == L::Blocked8 || l == L::Blocked16; }

Tensor f64(const Tensor& t) { return t.to(kFloat64); }

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-4) {
  ASSERT_EQ(got.shape(), want.shape());
  const double scale = std::max(1.0, max(abs(f64(want))).item<double>());
  EXPECT_LE(max(abs(f64(got) - f64(want))).item<double>(), tol * scale);
}

// The padding channels of a blocked tensor [N, Cb, H, W, b] past `channels`.
void expect_zero_padding(const Tensor& blocked, int64_t channels) {
  if (blocked.dim() != 5) return;  // NHWC: no padding
  const int64_t b = blocked.shape()[4], used = channels % b;
  if (used == 0) return;
  Tensor last = blocked.select(1, blocked.shape()[1] - 1).narrow(3, used, b - used);
  EXPECT_EQ(max(abs(last)).item<double>(), 0.0) << "padding channels are not zero";
}

struct Case {
  int64_t n, c, h, w, o, k, stride, pad, dilation;
};

TEST(ConvBlocked, MatchesConv2dInEveryLayoutAndEpilogue) {
  const Case cases[] = {{1, 3, 17, 15, 20, 3, 1, 1, 1}, {2, 32, 14, 14, 64, 3, 1, 1, 1},
                        {1, 24, 9, 11, 10, 1, 2, 0, 1}, {2, 16, 12, 12, 16, 3, 2, 1, 1},
                        {1, 8, 10, 10, 40, 3, 1, 2, 2}, {1, 1, 28, 28, 32, 3, 1, 1, 1},
                        {3, 64, 7, 7, 128, 7, 2, 3, 1}};
  manual_seed(3);
  for (const ActivationLayout layout : layouts_here()) {
    for (const Case& k : cases) {
      for (int variant = 0; variant < 4; ++variant) {
        const bool bias = variant != 1, residual = variant >= 2, relu = variant != 0;
        const bool plain_src = is_blocked(layout) && (k.c < 4 || variant == 3);
        SCOPED_TRACE(fmt::format("layout {} case c={} o={} k={} variant {}",
                                 static_cast<int64_t>(layout), k.c, k.o, k.k, variant));
        Tensor x = randn({k.n, k.c, k.h, k.w}), w = randn({k.o, k.c, k.k, k.k}), b = randn({k.o});
        ConvBlockedAttrs a{.conv = {.stride = {k.stride, k.stride},
                                    .pad_l = {k.pad, k.pad},
                                    .pad_r = {k.pad, k.pad},
                                    .dilation = {k.dilation, k.dilation}},
                           .src_shape = {k.n, k.c, k.h, k.w},
                           .weight_shape = {k.o, k.c, k.k, k.k},
                           .src_layout = plain_src ? L::Nchw : layout,
                           .dst_layout = layout,
                           .with_bias = bias,
                           .residual = residual,
                           .relu = relu};
        Tensor want = conv2d(f64(x), f64(w), bias ? std::optional<Tensor>(f64(b)) : std::nullopt,
                             {.stride = k.stride, .padding = k.pad, .dilation = k.dilation});
        Tensor r = randn(want.shape());
        if (residual) want = want + f64(r);
        if (relu) want = ath::relu(want);
        Tensor packed = conv_pack_weight(w, a);
        Tensor xin = plain_src ? x : to_blocked(x, layout);
        Tensor y =
            conv_blocked(xin, packed, bias ? std::optional<Tensor>(b) : std::nullopt,
                         residual ? std::optional<Tensor>(to_blocked(r, layout)) : std::nullopt, a);
        expect_zero_padding(y, k.o);
        expect_close(from_blocked(y, layout, k.o), want);
      }
    }
  }
}

// oneDNN's Winograd kernels (AVX-512, nChw16c, 3x3 stride 1) at ResNet-like shapes, with bias,
// residual and relu: within 1e-5 of float64 relative to the output's scale.
TEST(ConvBlocked, WinogradMatchesConv2d) {
  ConvAttrs c{.pad_l = {1, 1}, .pad_r = {1, 1}};
  if (!winograd_eligible(c, {16, 16, 3, 3})) GTEST_SKIP() << "no Winograd on this host";
  EXPECT_FALSE(winograd_eligible(ConvAttrs{.stride = {2, 2}}, {16, 16, 3, 3}));
  EXPECT_FALSE(winograd_eligible(c, {16, 3, 3, 3}));
  manual_seed(4);
  const Case cases[] = {{1, 64, 56, 56, 64, 3, 1, 1, 1},
                        {2, 32, 14, 14, 64, 3, 1, 1, 1},
                        {1, 512, 7, 7, 512, 3, 1, 1, 1},
                        {3, 16, 9, 11, 48, 3, 1, 1, 1}};
  for (const Case& k : cases) {
    SCOPED_TRACE(fmt::format("c={} o={} h={}", k.c, k.o, k.h));
    Tensor x = randn({k.n, k.c, k.h, k.w}), w = randn({k.o, k.c, 3, 3}) * 0.1, b = randn({k.o});
    Tensor r = randn({k.n, k.o, k.h, k.w});
    ConvBlockedAttrs a{.conv = c,
                       .src_shape = {k.n, k.c, k.h, k.w},
                       .weight_shape = {k.o, k.c, 3, 3},
                       .src_layout = L::Blocked16,
                       .dst_layout = L::Blocked16,
                       .with_bias = true,
                       .residual = true,
                       .relu = true,
                       .winograd = true};
    Tensor want = ath::relu(conv2d(f64(x), f64(w), f64(b), {.padding = 1}) + f64(r));
    Tensor y = conv_blocked(to_blocked(x, L::Blocked16), conv_pack_weight(w, a), b,
                            to_blocked(r, L::Blocked16), a);
    expect_zero_padding(y, k.o);
    expect_close(from_blocked(y, L::Blocked16, k.o), want, 1e-5);
  }
  ConvBlockedAttrs nhwc{.conv = c,
                        .src_shape = {1, 16, 4, 4},
                        .weight_shape = {16, 16, 3, 3},
                        .src_layout = L::Nhwc,
                        .dst_layout = L::Nhwc,
                        .winograd = true};
  EXPECT_THROW(conv_pack_weight(randn({16, 16, 3, 3}), nhwc), ValueError);
}

// At batch 1 a small convolution runs as one one-thread primitive per thread, each over its
// share of the output channels (conv_parts in conv_blocked_dnnl.cpp): W2's second layer, a 1x1,
// and a Winograd one, with every epilogue, split two and four ways, against float64 conv2d; a
// weight packed for one split, run under another thread count, is an error.
TEST(ConvBlocked, BatchOneSplitsOutputChannelsBetweenThreads) {
  struct Split {
    Case k;
    bool winograd;
  };
  const Split cases[] = {{{1, 32, 14, 14, 64, 3, 1, 1, 1}, false},
                         {{1, 64, 16, 16, 64, 1, 1, 0, 1}, false},
                         {{1, 32, 14, 14, 64, 3, 1, 1, 1}, true}};
  manual_seed(6);
  const int saved = get_num_threads();
  for (const ActivationLayout layout : layouts_here()) {
    if (!is_blocked(layout)) continue;
    for (const Split& sc : cases) {
      const Case& k = sc.k;
      ConvAttrs conv{.stride = {1, 1}, .pad_l = {k.pad, k.pad}, .pad_r = {k.pad, k.pad}};
      const bool winograd =
          sc.winograd && layout == L::Blocked16 && winograd_eligible(conv, {k.o, k.c, k.k, k.k});
      if (sc.winograd && !winograd) continue;
      for (const int threads : {2, 4}) {
        for (int variant = 0; variant < 3; ++variant) {
          SCOPED_TRACE(fmt::format("layout {} c={} o={} k={} winograd {} threads {} variant {}",
                                   static_cast<int64_t>(layout), k.c, k.o, k.k, winograd, threads,
                                   variant));
          const bool bias = variant != 1, residual = variant == 2, relu = variant != 0;
          Tensor x = randn({k.n, k.c, k.h, k.w}), w = randn({k.o, k.c, k.k, k.k}) * 0.1,
                 b = randn({k.o}), r = randn({k.n, k.o, k.h, k.w});
          ConvBlockedAttrs a{.conv = conv,
                             .src_shape = {k.n, k.c, k.h, k.w},
                             .weight_shape = {k.o, k.c, k.k, k.k},
                             .src_layout = layout,
                             .dst_layout = layout,
                             .with_bias = bias,
                             .residual = residual,
                             .relu = relu,
                             .winograd = winograd};
          Tensor want = conv2d(f64(x), f64(w), bias ? std::optional<Tensor>(f64(b)) : std::nullopt,
                               {.padding = k.pad});
          if (residual) want = want + f64(r);
          if (relu) want = ath::relu(want);
          set_num_threads(threads);
          const Tensor packed = conv_pack_weight(w, a);
          const Tensor y = conv_blocked(
              to_blocked(x, layout), packed, bias ? std::optional<Tensor>(b) : std::nullopt,
              residual ? std::optional<Tensor>(to_blocked(r, layout)) : std::nullopt, a);
          set_num_threads(1);
          // One thread reads the whole weight in one primitive's format: another size, or the
          // same size in another format (the header tells).
          EXPECT_THROW(
              conv_blocked(
                  to_blocked(x, layout), packed, bias ? std::optional<Tensor>(b) : std::nullopt,
                  residual ? std::optional<Tensor>(to_blocked(r, layout)) : std::nullopt, a),
              Error);
          set_num_threads(saved);
          expect_close(from_blocked(y, layout, k.o), want, 1e-5);
        }
      }
    }
  }
}

// The pooled form (ConvBlockedAttrs::pool): conv [-> relu] -> a non-overlapping max pool in
// one node, split between threads at batch 1 (each thread pools its share) and whole at batch 2,
// 2x2 and 3x3 (a row and a column left over), Winograd and direct, against float64 ops; and the
// attributes it refuses.
TEST(ConvBlocked, PooledFormMatchesConvReluMaxPool) {
  manual_seed(7);
  const int saved = get_num_threads();
  for (const ActivationLayout layout : layouts_here()) {
    if (!is_blocked(layout)) continue;
    for (const int64_t n : {1, 2}) {
      for (const int64_t k : {2, 3}) {
        for (const bool winograd : {false, true}) {
          ConvAttrs conv{.pad_l = {1, 1}, .pad_r = {1, 1}};
          if (winograd && (layout != L::Blocked16 || !winograd_eligible(conv, {64, 32, 3, 3})))
            continue;
          for (const int threads : {1, 2}) {
            SCOPED_TRACE(fmt::format("layout {} n={} pool {} winograd {} threads {}",
                                     static_cast<int64_t>(layout), n, k, winograd, threads));
            const Tensor x = randn({n, 32, 14, 14}), w = randn({64, 32, 3, 3}) * 0.1,
                         b = randn({64});
            const ConvBlockedAttrs a{.conv = conv,
                                     .src_shape = {n, 32, 14, 14},
                                     .weight_shape = {64, 32, 3, 3},
                                     .src_layout = layout,
                                     .dst_layout = layout,
                                     .with_bias = true,
                                     .relu = true,
                                     .winograd = winograd,
                                     .pool = {k, k}};
            const Tensor want = max_pool2d(
                ath::relu(conv2d(f64(x), f64(w), f64(b), {.padding = 1})), {.kernel = k});
            set_num_threads(threads);
            const Tensor y =
                conv_blocked(to_blocked(x, layout), conv_pack_weight(w, a), b, std::nullopt, a);
            set_num_threads(saved);
            EXPECT_EQ(y.shape(), layout_shape({n, 64, 14 / k, 14 / k}, layout));
            expect_close(from_blocked(y, layout, 64), want, 1e-5);
          }
        }
      }
    }
  }
  ConvBlockedAttrs bad{.conv = {.pad_l = {1, 1}, .pad_r = {1, 1}},
                       .src_shape = {1, 16, 4, 4},
                       .weight_shape = {16, 16, 3, 3},
                       .src_layout = L::Blocked8,
                       .dst_layout = L::Blocked8,
                       .pool = {2, 2}};
  bad.residual = true;  // a residual of the unpooled output: not taken
  EXPECT_THROW(conv_pack_weight(randn({16, 16, 3, 3}), bad), ValueError);
  bad.residual = false;
  bad.dst_layout = L::Nhwc;
  EXPECT_THROW(conv_pack_weight(randn({16, 16, 3, 3}), bad), ValueError);
  bad.dst_layout = L::Blocked8;
  bad.pool = {5, 5};  // larger than the 4x4 output
  EXPECT_THROW(conv_pack_weight(randn({16, 16, 3, 3}), bad), ShapeError);
  bad.pool = {0, 2};
  EXPECT_THROW(conv_pack_weight(randn({16, 16, 3, 3}), bad), ValueError);
}

TEST(ConvBlocked, PlainOutputMatchesToo) {
  Tensor x = randn({2, 16, 9, 9}), w = randn({5, 16, 3, 3});
  ConvBlockedAttrs a{.conv = {.pad_l = {1, 1}, .pad_r = {1, 1}},
                     .src_shape = {2, 16, 9, 9},
                     .weight_shape = {5, 16, 3, 3},
                     .src_layout = L::Nhwc,
                     .dst_layout = L::Nchw};
  Tensor y =
      conv_blocked(to_blocked(x, L::Nhwc), conv_pack_weight(w, a), std::nullopt, std::nullopt, a);
  expect_close(y, conv2d(f64(x), f64(w), std::nullopt, {.padding = 1}));
}

TEST(ConvBlocked, LayoutRoundTripKeepsValuesAndZeroPads) {
  Tensor x = randn({2, 21, 5, 3});
  for (const ActivationLayout l : layouts_here()) {
    Tensor xl = to_blocked(x, l);
    EXPECT_EQ(xl.shape(), layout_shape({2, 21, 5, 3}, l));
    expect_zero_padding(xl, 21);
    EXPECT_TRUE(equal(from_blocked(xl, l, 21), x));
  }
  // Where channel c of pixel (h, w) lives: [n, h, w, c] and [n, c / b, h, w, c % b].
  EXPECT_TRUE(equal(to_blocked(x, L::Nhwc), x.permute({0, 2, 3, 1}).contiguous()));
  const Tensor b8 = to_blocked(x, L::Blocked8).contiguous();
  EXPECT_EQ(b8.data<float>()[(((1 * 3 + 20 / 8) * 5 + 4) * 3 + 2) * 8 + 20 % 8],
            x.data<float>()[((1 * 21 + 20) * 5 + 4) * 3 + 2]);
}

TEST(ConvBlocked, PoolingMatchesMaxAndAveragePooling) {
  Tensor x = randn({2, 20, 13, 12});
  for (const ActivationLayout l : layouts_here()) {
    Tensor xl = to_blocked(x, l);
    Tensor m = pool_blocked(xl, {.layout = l,
                                 .kernel = {3, 3},
                                 .stride = {2, 2},
                                 .pad_l = {1, 1},
                                 .pad_r = {1, 1},
                                 .max = true});
    expect_zero_padding(m, 20);
    EXPECT_TRUE(
        equal(from_blocked(m, l, 20), max_pool2d(x, {.kernel = 3, .stride = 2, .padding = 1})));
    Tensor g = pool_blocked(xl, {.layout = l, .kernel = {13, 12}, .stride = {1, 1}, .max = false});
    expect_close(from_blocked(g, l, 20), mean(x, {2, 3}, true), 1e-6);
  }
}

// The direct kernel of non-overlapping max pools (2x2 / stride 2 and the like): against
// max_pool2d bit for bit, NaN included (a NaN anywhere in a window is its result), on every ISA
// copy, with rows left over (floor mode) and 3x3 windows; and an input past the direct kernel's
// 64K elements (oneDNN's pooling; without NaN, which its vmaxps may drop).
TEST(ConvBlocked, DirectMaxPoolMatchesMaxPool2dOnEveryIsa) {
  struct PoolCase {
    int64_t n, c, h, w, k;
    bool nans;
  };
  const PoolCase cases[] = {{2, 20, 14, 14, 2, true},
                            {1, 16, 7, 9, 2, true},
                            {1, 24, 9, 10, 3, true},
                            {3, 40, 64, 64, 2, false}};
  for (const PoolCase& pc : cases) {
    std::vector<float> v = randn({pc.n, pc.c, pc.h, pc.w}).to_vector<float>();
    for (std::size_t i = 5; pc.nans && i < v.size(); i += 97)
      v[i] = std::numeric_limits<float>::quiet_NaN();
    const Tensor x = from_vector<float>(v, {pc.n, pc.c, pc.h, pc.w});
    const Tensor want = max_pool2d(x, {.kernel = pc.k});
    const Tensor want_nan = isnan(want);
    for (const ActivationLayout l : {L::Blocked8, L::Blocked16}) {
      const Tensor xl = to_blocked(x, l);
      for (const CpuIsa isa : testing::isas_up_to_current()) {
        testing::ScopedMaxCpuIsa cap(isa);
        const Tensor got = from_blocked(
            pool_blocked(xl, {.layout = l, .kernel = {pc.k, pc.k}, .stride = {pc.k, pc.k}}), l,
            pc.c);
        const std::string label = std::to_string(pc.h) + "x" + std::to_string(pc.w) + " k" +
                                  std::to_string(pc.k) + ", " + std::string(cpu_isa_name(isa));
        ASSERT_TRUE(equal(isnan(got), want_nan)) << label;
        EXPECT_TRUE(equal(where(want_nan, 0.0, got), where(want_nan, 0.0, want))) << label;
      }
    }
  }
}

TEST(ConvBlocked, BadInputsAreClearErrors) {
  ConvBlockedAttrs a{
      .src_shape = {1, 8, 4, 4}, .weight_shape = {8, 8, 3, 3}, .dst_layout = L::Blocked8};
  EXPECT_THROW(conv_pack_weight(randn({8, 4, 3, 3}), a), ShapeError);
  Tensor packed = conv_pack_weight(randn({8, 8, 3, 3}), a);
  EXPECT_THROW(conv_blocked(randn({1, 8, 5, 4}), packed, std::nullopt, std::nullopt, a),
               ShapeError);
  // Shorter than its header: refused before a byte of it is read.
  EXPECT_THROW(conv_blocked(randn({1, 8, 4, 4}), randn({4}), std::nullopt, std::nullopt, a),
               ShapeError);
  ConvBlockedAttrs other = a;
  other.weight_shape = {16, 8, 3, 3};
  EXPECT_THROW(conv_blocked(randn({1, 8, 4, 4}), packed, std::nullopt, std::nullopt, other),
               ShapeError);
  ConvBlockedAttrs relu = a;  // same geometry, same packed size, another epilogue
  relu.relu = true;
  EXPECT_THROW(conv_blocked(randn({1, 8, 4, 4}), packed, std::nullopt, std::nullopt, relu),
               ValueError);
  EXPECT_THROW(to_blocked(randn({1, 8, 4, 4}), static_cast<ActivationLayout>(4)), ValueError);
  EXPECT_THROW(from_blocked(randn({1, 1, 4, 4, 8}), L::Blocked8, 9), ShapeError);
  EXPECT_THROW(from_blocked(randn({1, 4, 4, 8}), L::Nhwc, 9), ShapeError);
  EXPECT_THROW(to_blocked(randn({1, 8, 4, 4}).to(kFloat64), L::Nhwc), DTypeError);
}

}  // namespace
}  // namespace ath
