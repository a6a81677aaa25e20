// Max pooling's kernels against plain float64 loops written here: the backward scatter, plain
// and masked (max_pool2d_backward, max_pool2d_backward_masked), whose 2x2 fast path writes each
// input row pair once, and the forward for windows other than 2x2 (test_max_pool_2x2.cpp checks
// that one). Inputs are small integers with ties, NaNs, infinities and negative zeros, so the
// float64 loops compute the very numbers float32 must (sums of small integers are exact, and
// 0 + g, g * 1 and g * 0 round alike): results are compared bit for bit (any NaN for a NaN).
// Every ISA copy, odd plane sizes, row widths around the vector widths, non-contiguous inputs,
// indices outside their window (the general scatter's job) and the other float dtypes.
#include <athanor/athanor.h>
#include <athanor/ops/conv.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "support/isa_cap.h"

namespace ath {
namespace {

using testing::isas_up_to_current;
using testing::ScopedMaxCpuIsa;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Small integers (many ties) with NaN, +-inf and -0 sprinkled over them, as float32.
Tensor special_values(const Shape& shape, uint64_t seed, int lo = -3, int hi = 4) {
  manual_seed(seed);
  std::vector<double> v = randint(lo, hi, shape).to(kFloat64).to_vector<double>();
  const double specials[] = {kNaN, kInf, -kInf, -0.0};
  for (std::size_t i = 0; i < v.size(); i += 5 + i % 7) v[i] = specials[(i / 5) % 4];
  return from_vector<double>(v, shape).to(kFloat32);
}

// Bit-for-bit equality through float64 (exact for every floating dtype): equal values with the
// same sign (so -0 != +0), or both NaN.
void expect_same(const Tensor& got, const std::vector<double>& want) {
  const std::vector<double> g = got.to(kFloat64).to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(g[i])) << "element " << i << ": " << g[i] << ", want NaN";
    } else {
      ASSERT_TRUE(g[i] == want[i] && std::signbit(g[i]) == std::signbit(want[i]))
          << "element " << i << ": " << g[i] << ", want " << want[i];
    }
  }
}

// max_pool2d's rule, in float64: each window clipped to the input, scanned row by row from
// -inf; a value wins when greater or NaN; the index starts at the window's first element.
std::pair<std::vector<double>, std::vector<int64_t>> ref_forward(const Tensor& x,
                                                                 const MaxPool2dAttrs& a,
                                                                 int64_t out_h, int64_t out_w) {
  const std::vector<double> xv = x.to(kFloat64).contiguous().to_vector<double>();
  const int64_t planes = x.shape()[0] * x.shape()[1], in_h = x.shape()[2], in_w = x.shape()[3];
  std::vector<double> values;
  std::vector<int64_t> indices;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oy = 0; oy < out_h; ++oy)
      for (int64_t ox = 0; ox < out_w; ++ox) {
        double best = -kInf;
        int64_t best_i = -1;
        for (int64_t ky = 0; ky < a.kernel[0]; ++ky)
          for (int64_t kx = 0; kx < a.kernel[1]; ++kx) {
            const int64_t iy = oy * a.stride[0] - a.padding[0] + ky * a.dilation[0];
            const int64_t ix = ox * a.stride[1] - a.padding[1] + kx * a.dilation[1];
            if (iy < 0 || iy >= in_h || ix < 0 || ix >= in_w) continue;
            const double v = xv[static_cast<std::size_t>((pl * in_h + iy) * in_w + ix)];
            if (best_i < 0) best_i = iy * in_w + ix;
            if (v > best || std::isnan(v)) {
              best = v;
              best_i = iy * in_w + ix;
            }
          }
        values.push_back(best);
        indices.push_back(best_i);
      }
  return {values, indices};
}

