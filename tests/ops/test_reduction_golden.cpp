// Reductions against PyTorch 1.13 golden values (tools/golden/reductions.py): outputs, indices,
// result dtypes, and gradients where PyTorch's conventions matter (ties, zeros, masked norms).
#include <gtest/gtest.h>

#include <cmath>

#include "athanor/athanor.h"
#include "support/golden.h"

namespace ath::testing {
namespace {

DimList dims_of(const nlohmann::json& a) {
  DimList d;
  for (int64_t v : a.at("dims").get<std::vector<int64_t>>()) d.push_back(v);
  return d;
}

// The op named in the case's attrs, applied to x: {values, indices (or undefined)}.
ValuesIndices run(const GoldenCase& c, const Tensor& x) {
  const nlohmann::json& a = c.attrs;
  const std::string op = a.at("op");
  auto keepdim = [&] { return a.at("keepdim").get<bool>(); };
  if (op == "prod") return {prod(x, dims_of(a), keepdim()), {}};
  if (op == "amax") return {amax(x, dims_of(a), keepdim()), {}};
  if (op == "amin") return {amin(x, dims_of(a), keepdim()), {}};
  if (op == "max") return {max(x), {}};
  if (op == "min") return {min(x), {}};
  if (op == "max_dim") return max(x, a.at("dim").get<int64_t>(), keepdim());
  if (op == "min_dim") return min(x, a.at("dim").get<int64_t>(), keepdim());
  if (op == "argmax" || op == "argmin") {
    std::optional<int64_t> dim;
    if (!a.at("dim").is_null()) dim = a.at("dim").get<int64_t>();
    return {op == "argmax" ? argmax(x, dim, keepdim()) : argmin(x, dim, keepdim()), {}};
  }
  if (op == "var" || op == "std") {
    const double c0 = a.at("correction").get<double>();
    return {op == "var" ? var(x, dims_of(a), c0, keepdim()) : std(x, dims_of(a), c0, keepdim()),
            {}};
  }
  if (op == "logsumexp") return {logsumexp(x, dims_of(a), keepdim()), {}};
  if (op == "norm")
    return {norm(x, std::stod(a.at("p").get<std::string>()), dims_of(a), keepdim()), {}};
  if (op == "cumsum") return {cumsum(x, a.at("dim").get<int64_t>()), {}};
  if (op == "cumprod") return {cumprod(x, a.at("dim").get<int64_t>()), {}};
  throw std::runtime_error("golden case " + c.name + ": unknown op " + op);
}

TEST(ReductionGolden, MatchesPyTorch) {
  const auto cases = load_golden("reductions");
  ASSERT_FALSE(cases.empty());
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = c.t("x").clone();
    const bool grad = c.tensors.count("gx") > 0;
    if (grad) x.requires_grad_();
    ValuesIndices out = run(c, x);
    const Tensor& want = c.t("y");
    EXPECT_EQ(out.values.dtype(), want.dtype()) << "result dtype";
    EXPECT_EQ(out.values.shape(), want.shape()) << "result shape";
    expect_close(out.values.to(kFloat64), want.to(kFloat64), 1e-12, 1e-12, "values");
    if (c.tensors.count("indices")) {
      EXPECT_EQ(out.indices.dtype(), kInt64);
      expect_close(out.indices.to(kFloat64), c.t("indices").to(kFloat64), 0, 0, "indices");
    }
    if (grad) {
      Tensor gx = zeros_like(x);
      if (out.values.requires_grad()) {
        gx = ath::grad({out.values}, {x}, {c.t("w")}, {}, /*allow_unused=*/true)[0];
        if (!gx.defined()) gx = zeros_like(x);
      }
      expect_close(gx, c.t("gx"), 1e-10, 1e-12, "gradient");
    }
  }
}

}  // namespace
}  // namespace ath::testing
