// isclose / allclose / equal against a float64 reference of PyTorch's rule, element by element,
// with the edge cases that rule is about: infinities, NaN, signed zeros, integers, broadcasting.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "athanor/athanor.h"

namespace ath {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool reference_close(double a, double b, CloseOptions o) {
  if (a == b) return true;
  if (o.equal_nan && std::isnan(a) && std::isnan(b)) return true;
  double error = std::fabs(a - b);
  return std::isfinite(error) && error <= o.atol + o.rtol * std::fabs(b);
}

TEST(Closeness, IsCloseMatchesTheReferenceElementwise) {
  const std::vector<double> values = {0.0,  -0.0, 1.0,   1.0 + 1e-6, 1.0 + 1e-4, -1.0,   1e-9,
                                      1e30, kInf, -kInf, kNaN,       100.0,      100.001};
  for (CloseOptions o : {CloseOptions{}, CloseOptions{.rtol = 0, .atol = 1e-3},
                         CloseOptions{.rtol = 1e-3, .atol = 0, .equal_nan = true}}) {
    std::vector<double> as, bs;
    for (double a : values) {
      for (double b : values) {
        as.push_back(a);
        bs.push_back(b);
      }
    }
    Tensor got = isclose(from_vector(as), from_vector(bs), o);
    ASSERT_EQ(got.dtype(), kBool);
    std::vector<bool> close = got.to_vector<bool>();
    for (std::size_t i = 0; i < as.size(); ++i) {
      EXPECT_EQ(close[i], reference_close(as[i], bs[i], o))
          << as[i] << " vs " << bs[i] << " rtol " << o.rtol << " atol " << o.atol;
    }
  }
}

TEST(Closeness, BroadcastsAndPromotes) {
  Tensor a = from_vector<float>({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  Tensor b = from_vector<int64_t>({1, 4}, {2});  // broadcast over rows, compared in float64
  EXPECT_EQ(isclose(a, b).to_vector<bool>(), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(isclose(a, b).shape(), Shape({2, 2}));
  // float32 0.1 is not float64 0.1: the comparison is exact, tolerances decide.
  Tensor f = from_vector<float>({0.1f});
  EXPECT_FALSE(allclose(f, from_vector<double>({0.1}), {.rtol = 0, .atol = 0}));
  EXPECT_TRUE(allclose(f, from_vector<double>({0.1}), {.rtol = 1e-7, .atol = 0}));
}

TEST(Closeness, AllCloseAndEqual) {
  Tensor x = from_vector<double>({1.0, kNaN, 3.0});
  EXPECT_FALSE(allclose(x, x));  // NaN is close to nothing by default
  EXPECT_TRUE(allclose(x, x, {.equal_nan = true}));
  EXPECT_FALSE(equal(x, x));  // nor equal to itself
  Tensor y = from_vector<double>({1.0, 2.0, 3.0});
  EXPECT_TRUE(equal(y, y.clone()));
  EXPECT_TRUE(equal(y, from_vector<int64_t>({1, 2, 3})));  // values, not dtypes
  EXPECT_FALSE(equal(y, y.reshape({3, 1})));               // shapes must match
  EXPECT_FALSE(equal(y, from_vector<double>({1.0, 2.0, 3.0 + 1e-12})));
  EXPECT_TRUE(allclose(y, from_vector<double>({1.0, 2.0, 3.0 + 1e-12})));
  EXPECT_TRUE(allclose(Tensor(zeros({0})), zeros({0})));  // vacuously
}

TEST(Closeness, BadToleranceOrShapeNamesTheCall) {
  Tensor y = zeros({3});
  try {
    isclose(y, y, {.rtol = -1});
    FAIL() << "a negative rtol was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("isclose: rtol"), std::string::npos) << e.what();
  }
  EXPECT_THROW(isclose(y, y, {.atol = -1e-9}), ValueError);
  EXPECT_THROW(isclose(y, zeros({2})), ShapeError);  // shapes that do not broadcast
}

}  // namespace
}  // namespace ath