// The scatter in float64: zeros, each gradient added at its index in order, then (masked) each
// winner times (pooled > 0 ? 1 : 0), once per window, as the unfused multiply.
std::vector<double> ref_backward(const Tensor& grad, const Tensor& indices, const Tensor& pooled,
                                 int64_t in_h, int64_t in_w) {
  const std::vector<double> g = grad.to(kFloat64).contiguous().to_vector<double>();
  const std::vector<int64_t> idx = indices.contiguous().to_vector<int64_t>();
  std::vector<double> p;
  if (pooled.defined()) p = pooled.to(kFloat64).contiguous().to_vector<double>();
  const int64_t planes = grad.shape()[0] * grad.shape()[1];
  const int64_t out_plane = grad.shape()[2] * grad.shape()[3], in_plane = in_h * in_w;
  std::vector<double> dx(static_cast<std::size_t>(planes * in_plane), 0.0);
  for (int64_t pl = 0; pl < planes; ++pl) {
    for (int64_t j = 0; j < out_plane; ++j) {
      const auto o = static_cast<std::size_t>(pl * out_plane + j);
      dx[static_cast<std::size_t>(pl * in_plane + idx[o])] += g[o];
    }
    if (p.empty()) continue;
    for (int64_t j = 0; j < out_plane; ++j) {
      const auto o = static_cast<std::size_t>(pl * out_plane + j);
      dx[static_cast<std::size_t>(pl * in_plane + idx[o])] *= p[o] > 0 ? 1.0 : 0.0;
    }
  }
  return dx;
}

Tensor backward(const Tensor& grad, const Tensor& indices, const Tensor& pooled, int64_t in_h,
                int64_t in_w) {
  const PoolGradAttrs a{.input = {in_h, in_w}};
  if (!pooled.defined()) {
    Tensor in[2] = {grad, indices};
    return call1(op_max_pool2d_backward(), TensorSpan(in), a);
  }
  Tensor in[3] = {grad, indices, pooled};
  return call1(op_max_pool2d_backward_masked(), TensorSpan(in), a);
}

// Both scatters of a 2x2 / stride-2 pool of x, at every ISA, against the float64 loop.
void check_2x2_backward(const Tensor& x, DType dtype, uint64_t seed) {
  const int64_t in_h = x.shape()[2], in_w = x.shape()[3];
  auto [pooled, indices] = max_pool2d_with_indices(x.to(dtype), {.kernel = 2});
  const Tensor grad = special_values(pooled.shape(), seed).to(dtype);
  const std::vector<double> plain = ref_backward(grad, indices, Tensor(), in_h, in_w);
  const std::vector<double> masked = ref_backward(grad, indices, pooled, in_h, in_w);
  for (CpuIsa isa : isas_up_to_current()) {
    SCOPED_TRACE(cpu_isa_name(isa));
    ScopedMaxCpuIsa cap(isa);
    expect_same(backward(grad, indices, Tensor(), in_h, in_w), plain);
    expect_same(backward(grad, indices, pooled, in_h, in_w), masked);
  }
}

TEST(MaxPoolBackward, TwoByTwoMatchesTheFloat64LoopOnW2sPlanesAndOddSizes) {
  const Shape shapes[] = {{2, 3, 28, 28}, {2, 3, 14, 14}, {1, 2, 7, 7},  {1, 2, 5, 9},
                          {2, 2, 2, 2},   {1, 3, 6, 17},  {1, 1, 4, 40}, {1, 1, 3, 2},
                          {3, 1, 2, 33},  {1, 2, 9, 16}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(to_string(s));
    check_2x2_backward(special_values(s, 7, 0, 4), kFloat32, 11);
  }
}

// Every output-row width from 1 to 20: the 8- and 4-lane vectors, their overlapping last
// chunk, the scalar loop below 4 and the uncovered last column of odd widths.
TEST(MaxPoolBackward, TwoByTwoEveryRowWidth) {
  for (int64_t in_w = 2; in_w <= 41; ++in_w) {
    SCOPED_TRACE(in_w);
    check_2x2_backward(special_values({2, 2, 5, in_w}, in_w, 0, 4), kFloat32, 100 + in_w);
  }
}

// Enough planes that two threads split them.
TEST(MaxPoolBackward, TwoByTwoOverThreads) {
  const int saved = get_num_threads();
  set_num_threads(2);
  check_2x2_backward(special_values({4, 16, 28, 28}, 5, 0, 4), kFloat32, 6);
  set_num_threads(saved);
}

