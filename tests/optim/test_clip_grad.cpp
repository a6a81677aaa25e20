// clip_grad_norm_ and clip_grad_value_ against naive float64 references.
#include <gtest/gtest.h>

#include <cmath>

#include "athanor/athanor.h"
#include "athanor/optim/clip_grad.h"

namespace ath::testing {
namespace {

using optim::clip_grad_norm_;
using optim::clip_grad_value_;

struct Params {
  std::vector<Tensor> params;
  std::vector<std::vector<double>> grads;  // as set, in float64
};

Params make(DType dt, uint64_t seed = 5) {
  Generator gen(seed);
  Params p;
  for (Shape s : {Shape{7, 9}, Shape{13}, Shape{3, 2, 2}}) {
    Tensor t = zeros(s, dt).requires_grad_();
    Tensor g = (randn(s, {.generator = &gen}) * 3.0).to(dt);
    t.set_grad(g);
    p.params.push_back(t);
    p.grads.push_back(g.to_vector<double>());
  }
  p.params.push_back(zeros({4}, dt).requires_grad_());  // no grad: ignored
  return p;
}

double reference_norm(const Params& p, double q) {
  double acc = 0;
  for (const auto& g : p.grads)
    for (double v : g)
      acc = std::isinf(q) ? std::max(acc, std::abs(v)) : acc + std::pow(std::abs(v), q);
  return std::isinf(q) ? acc : std::pow(acc, 1 / q);
}

TEST(ClipGrad, NormMatchesAFloat64ReferenceAndScales) {
  for (DType dt : {kFloat64, kFloat32}) {
    for (double q : {2.0, 1.0, 3.0, double(INFINITY)}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " p=" + std::to_string(q));
      Params p = make(dt);
      const double want = reference_norm(p, q);
      const double max_norm = want / 4;
      const double got = clip_grad_norm_(p.params, max_norm, q).item<double>();
      const double tol = dt == kFloat64 ? 1e-12 : 1e-6;
      EXPECT_NEAR(got, want, tol * want);
      const double coef = max_norm / (want + 1e-6);
      for (std::size_t i = 0; i < p.grads.size(); ++i) {
        std::vector<double> g = p.params[i].grad().to_vector<double>();
        for (std::size_t k = 0; k < g.size(); ++k)
          ASSERT_NEAR(g[k], p.grads[i][k] * coef, tol * std::abs(p.grads[i][k]) + 1e-12);
      }
      EXPECT_FALSE(p.params[3].grad().defined());
    }
  }
}

TEST(ClipGrad, SmallNormsLeaveGradsUntouched) {
  Params p = make(kFloat32);
  const double n = clip_grad_norm_(p.params, 1e9).item<double>();
  EXPECT_GT(n, 0);
  // Bitwise untouched (the scale clamps to 1; the op still counts as a write, as PyTorch's
  // _foreach_mul_ does, since whether it scales is decided on the device).
  EXPECT_EQ(p.params[0].grad().to_vector<double>(), p.grads[0]);
  Tensor none = clip_grad_norm_({zeros({2}).requires_grad_()}, 1.0);  // no grads at all
  EXPECT_EQ(none.item<double>(), 0.0);
  EXPECT_EQ(none.dim(), 0);
}

TEST(ClipGrad, NonFiniteNorms) {
  Params p = make(kFloat32);
  Tensor g = p.params[1].grad();
  g.fill_(INFINITY);
  try {
    clip_grad_norm_(p.params, 1.0, 2.0, /*error_if_nonfinite=*/true);
    ADD_FAILURE() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos);
  }
  EXPECT_EQ(p.params[0].grad().to_vector<double>(), p.grads[0]);  // nothing scaled
  // PyTorch scales anyway: 0 * inf = nan.
  const double n = clip_grad_norm_(p.params, 1.0).item<double>();
  EXPECT_TRUE(std::isinf(n));
  EXPECT_EQ(p.params[0].grad().to_vector<float>()[0], 0.0f);
  EXPECT_TRUE(std::isnan(p.params[1].grad().to_vector<float>()[0]));
  EXPECT_THROW(clip_grad_norm_(p.params, 1.0, 0.0), ValueError);
  EXPECT_THROW(clip_grad_norm_(p.params, 1.0, -2.0), ValueError);
}

TEST(ClipGrad, NormDoesNotDependOnTheThreadCount) {
  Generator gen(11);
  Tensor w = zeros({300001}).requires_grad_();
  Tensor g = randn({300001}, {.generator = &gen});
  const int saved = get_num_threads();
  std::vector<double> norms;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    w.set_grad(g.clone());
    norms.push_back(clip_grad_norm_({w}, 1e9).item<double>());
  }
  set_num_threads(saved);
  EXPECT_EQ(norms[0], norms[1]);
}

TEST(ClipGrad, ValueClampsAndKeepsNaN) {
  Tensor a = zeros({5}).requires_grad_();
  a.set_grad(from_vector<float>({-3, -0.5, 0.25, 2, NAN}));
  Tensor b = zeros({2, 2}, kFloat64).requires_grad_();
  b.set_grad(from_vector<double>({1, -1, 0.1, 5}, Shape{2, 2}).t());  // non-contiguous grad
  clip_grad_value_({a, b, zeros({1}).requires_grad_()}, 0.5);
  std::vector<float> ga = a.grad().to_vector<float>();
  EXPECT_EQ(std::vector<float>(ga.begin(), ga.begin() + 4),
            (std::vector<float>{-0.5, -0.5, 0.25, 0.5}));
  EXPECT_TRUE(std::isnan(ga[4]));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{0.5, 0.1, -0.5, 0.5}));
}

}  // namespace
}  // namespace ath::testing
