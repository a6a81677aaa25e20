// SessionOptions::batch_parallel: a small CNN (convolution, residual add, max pool, flatten,
// classifier — the ops W2's CNN and ResNet run blocked) with a symbolic batch runs as one
// stream per thread on equal shares of the batch, with the whole batch's result; models whose
// batch the streams cannot split (samples mixed across the batch, a fixed batch, a batch not
// divisible by the threads) run whole and still compute the right thing.
#include <athanor/athanor.h>
#include <athanor/onnx/session.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "onnx/model_builder.h"

namespace ath::onnx {
namespace {

using testing::Dim;
using testing::ModelBuilder;
constexpr int kF = ::onnx::TensorProto::FLOAT;

struct SmallCnn {
  Tensor w0 = randn({16, 2, 3, 3}) * 0.3, b0 = randn({16}) * 0.1;
  Tensor w1 = randn({16, 16, 3, 3}) * 0.1, b1 = randn({16}) * 0.1;
  Tensor wf = randn({5, 16 * 4 * 4}) * 0.1, bf = randn({5});

  // `batch`: the input's first dimension ("N": symbolic). `mix`: subtracts the batch mean of
  // the logits (ReduceMean over axis 0), which couples the samples.
  std::string save(const Dim& batch, bool mix = false) const {
    ModelBuilder m(13);
    m.input("x", kF, {batch, 2, 8, 8});
    for (auto [name, t] :
         {std::pair{"w0", w0}, {"b0", b0}, {"w1", w1}, {"b1", b1}, {"wf", wf}, {"bf", bf}})
      m.initializer(name, t);
    for (auto [x, w, b, y] : {std::tuple{"x", "w0", "b0", "c0"}, {"r0", "w1", "b1", "c1"}}) {
      auto* n = m.node("Conv", {x, w, b}, {y});
      ModelBuilder::attr(n, "pads", std::vector<int64_t>{1, 1, 1, 1});
      if (std::string(y) == "c0") m.node("Relu", {"c0"}, {"r0"});
    }
    m.node("Add", {"c1", "r0"}, {"s1"});
    m.node("Relu", {"s1"}, {"r1"});
    auto* pool = m.node("MaxPool", {"r1"}, {"p1"});
    ModelBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
    ModelBuilder::attr(pool, "strides", std::vector<int64_t>{2, 2});
    m.node("Flatten", {"p1"}, {"f"});
    auto* gemm = m.node("Gemm", {"f", "wf", "bf"}, {mix ? "logits" : "y"});
    ModelBuilder::attr(gemm, "transB", int64_t{1});
    if (mix) {
      auto* mean = m.node("ReduceMean", {"logits"}, {"centre"});
      ModelBuilder::attr(mean, "axes", std::vector<int64_t>{0});
      m.node("Sub", {"logits", "centre"}, {"y"});
    }
    m.output("y", kF);
    return m.save(mix ? "small_cnn_mixed" : "small_cnn");
  }

