// The 2x2 / stride-2 max-pool fast path keeps the general loop's rules exactly: the first of
// equal maxima wins, a NaN wins (the last NaN of the window), -inf windows pick their first
// element. Checked against a plain loop written here, on windows built to hit each rule.
#include <athanor/athanor.h>
#include <athanor/ops/conv.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ath {
namespace {

TEST(MaxPool2x2, TiesNaNsAndInfinitiesFollowTheGeneralRules) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  manual_seed(3);
  Tensor x = randint(0, 3, {2, 3, 6, 8}).to(kFloat32);  // many ties
  float* p = x.data<float>();
  p[0] = nan;                                  // window (0,0) of plane 0: NaN first
  p[3] = nan;                                  // window (0,1): NaN in the second column
  p[8 + 5] = nan;                              // window (0,2): NaN in the second row ...
  p[8 + 4] = nan;                              // ... and another before it in scan order
  for (int i : {16, 17, 24, 25}) p[i] = -inf;  // window (1,0): all -inf
  auto [v, idx] = max_pool2d_with_indices(x, {.kernel = 2});
  ASSERT_EQ(v.shape(), (Shape{2, 3, 3, 4}));
  const float* vp = v.data<float>();
  const int64_t* ip = idx.data<int64_t>();
  for (int64_t pl = 0; pl < 6; ++pl) {
    for (int64_t oy = 0; oy < 3; ++oy) {
      for (int64_t ox = 0; ox < 4; ++ox) {
        float best = -inf;
        int64_t best_i = 2 * oy * 8 + 2 * ox;
        for (int64_t iy = 2 * oy; iy < 2 * oy + 2; ++iy) {
          for (int64_t ix = 2 * ox; ix < 2 * ox + 2; ++ix) {
            const float val = p[pl * 48 + iy * 8 + ix];
            if (val > best || std::isnan(val)) {
              best = val;
              best_i = iy * 8 + ix;
            }
          }
        }
        const int64_t o = (pl * 3 + oy) * 4 + ox;
        EXPECT_EQ(ip[o], best_i) << "plane " << pl << " window " << oy << "," << ox;
        if (std::isnan(best)) {
          EXPECT_TRUE(std::isnan(vp[o]));
        } else {
          EXPECT_EQ(vp[o], best);
        }
      }
    }
  }
  EXPECT_EQ(ip[2], 8 + 5);  // the last NaN of window (0,2)
}

}  // namespace
}  // namespace ath
