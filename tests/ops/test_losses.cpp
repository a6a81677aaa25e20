// Loss behaviour beyond the op table and the goldens: bitwise thread-count independence of the
// fused kernels (forward and backward), agreement of the fused cross_entropy with its
// composition, and the gradient through cross_entropy's auxiliary lse output.
#include <gtest/gtest.h>

#include <cstring>

#include "athanor/athanor.h"

namespace ath {
namespace {

class ThreadCount {
 public:
  ThreadCount() : saved_(get_num_threads()) {}
  ~ThreadCount() { set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0;
}

// Runs loss_fn(x) and its gradient with 1 and with 2 threads; expects the same bits.
template <class Fn>
void expect_thread_independent(const Tensor& x0, const Fn& loss_fn, const char* what) {
  ThreadCount restore;
  std::vector<Tensor> results[2];
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Tensor x = x0.clone().requires_grad_();
    Tensor loss = loss_fn(x);
    std::vector<Tensor> g = grad({loss}, {x}, {ones_like(loss)});
    results[threads - 1] = {loss, g[0]};
  }
  EXPECT_TRUE(same_bits(results[0][0], results[1][0])) << what << ": loss differs";
  EXPECT_TRUE(same_bits(results[0][1], results[1][1])) << what << ": gradient differs";
}

TEST(Losses, FusedKernelsAreBitwiseThreadIndependent) {
  manual_seed(7);
  // Many blocks of rows (inner == 1), K-dimensional column blocks, long elementwise inputs.
  Tensor x2 = randn({6000, 37}) * 3.0, t2 = randint(0, 37, {6000}, {.dtype = kInt64});
  Tensor w = rand({37}) + 0.5;
  expect_thread_independent(
      x2,
      [&](const Tensor& x) { return cross_entropy(x, t2, {.weight = w, .label_smoothing = 0.1}); },
      "cross_entropy 2-D mean");
  expect_thread_independent(
      x2, [&](const Tensor& x) { return cross_entropy(x, t2, {.reduction = Reduction::Sum}); },
      "cross_entropy 2-D sum");
  Tensor x4 = randn({4, 5, 70, 90}), t4 = randint(0, 5, {4, 70, 90}, {.dtype = kInt64});
  expect_thread_independent(
      x4, [&](const Tensor& x) { return cross_entropy(x, t4, {.label_smoothing = 0.2}); },
      "cross_entropy 4-D");
  expect_thread_independent(
      x4, [&](const Tensor& x) { return nll_loss(x, t4, {.reduction = Reduction::Sum}); },
      "nll_loss 4-D");
  Tensor y = randn({300, 1000}), p = rand({300, 1000});
  expect_thread_independent(
      y, [&](const Tensor& x) { return mse_loss(x, p); }, "mse_loss");
  expect_thread_independent(
      y, [&](const Tensor& x) { return binary_cross_entropy_with_logits(x, p); },
      "binary_cross_entropy_with_logits");
  expect_thread_independent(
      y, [&](const Tensor& x) { return kl_div(x, p, {.reduction = Reduction::BatchMean}); },
      "kl_div");
}

// The fused op against log_softmax + nll_loss (and, with smoothing, the torch formula written
// with registered ops), values and gradients, on rows long enough for the 16-lane path.
TEST(Losses, FusedCrossEntropyMatchesItsComposition) {
  manual_seed(3);
  Tensor x0 = randn({9, 40, 3}, {.dtype = kFloat64}) * 2.0;
  Tensor t = randint(0, 40, {9, 3}, {.dtype = kInt64});
  Tensor w = rand({40}, {.dtype = kFloat64}) + 0.5;
  for (double ls : {0.0, 0.3}) {
    Tensor x = x0.clone().requires_grad_(), xc = x0.clone().requires_grad_();
    Tensor fused = cross_entropy(x, t, {.weight = w, .label_smoothing = ls});
    Tensor logp = log_softmax(xc, 1);
    Tensor nll = nll_loss(logp, t, {.weight = w});
    Tensor smooth = -(logp * w.view({1, 40, 1})).sum() /
                    nll_loss(zeros_like(logp) - 1.0, t, {.weight = w, .reduction = Reduction::Sum});
    Tensor composed = nll * (1 - ls) + smooth * (ls / 40);
    EXPECT_NEAR(fused.item<double>(), composed.item<double>(), 1e-12) << "ls " << ls;
    Tensor g1 = grad({fused}, {x})[0], g2 = grad({composed}, {xc})[0];
    EXPECT_LT(max((g1 - g2).abs()).item<double>(), 1e-14) << "ls " << ls;
  }
}

// lse (output 1 of the op) is logsumexp over the classes; a gradient flowing into it reaches x
// as softmax, added to the loss's own gradient.
TEST(Losses, CrossEntropyLseOutputIsDifferentiable) {
  manual_seed(5);
  Tensor x = randn({4, 6}, {.dtype = kFloat64}).requires_grad_();
  Tensor t = randint(0, 6, {4}, {.dtype = kInt64});
  Outputs o = call(op_cross_entropy(), std::vector<Tensor>{x, t, empty({0})},
                   CrossEntropyAttrs{.reduction = Reduction::Sum});
  Tensor lse_ref = logsumexp(x, {1});
  EXPECT_LT(max((o[1] - lse_ref).abs()).item<double>(), 1e-12);
  Tensor both = o[0] + (o[1] * 2.0).sum();
  Tensor g = grad({both}, {x})[0];
  Tensor xr = x.detach().clone().requires_grad_();
  Tensor ref =
      cross_entropy(xr, t, {.reduction = Reduction::Sum}) + (logsumexp(xr, {1}) * 2.0).sum();
  Tensor gr = grad({ref}, {xr})[0];
  EXPECT_LT(max((g - gr).abs()).item<double>(), 1e-12);
}

}  // namespace
}  // namespace ath
