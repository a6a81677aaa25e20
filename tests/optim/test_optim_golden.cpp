// Optimizer trajectories against PyTorch 1.13 (tests/golden/optim.json, written by
// tools/golden/optim.py): 20 steps of every optimizer and option mix on a quadratic objective,
// in float64 and float32, compared after each step; "_big" cases take PyTorch's vectorized
// kernel path as well as its scalar tail. The kernels fuse exactly where PyTorch's
// AVX2 kernels do, so float32 trajectories are expected to match bit for bit; the tolerances
// below are what the contract promises.
#include <gtest/gtest.h>

#include "optim_test_util.h"
#include "support/golden.h"

namespace ath::testing {
namespace {

struct Trajectory {
  std::vector<std::vector<double>> steps;  // concatenated p0, p1 after each step
  std::vector<double> p2;                  // the parameter that never gets a gradient
};

std::vector<Tensor> initial_params(const GoldenCase& c) {
  DType dt = c.attrs["dtype"] == "float64" ? kFloat64 : kFloat32;
  std::vector<double> init = c.t("init").to_vector<double>();
  const Shape s0(c.attrs["p0_shape"].get<std::vector<int64_t>>());
  const auto n0 = static_cast<std::ptrdiff_t>(numel(s0));
  Tensor p0 = from_vector(std::vector<double>(init.begin(), init.begin() + n0), s0).to(dt);
  Tensor p1 = from_vector(std::vector<double>(init.begin() + n0, init.end()), Shape{4}).to(dt);
  Tensor p2 = c.t("p2").to(dt).clone();
  return {p0.requires_grad_(), p1.requires_grad_(), p2.requires_grad_()};
}

std::vector<optim::ParamGroup> groups_of(const GoldenCase& c, const std::vector<Tensor>& ps) {
  if (!c.attrs.contains("groups")) return {{.params = ps}};
  std::vector<optim::ParamGroup> out;
  for (const json& g : c.attrs["groups"]) {
    std::vector<Tensor> members;
    for (int64_t i : g["params"].get<std::vector<int64_t>>()) members.push_back(ps[i]);
    out.push_back(group_from_json(g, members));
  }
  return out;
}

Trajectory run(const GoldenCase& c) {
  std::vector<Tensor> ps = initial_params(c);
  auto opt = make_optimizer(c.attrs["optimizer"], c.attrs["options"], groups_of(c, ps));
  Trajectory out;
  for (int t = 0; t < c.attrs["steps"].get<int>(); ++t) {
    set_quadratic_grads({ps[0], ps[1]}, t);
    opt->step();
    out.steps.push_back(concat_values({ps[0], ps[1]}));
  }
  out.p2 = ps[2].to_vector<double>();
  return out;
}

TEST(OptimGolden, TrajectoriesMatchPyTorch) {
  const std::vector<GoldenCase> cases = load_golden("optim");
  ASSERT_EQ(cases.size(), 45u);
  int64_t bitwise_f32 = 0, total_f32 = 0;
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.name);
    const bool f64 = c.attrs["dtype"] == "float64";
    const double rtol = f64 ? 1e-6 : 1e-5, atol = f64 ? 1e-12 : 1e-7;
    Trajectory got = run(c);
    std::vector<double> want = c.t("traj").to_vector<double>();
    const std::size_t n = got.steps[0].size();
    ASSERT_EQ(want.size(), got.steps.size() * n);
    for (std::size_t t = 0; t < got.steps.size(); ++t) {
      for (std::size_t k = 0; k < n; ++k) {
        const double g = got.steps[t][k], w = want[t * n + k];
        ASSERT_LE(std::abs(g - w), atol + rtol * std::abs(w))
            << "step " << t + 1 << " element " << k << ": got " << g << ", want " << w;
        if (!f64) {
          ++total_f32;
          bitwise_f32 += g == w;
        }
      }
    }
    EXPECT_EQ(got.p2, c.t("p2").to_vector<double>()) << "a parameter without grad moved";
  }
  // Same arithmetic as PyTorch's kernels, in the same order: float32 matches bit for bit.
  EXPECT_EQ(bitwise_f32, total_f32);
}

}  // namespace
}  // namespace ath::testing
