// Result dtypes of pointwise ops against torch's (tests/golden/type_promotion.json, made by
// tools/golden/type_promotion.py): tensor-tensor pairs (with 0-dim operands), tensor-scalar
// pairs and unary ops over every dtype. Where torch refuses a call, athanor must throw.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "support/golden.h"

namespace ath::testing {
namespace {

using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;
using WithScalar = std::function<Tensor(const Tensor&, const Scalar&)>;
using Unary = std::function<Tensor(const Tensor&)>;

DType dtype_named(const std::string& s) {
  for (DType t : kAllTypes) {
    if (dtype_name(t) == s) return t;
  }
  throw std::runtime_error("unknown dtype " + s);
}

Tensor operand(const nlohmann::json& attrs, const char* dtype_key, const char* dim_key) {
  DType t = dtype_named(attrs.at(dtype_key).get<std::string>());
  return attrs.value(dim_key, 1) == 1 ? ones({2}, t) : ones({}, t);
}

Scalar scalar_of(const nlohmann::json& j) {
  if (j.is_boolean()) return Scalar(j.get<bool>());
  if (j.is_number_integer()) return Scalar(j.get<int64_t>());
  return Scalar(j.get<double>());
}

// Runs one case; returns a description of the mismatch, or "" when athanor agrees with torch.
std::string check(const GoldenCase& c, const std::function<Tensor()>& call) {
  const nlohmann::json& a = c.attrs;
  if (a.contains("kernel_missing")) return "";  // torch lacks a 16-bit CPU kernel athanor has
  try {
    Tensor r = call();
    if (a.contains("error"))
      return c.name + ": torch refuses (" + a["error"].get<std::string>() + "), athanor returned " +
             std::string(dtype_name(r.dtype()));
    std::string want = a.at("result").get<std::string>();
    if (dtype_name(r.dtype()) != want)
      return c.name + ": torch gives " + want + ", athanor " + std::string(dtype_name(r.dtype()));
  } catch (const Error& e) {
    if (!a.contains("error")) return c.name + ": athanor threw: " + e.what();
  }
  return "";
}

void report(const std::vector<std::string>& mismatches, std::size_t checked) {
  EXPECT_GT(checked, 0u);
  std::string all;
  for (std::size_t i = 0; i < mismatches.size() && i < 40; ++i) all += mismatches[i] + "\n";
  EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " of " << checked
                                  << " cases differ from torch:\n"
                                  << all;
}

const std::vector<GoldenCase>& golden() {
  static const std::vector<GoldenCase> cases = load_golden("type_promotion");
  return cases;
}

TEST(TypePromotion, TensorTensorMatchesTorch) {
  const std::map<std::string, Binary> ops = {
      {"add", [](auto& a, auto& b) { return add(a, b); }},
      {"sub", [](auto& a, auto& b) { return sub(a, b); }},
      {"mul", [](auto& a, auto& b) { return mul(a, b); }},
      {"div", [](auto& a, auto& b) { return div(a, b); }},
      {"eq", [](auto& a, auto& b) { return eq(a, b); }},
      {"lt", [](auto& a, auto& b) { return lt(a, b); }},
      {"pow", [](auto& a, auto& b) { return pow(a, b); }},
      {"maximum", [](auto& a, auto& b) { return maximum(a, b); }},
      {"minimum", [](auto& a, auto& b) { return minimum(a, b); }},
      {"fmod", [](auto& a, auto& b) { return fmod(a, b); }},
      {"remainder", [](auto& a, auto& b) { return remainder(a, b); }},
      {"logical_and", [](auto& a, auto& b) { return logical_and(a, b); }},
  };
  std::vector<std::string> bad;
  std::size_t n = 0;
  for (const GoldenCase& c : golden()) {
    if (c.attrs.at("kind") != "binary") continue;
    const Binary& fn = ops.at(c.attrs.at("op").get<std::string>());
    Tensor a = operand(c.attrs, "a", "a_dim"), b = operand(c.attrs, "b", "b_dim");
    std::string m = check(c, [&] { return fn(a, b); });
    if (!m.empty()) bad.push_back(m);
    ++n;
  }
  report(bad, n);
}

TEST(TypePromotion, TensorScalarMatchesTorch) {
  const std::map<std::string, WithScalar> ops = {
      {"add", [](auto& a, auto& s) { return add(a, s); }},
      {"sub", [](auto& a, auto& s) { return sub(a, s); }},
      {"mul", [](auto& a, auto& s) { return mul(a, s); }},
      {"div", [](auto& a, auto& s) { return div(a, s); }},
      {"eq", [](auto& a, auto& s) { return eq(a, s); }},
      {"lt", [](auto& a, auto& s) { return lt(a, s); }},
      {"pow", [](auto& a, auto& s) { return pow(a, s); }},
      {"fmod", [](auto& a, auto& s) { return fmod(a, s); }},
      {"remainder", [](auto& a, auto& s) { return remainder(a, s); }},
      {"clamp_min", [](auto& a, auto& s) { return clamp_min(a, s); }},
  };
  std::vector<std::string> bad;
  std::size_t n = 0;
  for (const GoldenCase& c : golden()) {
    if (c.attrs.at("kind") != "scalar") continue;
    const WithScalar& fn = ops.at(c.attrs.at("op").get<std::string>());
    Tensor a = operand(c.attrs, "a", "a_dim");
    Scalar s = scalar_of(c.attrs.at("scalar"));
    std::string m = check(c, [&] { return fn(a, s); });
    if (!m.empty()) bad.push_back(m);
    ++n;
  }
  report(bad, n);
}

TEST(TypePromotion, UnaryMatchesTorch) {
  const std::map<std::string, Unary> ops = {
      {"exp", [](auto& x) { return exp(x); }},
      {"exp2", [](auto& x) { return exp2(x); }},
      {"log", [](auto& x) { return log(x); }},
      {"log2", [](auto& x) { return log2(x); }},
      {"log1p", [](auto& x) { return log1p(x); }},
      {"expm1", [](auto& x) { return expm1(x); }},
      {"sqrt", [](auto& x) { return sqrt(x); }},
      {"rsqrt", [](auto& x) { return rsqrt(x); }},
      {"reciprocal", [](auto& x) { return reciprocal(x); }},
      {"sin", [](auto& x) { return sin(x); }},
      {"cos", [](auto& x) { return cos(x); }},
      {"tan", [](auto& x) { return tan(x); }},
      {"tanh", [](auto& x) { return tanh(x); }},
      {"sigmoid", [](auto& x) { return sigmoid(x); }},
      {"erf", [](auto& x) { return erf(x); }},
      {"abs", [](auto& x) { return abs(x); }},
      {"sign", [](auto& x) { return sign(x); }},
      {"neg", [](auto& x) { return neg(x); }},
      {"floor", [](auto& x) { return floor(x); }},
      {"ceil", [](auto& x) { return ceil(x); }},
      {"round", [](auto& x) { return round(x); }},
      {"round_decimals", [](auto& x) { return round(x, 1); }},
      {"trunc", [](auto& x) { return trunc(x); }},
      {"relu", [](auto& x) { return relu(x); }},
      {"leaky_relu", [](auto& x) { return leaky_relu(x); }},
      {"elu", [](auto& x) { return elu(x); }},
      {"selu", [](auto& x) { return selu(x); }},
      {"gelu", [](auto& x) { return gelu(x); }},
      {"silu", [](auto& x) { return silu(x); }},
      {"mish", [](auto& x) { return mish(x); }},
      {"softplus", [](auto& x) { return softplus(x); }},
      {"hardtanh", [](auto& x) { return hardtanh(x); }},
      {"hardtanh_positive", [](auto& x) { return hardtanh(x, 0, 2); }},
      {"hardsigmoid", [](auto& x) { return hardsigmoid(x); }},
      {"hardswish", [](auto& x) { return hardswish(x); }},
      {"isnan", [](auto& x) { return isnan(x); }},
      {"isinf", [](auto& x) { return isinf(x); }},
      {"isfinite", [](auto& x) { return isfinite(x); }},
      {"logical_not", [](auto& x) { return logical_not(x); }},
      {"pow_2", [](auto& x) { return pow(x, 2); }},
      {"pow_2.5", [](auto& x) { return pow(x, 2.5); }},
      {"pow_neg1", [](auto& x) { return pow(x, -1); }},
      {"clamp_0_1", [](auto& x) { return clamp(x, 0, 1); }},
      {"clamp_tensor", [](auto& x) { return clamp(x, zeros({2})); }},
      {"lerp", [](auto& x) { return lerp(x, x, 0.5); }},
  };
  std::vector<std::string> bad;
  std::size_t n = 0;
  for (const GoldenCase& c : golden()) {
    if (c.attrs.at("kind") != "unary") continue;
    const Unary& fn = ops.at(c.attrs.at("op").get<std::string>());
    Tensor x = operand(c.attrs, "a", "a_dim");
    std::string m = check(c, [&] { return fn(x); });
    if (!m.empty()) bad.push_back(m);
    ++n;
  }
  report(bad, n);
}

}  // namespace
}  // namespace ath::testing
