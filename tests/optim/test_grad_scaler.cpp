// optim::GradScaler against PyTorch's torch.amp.GradScaler("cpu") (tools/golden/grad_scaler.py):
// the scale sequence, skipped steps, unscaled (and clipped) gradients and the parameter
// trajectory of SGD with momentum, with inf/NaN gradients at three steps; plus the unscale_grads
// op's own contract, the scaler's misuse errors and its state round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "athanor/athanor.h"
#include "athanor/optim/optim.h"
#include "support/golden.h"
#include "support/op_table.h"

namespace ath::testing {
namespace {

using namespace optim;

// unscale_grads writes its inputs, so the op table (one output tensor per row) cannot hold it.
const CoveredElsewhere covered{"unscale_grads", "test_grad_scaler.cpp"};

TEST(GradScaler, MatchesPyTorchsScalesSkippedStepsAndTrajectory) {
  for (const GoldenCase& c : load_golden("grad_scaler")) {
    SCOPED_TRACE(c.name);
    const nlohmann::json& a = c.attrs;
    Tensor p = c.t("init").clone().requires_grad_();
    SGD opt({p}, {.lr = a["lr"].get<double>(), .momentum = a["momentum"].get<double>()});
    GradScaler scaler({.init_scale = a["init_scale"].get<double>(),
                       .growth_factor = a["growth_factor"].get<double>(),
                       .backoff_factor = a["backoff_factor"].get<double>(),
                       .growth_interval = a["growth_interval"].get<int64_t>()});
    const Tensor grads = c.with_nonfinite("grads"), grad_after = c.with_nonfinite("grad_after");
    const std::vector<double> scale_before = c.t("scale_before").to_vector<double>(),
                              scale_after = c.t("scale_after").to_vector<double>();
    const std::vector<int64_t> skipped = c.t("skipped").to(kInt64).to_vector<int64_t>(),
                               tracker = c.t("growth_tracker").to_vector<int64_t>();
    const auto clip_steps = a["unscale_clip_steps"].get<std::vector<int64_t>>();
    const int64_t steps = a["steps"].get<int64_t>();
    for (int64_t t = 0; t < steps; ++t) {
      SCOPED_TRACE("step " + std::to_string(t));
      const auto i = static_cast<std::size_t>(t);
      EXPECT_EQ(scaler.get_scale(), scale_before[i]);
      p.set_grad(scaler.scale(grads[t]));  // the backward of the scaled loss
      if (std::find(clip_steps.begin(), clip_steps.end(), t) !=
          clip_steps.end()) {  // unscale, clip
        scaler.unscale_(opt);
        clip_grad_norm_({p}, a["max_norm"].get<double>());
      }
      const bool stepped = scaler.step(opt);
      EXPECT_EQ(!stepped, skipped[i] != 0);
      // Unscaling by a power of two is exact: bit for bit, NaN where PyTorch has NaN. PyTorch
      // 2.x's clip_grad_norm_ sums the squares in float32, athanor's in double, so a clipped
      // step may differ in the last bit (and the trajectory after it by as little).
      const bool clipped = std::find(clip_steps.begin(), clip_steps.end(), t) != clip_steps.end();
      const double tol = clipped || t > clip_steps[1] ? 1e-6 : 0.0;
      EXPECT_TRUE(allclose(p.grad(), grad_after[t], {.rtol = tol, .atol = 0, .equal_nan = true}))
          << p.grad() << " vs " << grad_after[t];
      scaler.update();
      EXPECT_EQ(scaler.get_scale(), scale_after[i]);
      EXPECT_EQ(scaler.growth_tracker(), tracker[i]);
      EXPECT_TRUE(allclose(p, c.t("traj")[t], {.rtol = tol, .atol = 0}))
          << p << " vs " << c.t("traj")[t];
    }
    EXPECT_EQ(scaler.state_dict(), a["state_dict"]);
  }
}

TEST(GradScaler, StateRoundTripsAndBadStatesAreRefusedWithoutChange) {
  GradScaler a({.init_scale = 1024, .growth_interval = 5});
  Tensor p = ones({3}).requires_grad_();
  SGD opt({p}, {.lr = 0.1});
  for (int i = 0; i < 3; ++i) {
    p.set_grad(a.scale(ones({3})));
    a.step(opt);
    a.update();
  }
  GradScaler b;
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(b.get_scale(), 1024.0);
  EXPECT_EQ(b.growth_tracker(), 3);
  EXPECT_EQ(b.state_dict(), a.state_dict());
  for (const char* key : {"scale", "growth_interval", "_growth_tracker"}) {
    nlohmann::json bad = a.state_dict();
    bad[key] = key == std::string("scale") ? nlohmann::json(-1.0) : nlohmann::json("x");
    GradScaler c;
    EXPECT_THROW(c.load_state_dict(bad), FormatError) << key;
    EXPECT_EQ(c.get_scale(), 65536.0);  // unchanged
  }
  nlohmann::json tracker_past_interval = a.state_dict();
  tracker_past_interval["_growth_tracker"] = 5;
  EXPECT_THROW(b.load_state_dict(tracker_past_interval), FormatError);
}

TEST(GradScaler, MisuseIsRefusedAndDisabledPassesThrough) {
  Tensor p = ones({2}).requires_grad_();
  SGD opt({p}, {.lr = 0.5});
  GradScaler s;
  EXPECT_THROW(s.update(), ValueError);  // nothing recorded yet
  p.set_grad(s.scale(ones({2})));
  s.unscale_(opt);
  EXPECT_THROW(s.unscale_(opt), ValueError);  // twice before update
  EXPECT_TRUE(s.step(opt));
  EXPECT_THROW(s.step(opt), ValueError);  // twice before update
  s.update();
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{0.5f, 0.5f}));  // 1 - 0.5 * 1
  EXPECT_THROW(GradScaler({.growth_factor = 1.0}), ValueError);
  EXPECT_THROW(GradScaler({.backoff_factor = 1.5}), ValueError);
  EXPECT_THROW(GradScaler({.growth_interval = 0}), ValueError);