  Tensor reference(const Tensor& x, bool mix = false) const {
    const Tensor r0 = relu(conv2d(x, w0, b0, {.padding = 1}));
    const Tensor r1 = relu(conv2d(r0, w1, b1, {.padding = 1}) + r0);
    const Tensor y =
        linear(max_pool2d(r1, {.kernel = 2, .stride = 2}).reshape({x.size(0), -1}), wf, bf);
    return mix ? y - mean(y, {0}, true) : y;
  }
};

constexpr CloseOptions kTol{.rtol = 1e-4, .atol = 1e-5};

TEST(BatchParallel, StreamsComputeTheWholeBatchsResult) {
  manual_seed(3);
  const SmallCnn net;
  const std::string path = net.save("N");
  InferenceSession streams(path, {.threads = 2, .batch_parallel = BatchParallel::On});
  InferenceSession whole(path, {.threads = 2, .batch_parallel = BatchParallel::Off});
  for (int64_t batch : {4, 6}) {
    const Tensor x = randn({batch, 2, 8, 8});
    const Tensor expected = net.reference(x);
    for (int run = 0; run < 2; ++run) {  // the traced run, then a replay as streams
      EXPECT_TRUE(allclose(streams.run({{"x", x}})[0], expected, kTol));
      EXPECT_TRUE(allclose(whole.run({{"x", x}})[0], expected, kTol));
    }
  }
  EXPECT_EQ(streams.stats().stream_runs, 2);  // one replay of each batch
  EXPECT_EQ(streams.stats().traces, 2);       // the shares' traces are not the caller's
  EXPECT_EQ(whole.stats().stream_runs, 0);
  // Each sample's row is its own: permuting the batch permutes the result.
  const Tensor x = randn({4, 2, 8, 8});
  const Tensor y = streams.run({{"x", x}})[0];
  const Tensor flipped = streams.run({{"x", flip(x, {0})}})[0];
  EXPECT_TRUE(allclose(flipped, flip(y, {0}), kTol));
}

TEST(BatchParallel, BatchesStreamsCannotSplitRunWhole) {
  manual_seed(4);
  const SmallCnn net;
  const Tensor x = randn({4, 2, 8, 8});
  {  // samples mixed by a mean over the batch
    InferenceSession s(net.save("N", /*mix=*/true),
                       {.threads = 2, .batch_parallel = BatchParallel::On});
    for (int run = 0; run < 2; ++run)
      EXPECT_TRUE(allclose(s.run({{"x", x}})[0], net.reference(x, /*mix=*/true), kTol));
    EXPECT_EQ(s.stats().stream_runs, 0);
  }
  {  // a batch the model fixes
    InferenceSession s(net.save(int64_t{4}), {.threads = 2, .batch_parallel = BatchParallel::On});
    for (int run = 0; run < 2; ++run)
      EXPECT_TRUE(allclose(s.run({{"x", x}})[0], net.reference(x), kTol));
    EXPECT_EQ(s.stats().stream_runs, 0);
  }
  const std::string path = net.save("N");
  {  // a batch that does not divide between the threads, and one thread
    InferenceSession odd(path, {.threads = 2, .batch_parallel = BatchParallel::On});
    InferenceSession one(path, {.threads = 1, .batch_parallel = BatchParallel::On});
    const Tensor x3 = randn({3, 2, 8, 8});
    for (int run = 0; run < 2; ++run) {
      EXPECT_TRUE(allclose(odd.run({{"x", x3}})[0], net.reference(x3), kTol));
      EXPECT_TRUE(allclose(one.run({{"x", x}})[0], net.reference(x), kTol));
    }
    EXPECT_EQ(odd.stats().stream_runs, 0);
    EXPECT_EQ(one.stats().stream_runs, 0);
  }
}

TEST(BatchParallel, AutoRunsWholeWithASavedPlan) {
  manual_seed(6);
  const SmallCnn net;
  const std::string path = net.save("N");
  const std::string plan = path + ".plan";
  std::remove(plan.c_str());
  const Tensor x = randn({8, 2, 8, 8});
  InferenceSession a(path, {.threads = 2, .plan_path = plan});
  a.run({{"x", x}});
  const Tensor want = a.run({{"x", x}})[0];
  InferenceSession b(path, {.threads = 2, .plan_path = plan});
  EXPECT_TRUE(equal(b.run({{"x", x}})[0], want));  // the same graph, the same bits
  EXPECT_EQ(a.stats().stream_runs + b.stats().stream_runs, 0);
  EXPECT_EQ(b.stats().traces, 0);
}

TEST(BatchParallel, AutoChoosesEitherWayWithTheSameResult) {
  manual_seed(5);
  const SmallCnn net;
  InferenceSession s(net.save("N"), {.threads = 2});  // Auto: whichever timed faster
  const Tensor x = randn({8, 2, 8, 8});
  for (int run = 0; run < 3; ++run)
    EXPECT_TRUE(allclose(s.run({{"x", x}})[0], net.reference(x), kTol));
  EXPECT_TRUE(s.stats().stream_runs == 0 || s.stats().stream_runs == 2);
}

}  // namespace
}  // namespace ath::onnx
