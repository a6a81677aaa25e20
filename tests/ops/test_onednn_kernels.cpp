// oneDNN-backed kernels beyond the op table: the primitive cache (reuse, eviction, disabled),
// results independent of the thread count, and transposed operands read without copies.
#include <gtest/gtest.h>

#include <random>

#include "athanor/athanor.h"

namespace ath {
namespace {

Tensor filled(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(static_cast<std::size_t>(numel(shape)));
  for (float& x : v) x = dist(rng);
  return from_vector(v, shape);
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.to_vector<float>() == b.to_vector<float>();
}

TEST(OneDnnCache, RepeatedShapesReuseThePrimitive) {
  Tensor a = filled({17, 33}, 1), b = filled({33, 9}, 2);
  mm(a, b);  // builds (or finds) the primitive
  OneDnnCacheStats before = onednn_cache_stats();
  for (int i = 0; i < 5; ++i) mm(a, b);
  OneDnnCacheStats after = onednn_cache_stats();
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_EQ(after.hits, before.hits + 5);
  mm(filled({18, 33}, 3), b);  // a new shape builds a new primitive
  EXPECT_EQ(onednn_cache_stats().misses, before.misses + 1);
}

TEST(OneDnnCache, EvictsLeastRecentlyUsedAndCanBeDisabled) {
  const int64_t capacity = onednn_cache_stats().capacity;
  set_onednn_cache_capacity(2);
  EXPECT_LE(onednn_cache_stats().entries, 2);
  Tensor b = filled({8, 8}, 4);
  Tensor want = mm(filled({3, 8}, 5), b);
  for (int64_t m = 4; m < 8; ++m) mm(filled({m, 8}, 6), b);
  EXPECT_EQ(onednn_cache_stats().entries, 2);
  set_onednn_cache_capacity(0);  // no caching: still computes, builds each time
  const int64_t misses = onednn_cache_stats().misses;
  Tensor got = mm(filled({3, 8}, 5), b);
  mm(filled({3, 8}, 5), b);
  EXPECT_EQ(onednn_cache_stats().misses, misses + 2);
  EXPECT_EQ(onednn_cache_stats().entries, 0);
  EXPECT_TRUE(bitwise_equal(got, want));
  set_onednn_cache_capacity(static_cast<std::size_t>(capacity));
}

TEST(OneDnnKernels, TransposedOperandsMatchContiguousCopies) {
  Tensor a = filled({40, 30}, 7), b = filled({50, 40}, 8);
  Tensor viewed = mm(a.t(), b.t());
  Tensor copied = mm(a.t().contiguous(), b.t().contiguous());
  std::vector<float> x = viewed.to_vector<float>(), y = copied.to_vector<float>();
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-4f * (1 + std::abs(y[i])));
}

// The same inputs give bitwise-identical results with 1 and 2 threads.
TEST(OneDnnKernels, ResultsDoNotDependOnTheThreadCount) {
  const int threads = get_num_threads();
  Tensor a = filled({64, 300}, 9), b = filled({300, 48}, 10);
  Tensor tall = filled({4096, 64}, 14), tall2 = filled({4096, 32}, 15);  // x^T g shapes
  Tensor x = filled({8, 4, 12, 12}, 11), w = filled({6, 4, 3, 3}, 12), bias = filled({6}, 16);
  Tensor gy = filled({8, 6, 12, 12}, 13);
  auto run = [&](int n) {
    set_num_threads(n);
    std::vector<Tensor> out{mm(a, b), mm(a.t().contiguous().t(), b), mm(tall.t(), tall2),
                            mm(tall.t().to(kBFloat16), tall2.to(kBFloat16)).to(kFloat32)};
    for (DType t : {kFloat32, kBFloat16}) {
      Tensor xr = x.to(t).requires_grad_(), wr = w.to(t).requires_grad_();
      Tensor br = bias.to(t).requires_grad_();
      Tensor y = conv2d(xr, wr, br, {.padding = 1});
      for (const Tensor& g : grad({y}, {xr, wr, br}, {gy.to(t)})) out.push_back(g.to(kFloat32));
      out.push_back(y.to(kFloat32));
    }
    return out;
  };
  std::vector<Tensor> one = run(1), two = run(2);
  set_num_threads(threads);
  for (std::size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(bitwise_equal(one[i], two[i])) << i;
}

}  // namespace
}  // namespace ath
