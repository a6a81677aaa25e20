// Learning-rate sequences against PyTorch 1.13 (tests/golden/optim_sched.json, written by
// tools/golden/optim.py): each group's lr after construction and after each of 25 steps, and
// OneCycleLR's momentum / beta1. The formulas are evaluated in the same order with the same libm,
// so the values are expected to be identical; the tolerance only guards against a libm change.
#include <gtest/gtest.h>

#include "sched_test_util.h"
#include "support/golden.h"

namespace ath::testing {
namespace {

// Runs a case the way the generator does: optimizer.step() then scheduler.step() 25 times.
std::pair<std::vector<double>, std::vector<double>> run(const GoldenCase& c) {
  SchedRig r = build_case(c.name, c.attrs);
  std::vector<double> lrs = r.lrs(), mom;
  const bool record_momentum = c.tensors.contains("momentum");
  if (record_momentum) mom = r.momenta();
  const int steps = static_cast<int>(c.t("lr").size(0)) - 1;
  for (int i = 0; i < steps; ++i) {
    r.opt->step();
    if (r.plateau)
      r.plateau->step(c.attrs["metrics"][i].get<double>());
    else if (c.attrs.contains("epochs") && c.attrs["kind"] == "CosineAnnealingWarmRestarts")
      r.sched().step(c.attrs["epochs"][i].get<double>());
    else
      r.sched().step();
    for (double v : r.lrs()) lrs.push_back(v);
    if (record_momentum)
      for (double v : r.momenta()) mom.push_back(v);
    if (!r.plateau) {
      EXPECT_EQ(r.sched().get_last_lr(), r.lrs()) << "get_last_lr after step " << i + 1;
    } else {
      EXPECT_EQ(r.plateau->get_last_lr(), r.lrs());
    }
  }
  return {lrs, mom};
}

void expect_same(const std::vector<double>& got, const Tensor& want, const std::string& what,
                 int64_t& exact) {
  std::vector<double> w = want.to_vector<double>();
  ASSERT_EQ(got.size(), w.size()) << what;
  for (std::size_t i = 0; i < w.size(); ++i) {
    ASSERT_NEAR(got[i], w[i], 1e-13 + 1e-12 * std::abs(w[i]))
        << what << " entry " << i << " (step " << i / 2 << ", group " << i % 2 << ")";
    exact += got[i] == w[i];
  }
}

TEST(SchedulerGolden, LrSequencesMatchPyTorch) {
  const std::vector<GoldenCase> cases = load_golden("optim_sched");
  ASSERT_EQ(cases.size(), 21u);
  int64_t exact = 0, total = 0;
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto [lrs, mom] = run(c);
    expect_same(lrs, c.t("lr"), "lr", exact);
    total += c.t("lr").numel();
    if (c.tensors.contains("momentum")) {
      expect_same(mom, c.t("momentum"), "momentum", exact);
      total += c.t("momentum").numel();
    }
  }
  EXPECT_EQ(exact, total) << "values differ from PyTorch's in the last bits";
}

}  // namespace
}  // namespace ath::testing
