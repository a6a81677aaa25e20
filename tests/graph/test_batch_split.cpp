// graph::batch_coupling on traced graphs: what it proves per-sample (pointwise ops with
// batch-free constants, reshapes that keep the batch blocks, row-wise kernels) and each way a
// graph can mix samples (a reduction or softmax over the batch, a transpose, a slice, a constant
// with a batch axis, a reshape that cuts across samples, an in-place write).
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/graph/batch_split.h"
#include "athanor/graph/tracer.h"

namespace ath::graph {
namespace {

constexpr int64_t kBatch = 6;

// The graph of fn(x) for x [kBatch, 4].
template <class Fn>
Graph trace(Fn fn) {
  NoGradGuard no_grad;
  const Tensor x = randn({kBatch, 4});
  Tracer tracer({x});
  const Tensor y = fn(x);
  return tracer.finish({y});
}

template <class Fn>
std::string coupling(Fn fn) {
  return batch_coupling(trace(fn), kBatch);
}

TEST(BatchCoupling, RowWiseGraphsArePerSample) {
  const Tensor w = randn({3, 4}), b = randn({3}), scale = randn({4});
  EXPECT_EQ(coupling([](const Tensor& x) { return relu(x); }), "");
  EXPECT_EQ(coupling([&](const Tensor& x) { return x * scale + 1.0; }), "");  // no batch axis
  EXPECT_EQ(coupling([&](const Tensor& x) { return linear(x, w, b); }), "");
  EXPECT_EQ(coupling([&](const Tensor& x) { return softmax(linear(x, w, b), 1); }), "");
  EXPECT_EQ(coupling([](const Tensor& x) { return layer_norm(x, {4}); }), "");
  // Reshapes whose first dimension stays a multiple of the batch keep each sample's block.
  EXPECT_EQ(coupling([](const Tensor& x) { return relu(x.reshape({kBatch * 2, 2})); }), "");
  EXPECT_EQ(coupling([](const Tensor& x) { return x.reshape({kBatch, 2, 2}) * 2.0; }), "");
  // A sample's rows of a constant table, picked by index.
  const Tensor table = randn({10, 4});
  EXPECT_EQ(batch_coupling(
                [&] {
                  NoGradGuard no_grad;
                  const Tensor idx = randint(0, 10, {kBatch});
                  Tracer tracer({idx});
                  const Tensor y = index_select(table, 0, idx);
                  return tracer.finish({y});
                }(),
                kBatch),
            "");
}

TEST(BatchCoupling, GraphsThatMixSamplesSayWhere) {
  auto expect_coupled = [](const std::string& why, const std::string& op) {
    EXPECT_NE(why, "");
    EXPECT_NE(why.find(op), std::string::npos) << why;
  };
  expect_coupled(coupling([](const Tensor& x) { return x - mean(x, {0}, true); }), "mean");
  expect_coupled(coupling([](const Tensor& x) { return softmax(x, 0); }), "softmax");
  expect_coupled(coupling([](const Tensor& x) { return x.t().contiguous(); }), "");
  expect_coupled(coupling([](const Tensor& x) { return x.narrow(0, 1, 3) * 2.0; }), "slice");
  const Tensor per_row = randn({kBatch, 4});  // a constant with the batch axis
  expect_coupled(coupling([&](const Tensor& x) { return x + per_row; }), "add");
  // [6, 4] -> [4, 6]: the first dimension no longer splits into the batch's blocks.
  expect_coupled(coupling([](const Tensor& x) { return relu(x.reshape({4, kBatch})); }), "view");
  expect_coupled(coupling([](const Tensor& x) {
                   Tensor y = x * 1.0;
                   y.add_(x);
                   return y;
                 }),
                 "in place");
}

TEST(BatchCoupling, ArgumentsMustLeadWithTheBatch) {
  const Graph g = trace([](const Tensor& x) { return relu(x); });
  EXPECT_EQ(batch_coupling(g, kBatch), "");
  EXPECT_NE(batch_coupling(g, 3).find("argument"), std::string::npos);  // 6 rows, batch 3
  EXPECT_NE(batch_coupling(g, 0), "");
}

}  // namespace
}  // namespace ath::graph
