#include <gtest/gtest.h>

#include "athanor/athanor.h"

using namespace ath;

TEST(Smoke, AddBackward) {
  Tensor a = from_vector<float>({1, 2, 3}).requires_grad_();
  Tensor b = from_vector<float>({4, 5, 6}).requires_grad_();
  Tensor y = (a * b + a).sum();
  EXPECT_FLOAT_EQ(y.item<float>(), 1 * 4 + 2 * 5 + 3 * 6 + 6);
  y.backward();
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{5, 6, 7}));
  EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{1, 2, 3}));
}
