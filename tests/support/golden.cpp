#include "support/golden.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>

namespace ath::testing {

namespace {
DType parse_dtype(const std::string& s) {
  for (DType t : kAllTypes) {
    if (dtype_name(t) == s) return t;
  }
  throw std::runtime_error("golden: unknown dtype " + s);
}
}  // namespace

const Tensor& GoldenCase::t(const std::string& key) const {
  auto it = tensors.find(key);
  if (it == tensors.end())
    throw std::runtime_error("golden case " + name + " has no tensor " + key);
  return it->second;
}

Tensor GoldenCase::with_nonfinite(const std::string& key) const {
  const Tensor& base = t(key);
  auto it = tensors.find(key + ".nonfinite");
  if (it == tensors.end()) return base;
  std::vector<double> v = base.to_vector<double>();
  std::vector<int64_t> codes = it->second.to(kInt64).to_vector<int64_t>();
  const double inf = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (codes[i] == 1) v[i] = std::numeric_limits<double>::quiet_NaN();
    if (codes[i] == 2) v[i] = inf;
    if (codes[i] == 3) v[i] = -inf;
  }
  return from_vector(v, base.shape()).to(base.dtype());
}

std::vector<GoldenCase> load_golden(const std::string& name) {
  std::string path = std::string(ATH_GOLDEN_DIR) + "/" + name + ".json";
  std::ifstream f(path);
  if (!f)
    throw std::runtime_error("golden file missing: " + path + " (run tools/golden/" + name +
                             ".py)");
  nlohmann::json j = nlohmann::json::parse(f);
  std::vector<GoldenCase> cases;
  for (const auto& c : j.at("cases")) {
    GoldenCase gc;
    gc.name = c.at("name").get<std::string>();
    gc.attrs = c.value("attrs", nlohmann::json::object());
    for (const auto& [key, tj] : c.at("tensors").items()) {
      Shape shape(tj.at("shape").get<std::vector<int64_t>>());
      std::vector<double> data = tj.at("data").get<std::vector<double>>();
      gc.tensors[key] = from_vector(data, shape).to(parse_dtype(tj.at("dtype").get<std::string>()));
    }
    cases.push_back(std::move(gc));
  }
  return cases;
}

void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape())
      << what << ": shape " << to_string(got.shape()) << " vs " << to_string(want.shape());
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    ASSERT_LE(std::abs(g[i] - w[i]), atol + rtol * std::abs(w[i]))
        << what << ": element " << i << " got " << g[i] << ", want " << w[i];
  }
}

}  // namespace ath::testing