  GradScaler off({.enabled = false});
  Tensor loss = full({}, 3.0);
  EXPECT_EQ(off.scale(loss).item<float>(), 3.0f);
  EXPECT_EQ(off.get_scale(), 1.0);
  p.set_grad(full({2}, 1.0));
  EXPECT_TRUE(off.step(opt));
  off.update();
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));
}

TEST(UnscaleGradsOp, ScalesEveryDTypeAndLayoutAndFlagsNonFiniteOnly) {
  NoGradGuard no_grad;
  const float inf = std::numeric_limits<float>::infinity();
  Tensor found = zeros({}), inv = full({}, 0.25);
  Tensor f32 = from_vector<float>({4, 8, -12}), f64 = from_vector<double>({2, 6});
  Tensor bf16 = from_vector<float>({4, 16}).to(kBFloat16);
  Tensor strided = from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3}).t();
  std::vector<Tensor> in{found, inv, f32, f64, bf16, strided};
  call(op_unscale_grads(), TensorSpan(in), UnscaleGradsAttrs{});
  EXPECT_EQ(found.item<float>(), 0.0f);
  EXPECT_EQ(f32.to_vector<float>(), (std::vector<float>{1, 2, -3}));
  EXPECT_EQ(f64.to_vector<double>(), (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(bf16.to(kFloat32).to_vector<float>(), (std::vector<float>{1, 4}));
  EXPECT_EQ(strided.contiguous().to_vector<float>(),
            (std::vector<float>{0.25f, 1.0f, 0.5f, 1.25f, 0.75f, 1.5f}));
  // A large gradient (2^20 elements, several threads' chunks) with one inf near the end.
  Tensor big = ones({1 << 20});
  big.narrow(0, (1 << 20) - 3, 1).fill_(inf);
  std::vector<Tensor> in2{found, inv, big};
  call(op_unscale_grads(), TensorSpan(in2), UnscaleGradsAttrs{});
  EXPECT_EQ(found.item<float>(), 1.0f);
  EXPECT_EQ(big[0].item<float>(), 0.25f);
  // found_inf stays set; a clean call does not clear it.
  std::vector<Tensor> in3{found, inv, from_vector<float>({1})};
  call(op_unscale_grads(), TensorSpan(in3), UnscaleGradsAttrs{});
  EXPECT_EQ(found.item<float>(), 1.0f);
  // The type-erased replay (what a graph executor runs) writes the same bits.
  Tensor nan_grad = from_vector<float>({3, std::nanf(""), 5});
  std::vector<Tensor> direct{zeros({}), inv, nan_grad.clone()}, replay{zeros({}), inv, nan_grad};
  call(op_unscale_grads(), TensorSpan(direct), UnscaleGradsAttrs{});
  const UnscaleGradsAttrs attrs;
  op_unscale_grads().run(TensorSpan(replay), &attrs);
  EXPECT_EQ(direct[0].item<float>(), 1.0f);
  EXPECT_EQ(replay[0].item<float>(), 1.0f);
  EXPECT_TRUE(allclose(direct[2], replay[2], {.rtol = 0, .atol = 0, .equal_nan = true}));
  // Bad inputs are refused before anything is written.
  Tensor g = from_vector<float>({8});
  std::vector<Tensor> bad_inv{zeros({}), full({}, 0.5, kFloat64), g};
  EXPECT_THROW(call(op_unscale_grads(), TensorSpan(bad_inv), UnscaleGradsAttrs{}), ValueError);
  std::vector<Tensor> int_grad{zeros({}), inv, zeros({2}, kInt64)};
  EXPECT_THROW(call(op_unscale_grads(), TensorSpan(int_grad), UnscaleGradsAttrs{}), DTypeError);
  std::vector<Tensor> no_grad_list{zeros({}), inv};
  EXPECT_THROW(call(op_unscale_grads(), TensorSpan(no_grad_list), UnscaleGradsAttrs{}), ValueError);
  EXPECT_EQ(g.item<float>(), 8.0f);
}

}  // namespace
}  // namespace ath::testing
