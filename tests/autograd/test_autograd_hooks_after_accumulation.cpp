// What data-parallel gradient reduction builds on: a leaf's gradient buffer that stays put
// across backward passes, a hook that runs once a leaf's gradient has been accumulated, and
// callbacks queued to run when the whole backward pass has finished.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/optim/sgd.h"

namespace ath {
namespace {

Tensor vec(std::vector<double> v) { return from_vector(v); }
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

TEST(GradBuffer, StaysInPlaceAcrossBackwardPasses) {
  Tensor w = vec({1, 2}).requires_grad_();
  (w * 3.0).sum().backward();
  void* buffer = w.grad().data_ptr();
  (w * 4.0).sum().backward();
  EXPECT_EQ(w.grad().data_ptr(), buffer);  // accumulated into, not replaced
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{7, 7}));

  optim::SGD opt({w}, {.lr = 0.1});
  opt.zero_grad(/*set_to_none=*/false);  // zeroed in place: the same buffer
  (w * 5.0).sum().backward();
  EXPECT_EQ(w.grad().data_ptr(), buffer);
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{5, 5}));
  opt.zero_grad();  // set_to_none: the next backward makes a new buffer
  EXPECT_FALSE(w.grad().defined());
}

TEST(PostAccumulateGradHook, RunsAfterTheGradientIsInGrad) {
  Tensor w = vec({1, 2}).requires_grad_();
  std::vector<std::vector<double>> seen;
  int64_t handle = w.register_post_accumulate_grad_hook([&](const Tensor& param) {
    EXPECT_TRUE(param.is_same(w));  // the parameter itself, as PyTorch passes it
    seen.push_back(vals(param.grad()));
  });
  (w * 3.0).sum().backward();
  (w * 4.0).sum().backward();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::vector<double>{3, 3}));
  EXPECT_EQ(seen[1], (std::vector<double>{7, 7}));  // after accumulation, not the increment

  w.remove_hook(handle);
  (w * 1.0).sum().backward();
  EXPECT_EQ(seen.size(), 2u);
}

TEST(PostAccumulateGradHook, RunsAfterGradientHooksAndNotForGrad) {
  Tensor w = vec({1}).requires_grad_();
  std::vector<std::string> order;
  w.register_hook([&](const Tensor& g) {
    order.push_back("grad hook");
    return g * 2.0;
  });
  w.register_post_accumulate_grad_hook([&](const Tensor& p) {
    order.push_back("post-accumulate hook: " + std::to_string(vals(p.grad())[0]));
  });
  (w * 3.0).sum().backward();
  EXPECT_EQ(order, (std::vector<std::string>{"grad hook", "post-accumulate hook: 6.000000"}));

  order.clear();
  std::vector<Tensor> g = grad({(w * 3.0).sum()}, {w});  // accumulates nothing: no post hook
  EXPECT_EQ(vals(g[0]), (std::vector<double>{3}));
  for (const std::string& event : order)
    EXPECT_EQ(event.find("post-accumulate"), std::string::npos) << event;
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{6}));  // untouched
}

TEST(PostAccumulateGradHook, OnlyOnLeavesThatRequireGrad) {
  Tensor w = vec({1}).requires_grad_();
  Tensor y = w * 2.0;
  EXPECT_THROW(y.register_post_accumulate_grad_hook([](const Tensor&) {}), AutogradError);
  EXPECT_THROW(vec({1}).register_post_accumulate_grad_hook([](const Tensor&) {}), AutogradError);
}

TEST(QueueCallback, RunsOnceEveryGradientIsAccumulated) {
  Tensor a = vec({1}).requires_grad_();
  Tensor b = vec({2}).requires_grad_();
  std::vector<std::string> order;
  bool queued = false;
  auto on_leaf = [&](const std::string& name) {
    return [&, name](const Tensor&) {
      order.push_back(name);
      if (queued) return;
      queued = true;
      queue_callback([&] {
        order.push_back("end of backward");
        EXPECT_TRUE(a.grad().defined() && b.grad().defined());
        queue_callback([&] { order.push_back("queued by a callback"); });
      });
    };
  };
  a.register_post_accumulate_grad_hook(on_leaf("a"));
  b.register_post_accumulate_grad_hook(on_leaf("b"));
  (a * b).sum().backward();
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[2], "end of backward");
  EXPECT_EQ(order[3], "queued by a callback");

  // Queued callbacks belong to one pass: the next backward runs none of them again.
  order.clear();
  queued = true;
  (a * b).sum().backward();
  EXPECT_EQ(order.size(), 2u);
}

TEST(QueueCallback, OutsideABackwardPassIsAnError) {
  EXPECT_THROW(queue_callback([] {}), AutogradError);
  Tensor w = vec({1}).requires_grad_();
  w.register_hook([](const Tensor& g) {
    queue_callback([] { throw ValueError("callback failed"); });
    return g;
  });
  EXPECT_THROW((w * 2.0).sum().backward(), ValueError);  // a callback's error reaches the caller
  EXPECT_THROW(queue_callback([] {}), AutogradError);    // and the pass's list is gone
}

}  // namespace
}  // namespace ath