TEST(MaxPoolBackward, TwoByTwoOtherDtypes) {
  for (DType t : {kFloat64, kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    check_2x2_backward(special_values({2, 3, 9, 14}, 8, 0, 4), t, 9);
  }
}

// Strided gradient, indices and pooled values (transposed views): read as their values.
TEST(MaxPoolBackward, NonContiguousInputs) {
  const Tensor x = special_values({2, 3, 12, 10}, 12, 0, 4);
  auto [pooled, indices] = max_pool2d_with_indices(x, {.kernel = 2});
  const Tensor grad = special_values({2, 3, 5, 6}, 13).transpose(2, 3);
  const Tensor idx_t = indices.transpose(2, 3).contiguous().transpose(2, 3);
  const Tensor pooled_t = pooled.transpose(2, 3).contiguous().transpose(2, 3);
  ASSERT_FALSE(grad.is_contiguous());
  ASSERT_FALSE(idx_t.is_contiguous());
  for (CpuIsa isa : isas_up_to_current()) {
    SCOPED_TRACE(cpu_isa_name(isa));
    ScopedMaxCpuIsa cap(isa);
    expect_same(backward(grad, idx_t, pooled_t, 12, 10),
                ref_backward(grad, indices, pooled, 12, 10));
    expect_same(backward(grad, idx_t, Tensor(), 12, 10),
                ref_backward(grad, indices, Tensor(), 12, 10));
  }
}

// The op takes any in-plane indices: a window's index moved to another window (two gradients
// meet), or out of its window entirely, sends that plane through the general scatter; the other
// planes keep the fast path. Overlapping windows (3x3, stride 2) never take it.
TEST(MaxPoolBackward, IndicesOutsideTheirWindowsUseTheGeneralScatter) {
  const Tensor x = special_values({2, 2, 8, 12}, 21, 0, 4);
  auto [pooled, indices] = max_pool2d_with_indices(x, {.kernel = 2});
  Tensor moved = indices.clone();
  int64_t* ip = moved.data<int64_t>();
  ip[24 + 5] = ip[24 + 4];   // plane 1: window (0,5) sends its gradient to window (0,4)'s winner
  ip[72 + 10] = 8 * 12 - 1;  // plane 3: window (1,4) to the plane's last element
  const Tensor grad = special_values(pooled.shape(), 22);
  auto [p3, i3] = max_pool2d_with_indices(x, {.kernel = 3, .stride = 2, .padding = 1});
  const Tensor grad3 = special_values(p3.shape(), 23);
  for (CpuIsa isa : isas_up_to_current()) {
    SCOPED_TRACE(cpu_isa_name(isa));
    ScopedMaxCpuIsa cap(isa);
    for (bool masked : {false, true}) {
      expect_same(backward(grad, moved, masked ? pooled : Tensor(), 8, 12),
                  ref_backward(grad, moved, masked ? pooled : Tensor(), 8, 12));
      expect_same(backward(grad3, i3, masked ? p3 : Tensor(), 8, 12),
                  ref_backward(grad3, i3, masked ? p3 : Tensor(), 8, 12));
    }
  }
}

TEST(MaxPoolBackward, AnIndexOutsideThePlaneIsAnIndexError) {
  auto [pooled, indices] = max_pool2d_with_indices(randn({1, 2, 4, 16}), {.kernel = 2});
  const Tensor grad = ones_like(pooled);
  for (int64_t bad : {int64_t{-1}, int64_t{64}, int64_t{1} << 32}) {
    Tensor idx = indices.clone();
    idx.data<int64_t>()[16 + 3] = bad;
    for (CpuIsa isa : isas_up_to_current()) {
      ScopedMaxCpuIsa cap(isa);
      EXPECT_THROW(backward(grad, idx, Tensor(), 4, 16), IndexError);
      EXPECT_THROW(backward(grad, idx, pooled, 4, 16), IndexError);
    }
  }
}

// The forward for windows other than 2x2 / stride 2 (padding, dilation, overlap, rectangles,
// stride 1), ties, NaNs and infinities, a contiguous and a strided input.
TEST(MaxPoolForward, AnyWindowMatchesTheFloat64Loop) {
  const MaxPool2dOptions options[] = {
      {.kernel = 3, .stride = 2, .padding = 1},
      {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true},
      {.kernel = 3, .stride = 1, .padding = 1},
      {.kernel = {3, 2}, .stride = {2, 3}, .dilation = {2, 1}},
      {.kernel = 2, .stride = 2, .padding = 1},
      {.kernel = 5, .stride = 1, .padding = 2},
      {.kernel = 2, .stride = 1},
  };
  // Rows of 19 outputs and rows of up to 150 (the column-vectorized loop's blocks of 64).
  const Tensor contiguous = special_values({2, 3, 13, 19}, 31, 0, 4);
  const Tensor strided = special_values({2, 3, 19, 13}, 32, 0, 4).transpose(2, 3);
  const Tensor wide = special_values({1, 2, 7, 150}, 33, 0, 4);
  for (const MaxPool2dOptions& o : options) {
    const MaxPool2dAttrs a{.kernel = o.kernel.v,
                           .stride = o.stride.value_or(o.kernel).v,
                           .padding = o.padding.v,
                           .dilation = o.dilation.v,
                           .ceil_mode = o.ceil_mode};
    SCOPED_TRACE(::testing::Message() << "kernel " << a.kernel[0] << "x" << a.kernel[1]
                                      << " stride " << a.stride[0] << "," << a.stride[1]);
    for (const Tensor& x : {contiguous, strided, wide}) {
      for (CpuIsa isa : isas_up_to_current()) {
        SCOPED_TRACE(cpu_isa_name(isa));
        ScopedMaxCpuIsa cap(isa);
        auto [v, idx] = max_pool2d_with_indices(x, o);
        auto [want_v, want_i] = ref_forward(x, a, v.shape()[2], v.shape()[3]);
        expect_same(v, want_v);
        EXPECT_EQ(idx.to_vector<int64_t>(), want_i);
      }
    }
  }
}

// Random windows, strides, paddings, dilations and plane sizes (a fixed seed).
TEST(MaxPoolForward, RandomWindowsMatchTheFloat64Loop) {
  std::mt19937 rng(5);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 60; ++trial) {
    MaxPool2dAttrs a{.kernel = {pick(1, 5), pick(1, 5)},
                     .stride = {pick(1, 3), pick(1, 3)},
                     .dilation = {pick(1, 2), pick(1, 2)},
                     .ceil_mode = pick(0, 1) == 1};
    a.padding = {pick(0, static_cast<int>(a.kernel[0] / 2)),
                 pick(0, static_cast<int>(a.kernel[1] / 2))};
    const int64_t h = pick(static_cast<int>((a.kernel[0] - 1) * a.dilation[0] + 1), 12);
    const int64_t w = pick(static_cast<int>((a.kernel[1] - 1) * a.dilation[1] + 1), 70);
    SCOPED_TRACE(::testing::Message()
                 << "trial " << trial << ": " << h << "x" << w << " kernel " << a.kernel[0] << "x"
                 << a.kernel[1] << " stride " << a.stride[0] << "," << a.stride[1] << " padding "
                 << a.padding[0] << "," << a.padding[1] << " dilation " << a.dilation[0] << ","
                 << a.dilation[1]);
    const Tensor x = special_values({1, 2, h, w}, 40 + trial, 0, 4);
    const MaxPool2dOptions o{.kernel = {a.kernel[0], a.kernel[1]},
                             .stride = {a.stride[0], a.stride[1]},
                             .padding = {a.padding[0], a.padding[1]},
                             .dilation = {a.dilation[0], a.dilation[1]},
                             .ceil_mode = a.ceil_mode};
    for (CpuIsa isa : isas_up_to_current()) {
      ScopedMaxCpuIsa cap(isa);
      auto [v, idx] = max_pool2d_with_indices(x, o);
      auto [want_v, want_i] = ref_forward(x, a, v.shape()[2], v.shape()[3]);
      expect_same(v, want_v);
      ASSERT_EQ(idx.to_vector<int64_t>(), want_i) << cpu_isa_name(isa);
    }
  }
}

TEST(MaxPoolForward, AnyWindowOtherDtypes) {
  const MaxPool2dOptions o{.kernel = 3, .stride = 2, .padding = 1};
  const MaxPool2dAttrs a{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}};
  for (DType t : {kFloat64, kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    const Tensor x = special_values({2, 3, 11, 70}, 34, 0, 4).to(t);
    auto [v, idx] = max_pool2d_with_indices(x, o);
    auto [want_v, want_i] = ref_forward(x, a, v.shape()[2], v.shape()[3]);
    expect_same(v, want_v);
    EXPECT_EQ(idx.to_vector<int64_t>(), want_i);
  }
}

}  // namespace
}  // namespace ath
