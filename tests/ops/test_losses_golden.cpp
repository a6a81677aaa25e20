// Loss functions against PyTorch 1.13 (tests/golden/losses.json, written by
// tools/golden/losses.py): every loss with each option combination, its value and the gradients
// of input (and floating target) for a fixed upstream gradient. NaN and infinities (the mean of
// an empty batch, all-ignored targets, saturated binary_cross_entropy) must match exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "athanor/athanor.h"
#include "support/golden.h"

namespace ath::testing {
namespace {

const std::vector<GoldenCase>& cases() {
  static const std::vector<GoldenCase> c = load_golden("losses");
  return c;
}

Tensor golden(const GoldenCase& c, const std::string& key) { return c.with_nonfinite(key); }

Tensor optional(const GoldenCase& c, const std::string& key) {
  return c.tensors.count(key) ? golden(c, key) : Tensor();
}

// |got - want| <= atol + rtol * |want|; NaN matches NaN, infinities must be equal.
void expect_match(const Tensor& got, const Tensor& want, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape())
      << what << ": shape " << to_string(got.shape()) << " vs " << to_string(want.shape());
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) || std::isinf(w[i])) {
      EXPECT_TRUE(std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i])
          << what << ": element " << i << " got " << g[i] << ", want " << w[i];
      continue;
    }
    ASSERT_LE(std::abs(g[i] - w[i]), atol + rtol * std::abs(w[i]))
        << what << ": element " << i << " got " << g[i] << ", want " << w[i];
  }
}

Reduction reduction(const GoldenCase& c) {
  const std::string r = c.attrs.at("reduction").get<std::string>();
  if (r == "none") return Reduction::None;
  if (r == "sum") return Reduction::Sum;
  if (r == "batchmean") return Reduction::BatchMean;
  return Reduction::Mean;
}

Tensor run_loss(const GoldenCase& c, const Tensor& x, const Tensor& t) {
  const std::string loss = c.attrs.at("loss").get<std::string>();
  const Reduction r = reduction(c);
  Tensor w = optional(c, "weight"), pw = optional(c, "pos_weight");
  if (loss == "cross_entropy") {
    return cross_entropy(x, t,
                         {.weight = w,
                          .ignore_index = c.attrs.at("ignore_index").get<int64_t>(),
                          .reduction = r,
                          .label_smoothing = c.attrs.at("label_smoothing").get<double>()});
  }
  if (loss == "nll_loss") {
    return nll_loss(
        x, t,
        {.weight = w, .ignore_index = c.attrs.at("ignore_index").get<int64_t>(), .reduction = r});
  }
  if (loss == "mse_loss") return mse_loss(x, t, r);
  if (loss == "l1_loss") return l1_loss(x, t, r);
  if (loss == "smooth_l1_loss") {
    return smooth_l1_loss(x, t, {.reduction = r, .beta = c.attrs.at("beta").get<double>()});
  }
  if (loss == "huber_loss") {
    return huber_loss(x, t, {.reduction = r, .delta = c.attrs.at("delta").get<double>()});
  }
  if (loss == "binary_cross_entropy") {
    return binary_cross_entropy(x, t, {.weight = w, .reduction = r});
  }
  if (loss == "binary_cross_entropy_with_logits") {
    return binary_cross_entropy_with_logits(x, t, {.weight = w, .pos_weight = pw, .reduction = r});
  }
  if (loss == "kl_div") {
    return kl_div(x, t, {.reduction = r, .log_target = c.attrs.at("log_target").get<bool>()});
  }
  throw std::runtime_error("losses golden: unknown loss " + loss);
}

TEST(LossesGolden, ValuesAndGradientsMatchTorch) {
  ASSERT_GE(cases().size(), 150u);
  for (const GoldenCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const bool f32 = c.t("input").dtype() == kFloat32;
    const double rtol = f32 ? 1e-5 : 1e-9, atol = f32 ? 1e-5 : 1e-10;
    Tensor x = golden(c, "input").clone().requires_grad_();
    Tensor t = golden(c, "target").clone();
    const bool diff_target = c.tensors.count("dtarget") > 0;
    if (diff_target) t.requires_grad_();
    Tensor out = run_loss(c, x, t);
    expect_match(out, golden(c, "out"), rtol, atol, c.name + " out");
    std::vector<Tensor> wrt{x};
    if (diff_target) wrt.push_back(t);
    const bool second = c.tensors.count("ddinput") > 0;
    std::vector<Tensor> g =
        grad({out}, wrt, {golden(c, "gy")}, {.retain_graph = second, .create_graph = second});
    expect_match(g[0], golden(c, "dinput"), rtol, atol, c.name + " dinput");
    if (diff_target) expect_match(g[1], golden(c, "dtarget"), rtol, atol, c.name + " dtarget");
    if (!second) continue;
    // Double backward: the gradients of sum(v * dinput).
    Tensor s = (g[0] * golden(c, "v")).sum();
    std::vector<Tensor> dd;
    if (s.requires_grad()) {
      dd = grad({s}, wrt, {}, {}, /*allow_unused=*/true);
    }
    dd.resize(wrt.size());
    for (std::size_t i = 0; i < wrt.size(); ++i) {
      if (!dd[i].defined()) dd[i] = zeros_like(wrt[i]);
    }
    expect_match(dd[0], golden(c, "ddinput"), rtol, atol, c.name + " ddinput");
    if (diff_target) expect_match(dd[1], golden(c, "ddtarget"), rtol, atol, c.name + " ddtarget");
  }
}

// Every loss and option combination the generator promises is there (guards against a
// generator edit silently dropping cases).
TEST(LossesGolden, CoversEveryLossAndEdgeCase) {
  std::set<std::string> losses, names;
  for (const GoldenCase& c : cases()) {
    losses.insert(c.attrs.at("loss").get<std::string>());
    names.insert(c.name);
  }
  for (const char* l :
       {"cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
        "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"}) {
    EXPECT_TRUE(losses.count(l)) << l;
  }
  for (const char* n :
       {"cross_entropy_4d_mean", "cross_entropy_all_ignored_mean_ls0.2", "cross_entropy_empty_mean",
        "cross_entropy_empty_4d_mean", "cross_entropy_zero_total_weight_ls0.2",
        "nll_loss_all_ignored_mean", "cross_entropy_prob_4d_none", "kl_div_batchmean_log_target",
        "mse_loss_empty_mean", "binary_cross_entropy_saturated"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
}

}  // namespace
}  // namespace ath::testing
