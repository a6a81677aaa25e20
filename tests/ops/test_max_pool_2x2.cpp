// The 2x2 / stride-2 max-pool fast path keeps the general loop's rules exactly: the first of
// equal maxima wins, a NaN wins (the last NaN of the window), -inf windows pick their first
// element. Checked against a plain loop written here, on windows built to hit each rule, at
// every ISA and at row widths that exercise the 8- and 4-output vectors, their overlapping last
// chunk and the scalar loop (widths below 4).
#include <athanor/athanor.h>
#include <athanor/ops/conv.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/isa_cap.h"

namespace ath {
namespace {

using testing::isas_up_to_current;
using testing::ScopedMaxCpuIsa;

// The plain loop: first maximum in scan order wins, a NaN wins (the last NaN of the window).
void expect_matches_plain_loop(const Tensor& x, const Tensor& v, const Tensor& idx) {
  const int64_t planes = x.shape()[0] * x.shape()[1], in_h = x.shape()[2], in_w = x.shape()[3];
  const int64_t out_h = in_h / 2, out_w = in_w / 2;
  const float* p = x.data<float>();
  const float* vp = v.data<float>();
  const int64_t* ip = idx.data<int64_t>();
  for (int64_t pl = 0; pl < planes; ++pl) {
    for (int64_t oy = 0; oy < out_h; ++oy) {
      for (int64_t ox = 0; ox < out_w; ++ox) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t best_i = 2 * oy * in_w + 2 * ox;
        for (int64_t iy = 2 * oy; iy < 2 * oy + 2; ++iy) {
          for (int64_t ix = 2 * ox; ix < 2 * ox + 2; ++ix) {
            const float val = p[pl * in_h * in_w + iy * in_w + ix];
            if (val > best || std::isnan(val)) {
              best = val;
              best_i = iy * in_w + ix;
            }
          }
        }
        const int64_t o = (pl * out_h + oy) * out_w + ox;
        ASSERT_EQ(ip[o], best_i) << "plane " << pl << " window " << oy << "," << ox;
        if (std::isnan(best)) {
          ASSERT_TRUE(std::isnan(vp[o]));
        } else {
          ASSERT_EQ(vp[o], best);
        }
      }
    }
  }
}

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
  for (CpuIsa isa : isas_up_to_current()) {
    SCOPED_TRACE(cpu_isa_name(isa));
    ScopedMaxCpuIsa cap(isa);
    auto [v, idx] = max_pool2d_with_indices(x, {.kernel = 2});
    ASSERT_EQ(v.shape(), (Shape{2, 3, 3, 4}));
    expect_matches_plain_loop(x, v, idx);
    EXPECT_EQ(idx.data<int64_t>()[2], 8 + 5);  // the last NaN of window (0,2)
  }
}

// Every output-row width from 1 to 20 (odd input widths leave a column out), ties, NaNs and
// infinities scattered over the plane.
TEST(MaxPool2x2, EveryRowWidthMatchesThePlainLoopAtEveryIsa) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t in_w = 2; in_w <= 41; ++in_w) {
    SCOPED_TRACE(in_w);
    manual_seed(in_w);
    Tensor x = randint(0, 4, {2, 2, 5, in_w}).to(kFloat32);
    float* p = x.data<float>();
    for (int64_t i = 0; i < x.numel(); i += 7)
      p[i] = (i % 3 == 0) ? nan : (i % 3 == 1 ? inf : -inf);
    for (CpuIsa isa : isas_up_to_current()) {
      SCOPED_TRACE(cpu_isa_name(isa));
      ScopedMaxCpuIsa cap(isa);
      auto [v, idx] = max_pool2d_with_indices(x, {.kernel = 2});
      ASSERT_EQ(v.shape(), (Shape{2, 2, 2, in_w / 2}));
      expect_matches_plain_loop(x, v, idx);
    }
  }
}

}  // namespace
}  // namespace ath
