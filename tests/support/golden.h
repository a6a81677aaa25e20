// Golden values generated from PyTorch by tools/golden/*.py and committed as
// tests/golden/<name>.json (see tools/golden/common.py for the format).
//
//   for (const GoldenCase& c : load_golden("conv")) {
//     Tensor y = conv2d(c.t("x"), c.t("w"), ..., c.attrs["stride"].get<int64_t>());
//     expect_close(y, c.t("y"), 1e-4, 1e-5);
//   }
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "athanor/athanor.h"

namespace ath::testing {

struct GoldenCase {
  std::string name;
  nlohmann::json attrs;
  std::map<std::string, Tensor> tensors;
  const Tensor& t(const std::string& key) const;  // throws naming the case and key if missing
  // t(key) with the non-finite values the generator encoded in "<key>.nonfinite" put back
  // (JSON has no inf or NaN: codes 1 NaN, 2 +inf, 3 -inf; tools/golden/common.py).
  Tensor with_nonfinite(const std::string& key) const;
};

std::vector<GoldenCase> load_golden(const std::string& name);

// Elementwise |got - want| <= atol + rtol * |want|, reporting the first mismatch.
void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol,
                  const std::string& what = "");

}  // namespace ath::testing
