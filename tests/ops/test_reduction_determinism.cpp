// Reductions (and row kernels with sums) give bitwise-identical results whatever the thread
// count, and the in-place outer path (reduced dims in front of kept inner dims) gives the same
// bits as reducing a permuted copy.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "athanor/athanor.h"

namespace ath {
namespace {

// Restores the thread count when the test ends, whatever happens.
class ThreadCount {
 public:
  ThreadCount() : saved_(get_num_threads()) {}
  ~ThreadCount() { set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

Tensor random_floats(const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> v(static_cast<std::size_t>(numel(shape)));
  for (float& x : v) x = dist(rng) + 0.25f;  // a nonzero mean: rounding errors show
  return from_vector(v, shape);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0;
}

// Runs fn with 1 and with 2 threads and expects the same bits.
template <class Fn>
void expect_thread_independent(const Fn& fn, const char* what) {
  ThreadCount restore;
  set_num_threads(1);
  Tensor one = fn();
  set_num_threads(2);
  Tensor two = fn();
  EXPECT_TRUE(same_bits(one, two)) << what << " differs between 1 and 2 threads";
}

TEST(ReductionDeterminism, SumAndMeanOfLargeTensorAreBitwiseThreadIndependent) {
  const Tensor x = random_floats({1024, 4096}, 7);  // 4M floats
  expect_thread_independent([&] { return sum(x); }, "full sum");
  expect_thread_independent([&] { return mean(x); }, "full mean");
  expect_thread_independent([&] { return sum(x, {1}); }, "per-row sum");
  expect_thread_independent([&] { return mean(x, {1}); }, "per-row mean");
  expect_thread_independent([&] { return sum(x, {0}); }, "per-column (outer) sum");
  expect_thread_independent([&] { return mean(x, {0}, true); }, "per-column (outer) mean");
}

TEST(ReductionDeterminism, OtherReductionsAreBitwiseThreadIndependent) {
  const Tensor x = random_floats({512, 2048}, 11);
  expect_thread_independent([&] { return norm(x); }, "full norm");
  expect_thread_independent([&] { return var(x); }, "full var");
  expect_thread_independent([&] { return logsumexp(x, {0}); }, "logsumexp over dim 0");
  expect_thread_independent([&] { return std(x, {1}); }, "per-row std");
  expect_thread_independent([&] { return argmax(x); }, "full argmax");
  expect_thread_independent([&] { return max(x, 0).indices; }, "outer max indices");
  expect_thread_independent([&] { return cumsum(x, 0); }, "cumsum");
}

// Row kernels whose rows split across threads: layer norm's backward sums dweight / dbias in
// fixed row blocks, combined in block order; the attention softmax owns whole rows.
TEST(ReductionDeterminism, RowKernelsAreBitwiseThreadIndependent) {
  const Tensor x = random_floats({16, 128, 128}, 13), g = random_floats({16, 128, 128}, 17);
  const Tensor w = random_floats({128}, 19), b = random_floats({128}, 23);
  const LayerNormAttrs fa{.normalized_shape = {128}, .has_weight = true, .has_bias = true};
  const Outputs f = call(op_layer_norm(), std::vector<Tensor>{x, w, b}, fa);
  const std::vector<Tensor> in{g, x, f[1], f[2], w, x};
  const LayerNormBackwardAttrs ba{.normalized_shape = {128}, .has_weight = true};
  for (int k = 0; k < 3; ++k) {
    expect_thread_independent(
        [&] { return call(op_layer_norm_backward(), TensorSpan(in).first(5), ba)[k]; },
        "layer_norm_backward");
    expect_thread_independent([&] { return call(op_layer_norm_backward_add(), in, ba)[k]; },
                              "layer_norm_backward_add");
  }
  expect_thread_independent(
      [&] {
        return call(op_layer_norm(), std::vector<Tensor>{x, w, b}, fa)[0];
      },
      "layer_norm");
  const Tensor s = random_floats({8, 4, 128, 128}, 29);
  expect_thread_independent([&] { return attention_softmax(s, 0.17, true); }, "attention_softmax");
  const Tensor y = attention_softmax(s, 0.17, true);
  expect_thread_independent(
      [&] {
        return call(op_attention_softmax_backward(), std::vector<Tensor>{s, y},
                    AttentionSoftmaxAttrs{.scale = 0.17, .causal = true})[0];
      },
      "attention_softmax_backward");
}

TEST(ReductionDeterminism, OuterPathMatchesPermutedCopyBitwise) {
  // The same values, once contiguous [N, C] (reduced in place, row by row) and once as a
  // transposed view of a [C, N] buffer (copied into a permuted layout, then reduced per run).
  const Tensor x = random_floats({3000, 70}, 3);
  const Tensor xt = x.t().contiguous().t();  // same values, column-major
  ASSERT_FALSE(xt.is_contiguous());
  EXPECT_TRUE(same_bits(sum(x, {0}), sum(xt, {0})));
  EXPECT_TRUE(same_bits(mean(x, {0}), mean(xt, {0})));
  EXPECT_TRUE(same_bits(norm(x, 2, {0}), norm(xt, 2, {0})));
  EXPECT_TRUE(same_bits(amax(x, {0}), amax(xt, {0})));
  EXPECT_TRUE(same_bits(argmin(x, 0), argmin(xt, 0)));
  // Wider than one block of outputs: row-by-row accumulation.
  const Tensor w = random_floats({300, 700}, 9);
  const Tensor wt = w.t().contiguous().t();
  EXPECT_TRUE(same_bits(sum(w, {0}), sum(wt, {0})));
  EXPECT_TRUE(same_bits(max(w, 0).indices, max(wt, 0).indices));
  // A middle reduced block: [A, N, C] over dim 1.
  const Tensor y = random_floats({4, 500, 33}, 5);
  const Tensor yp = y.permute({2, 0, 1}).contiguous().permute({1, 2, 0});
  ASSERT_FALSE(yp.is_contiguous());
  EXPECT_TRUE(same_bits(sum(y, {1}), sum(yp, {1})));
  EXPECT_TRUE(same_bits(prod(y, {1}, true), prod(yp, {1}, true)));
}

}  // namespace
}  // namespace ath
