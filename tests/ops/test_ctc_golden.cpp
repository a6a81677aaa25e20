// ctc_loss against PyTorch (tests/golden/ctc.json, written by tools/golden/ctc.py): the loss and
// the gradient of the logits through log_softmax, in float64 at rtol 1e-5 and in float32, for
// padded and concatenated targets, repeats, empty targets, another blank, impossible alignments
// (inf and NaN must match exactly; zero_infinity), zero-length inputs, an unbatched input and
// extreme logits (the log-space path).
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "support/golden.h"

namespace ath::testing {
namespace {

const std::vector<GoldenCase>& cases() {
  static const std::vector<GoldenCase> c = load_golden("ctc");
  return c;
}

Reduction reduction_of(const GoldenCase& c) {
  const std::string r = c.attrs.at("reduction").get<std::string>();
  return r == "none" ? Reduction::None : r == "sum" ? Reduction::Sum : Reduction::Mean;
}

// (loss, dlogits) of one case with logits in dtype t.
std::pair<Tensor, Tensor> run_case(const GoldenCase& c, DType t) {
  Tensor x = c.t("logits").to(t).detach().requires_grad_();
  const CtcLossOptions o{.blank = c.attrs.at("blank").get<int64_t>(),
                         .reduction = reduction_of(c),
                         .zero_infinity = c.attrs.at("zero_infinity").get<bool>()};
  Tensor loss =
      ctc_loss(log_softmax(x, -1), c.t("targets"), c.t("input_lengths"), c.t("target_lengths"), o);
  Tensor gy = c.t("gy").to(t);
  Tensor dx = grad({loss}, {x}, {gy})[0];
  return {loss, dx};
}

// NaN matches NaN and infinities must be equal; finite values within atol + rtol * |want|.
void expect_match(const Tensor& got, const Tensor& want, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!std::isfinite(w[i])) {
      EXPECT_TRUE(std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i])
          << what << " element " << i << ": got " << g[i] << ", want " << w[i];
    } else {
      ASSERT_LE(std::abs(g[i] - w[i]), atol + rtol * std::abs(w[i]))
          << what << " element " << i << ": got " << g[i] << ", want " << w[i];
    }
  }
}

TEST(CtcGolden, MatchesPyTorchInFloat64) {
  ASSERT_GE(cases().size(), 19u);
  for (const GoldenCase& c : cases()) {
    SCOPED_TRACE(c.name);
    auto [loss, dx] = run_case(c, kFloat64);
    EXPECT_EQ(loss.dtype(), kFloat64);
    expect_match(loss, c.with_nonfinite("out"), 1e-5, 1e-12, "loss");
    expect_match(dx, c.with_nonfinite("dlogits"), 1e-5, 1e-12, "dlogits");
  }
}

// float32 log-probabilities: the recursion still runs in float64; what differs is the input's
// and the gradient's rounding (and log_softmax's, in float32).
TEST(CtcGolden, MatchesPyTorchInFloat32) {
  for (const GoldenCase& c : cases()) {
    if (c.name.rfind("extreme", 0) == 0) continue;  // logits of 1e3: float32 log_softmax rounds
    SCOPED_TRACE(c.name);
    auto [loss, dx] = run_case(c, kFloat32);
    EXPECT_EQ(loss.dtype(), kFloat32);
    expect_match(loss.to(kFloat64), c.with_nonfinite("out"), 1e-5, 1e-5, "loss");
    expect_match(dx.to(kFloat64), c.with_nonfinite("dlogits"), 1e-4, 1e-6, "dlogits");
  }
}

}  // namespace
}  // namespace ath::testing
