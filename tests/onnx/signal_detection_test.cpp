// DFT and NonMaxSuppression beyond ONNX's node tests: every combination of inverse, onesided and
// dft_length (truncating and zero-padding) against a naive complex DFT, and NMS on random boxes
// (several batches and classes, score threshold, limit) against a plain greedy loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <numeric>

#include "athanor/onnx/session.h"
#include "athanor/ops/ops.h"
#include "onnx/model_builder.h"

namespace ath::onnx::testing {
namespace {

constexpr int kF = ::onnx::TensorProto::FLOAT;
constexpr int kD = ::onnx::TensorProto::DOUBLE;

using Complex = std::complex<double>;

// numpy.fft.fft / ifft / rfft / irfft of one signal, by the definition.
std::vector<Complex> naive_dft(std::vector<Complex> x, int64_t n, bool inverse, bool onesided) {
  if (inverse && onesided) {  // irfft: the Hermitian extension of the first n/2 + 1 bins
    x.resize(static_cast<std::size_t>(n / 2 + 1));
    std::vector<Complex> full(static_cast<std::size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      const int64_t m = k <= n / 2 ? k : n - k;
      full[static_cast<std::size_t>(k)] =
          k <= n / 2 ? x[static_cast<std::size_t>(m)] : std::conj(x[static_cast<std::size_t>(m)]);
    }
    full[0] = full[0].real();
    if (n % 2 == 0)
      full[static_cast<std::size_t>(n / 2)] = full[static_cast<std::size_t>(n / 2)].real();
    std::vector<Complex> y = naive_dft(full, n, true, false);
    for (Complex& v : y) v = v.real();
    return y;
  }
  x.resize(static_cast<std::size_t>(n));  // truncate or zero-pad
  const int64_t out = onesided ? n / 2 + 1 : n;
  std::vector<Complex> y(static_cast<std::size_t>(out));
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < out; ++k) {
    for (int64_t j = 0; j < n; ++j) {
      const double a =
          sign * 2 * std::numbers::pi * static_cast<double>((j * k) % n) / static_cast<double>(n);
      y[static_cast<std::size_t>(k)] +=
          x[static_cast<std::size_t>(j)] * Complex(std::cos(a), std::sin(a));
    }
    if (inverse) y[static_cast<std::size_t>(k)] /= static_cast<double>(n);
  }
  return y;
}

TEST(OnnxSignal, DftEveryModeAgainstTheDefinition) {
  // x: [2 batches, 3 rows, 9 samples, re/im]; the transform runs along axis 2 (the samples) or
  // axis 1 (the rows).
  for (int64_t parts : {1, 2}) {
    for (int64_t axis : {2, 1, -2}) {
      for (bool inverse : {false, true}) {
        for (bool onesided : {false, true}) {
          for (int64_t length : {0, 6, 12}) {  // 0: no dft_length
            SCOPED_TRACE(fmt::format("parts {} axis {} inverse {} onesided {} length {}", parts,
                                     axis, inverse, onesided, length));
            ModelBuilder m(17);
            m.input("x", kD, {2, 3, 9, parts});
            std::vector<std::string> inputs = {"x"};
            if (length > 0) {
              m.initializer("n", full(Shape{}, Scalar(length), kInt64));
              inputs.push_back("n");
            }
            auto* node = m.node("DFT", inputs, {"y"});
            ModelBuilder::attr(node, "axis", axis);
            ModelBuilder::attr(node, "inverse", int64_t{inverse});
            ModelBuilder::attr(node, "onesided", int64_t{onesided});
            m.output("y", kD);
            InferenceSession s(m.save("dft_modes"));
            const Tensor x = randn({2, 3, 9, parts}, {.dtype = kFloat64});
            const Tensor y = s.run({{"x", x}})[0];

            const int64_t ax = axis < 0 ? axis + 4 : axis;
            const int64_t size = x.size(ax);
            const int64_t n = length > 0 ? length : inverse && onesided ? 2 * (size - 1) : size;
            const int64_t out = inverse && onesided ? n : !inverse && onesided ? n / 2 + 1 : n;
            ASSERT_EQ(y.size(ax), out);
            ASSERT_EQ(y.size(3), inverse && onesided ? 1 : 2);
            const std::vector<double> xv = x.contiguous().to_vector<double>();
            const std::vector<double> yv = y.contiguous().to_vector<double>();
            // Walk every signal: the indices of the two non-axis dims among {0, 1, 2}.
            const int64_t other = ax == 1 ? 2 : 1;
            for (int64_t b = 0; b < 2; ++b) {
              for (int64_t o = 0; o < x.size(other); ++o) {
                auto x_at = [&](int64_t i, int64_t p) {
                  const int64_t r = ax == 1 ? i : o, c = ax == 1 ? o : i;
                  return xv[static_cast<std::size_t>(((b * 3 + r) * 9 + c) * parts + p)];
                };
                std::vector<Complex> sig;
                for (int64_t i = 0; i < size; ++i)
                  sig.emplace_back(x_at(i, 0), parts == 2 ? x_at(i, 1) : 0.0);
                const std::vector<Complex> want = naive_dft(sig, n, inverse, onesided);
                for (int64_t k = 0; k < out; ++k) {
                  const int64_t r = ax == 1 ? k : o, c = ax == 1 ? o : k;
                  const int64_t rows = y.size(1), cols = y.size(2), ps = y.size(3);
                  const std::size_t at = static_cast<std::size_t>(((b * rows + r) * cols + c) * ps);
                  EXPECT_NEAR(yv[at], want[static_cast<std::size_t>(k)].real(), 1e-9);
                  if (ps == 2) {
                    EXPECT_NEAR(yv[at + 1], want[static_cast<std::size_t>(k)].imag(), 1e-9);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

// ONNX's reference NMS, one batch and class: candidates by score (ties: lower index first),
// greedily kept unless a kept box overlaps by more than the threshold.
std::vector<int64_t> greedy_nms(const std::vector<float>& box, const std::vector<float>& score,
                                float iou_threshold, float score_threshold, int64_t limit) {
  const std::size_t n = score.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return score[a] > score[b]; });
  auto iou_over = [&](std::size_t a, std::size_t b) {
    auto lo = [&](std::size_t i, int c) { return std::min(box[4 * i + c], box[4 * i + c + 2]); };
    auto hi = [&](std::size_t i, int c) { return std::max(box[4 * i + c], box[4 * i + c + 2]); };
    const float ih = std::min(hi(a, 0), hi(b, 0)) - std::max(lo(a, 0), lo(b, 0));
    const float iw = std::min(hi(a, 1), hi(b, 1)) - std::max(lo(a, 1), lo(b, 1));
    if (ih <= 0 || iw <= 0) return false;
    const float inter = ih * iw;
    const float area_a = (hi(a, 0) - lo(a, 0)) * (hi(a, 1) - lo(a, 1));
    const float area_b = (hi(b, 0) - lo(b, 0)) * (hi(b, 1) - lo(b, 1));
    return inter / (area_a + area_b - inter) > iou_threshold;
  };
  std::vector<int64_t> kept;
  for (std::size_t i : order) {
    if (static_cast<int64_t>(kept.size()) >= limit) break;
    if (!(score[i] > score_threshold)) continue;
    if (std::none_of(kept.begin(), kept.end(),
                     [&](int64_t k) { return iou_over(static_cast<std::size_t>(k), i); }))
      kept.push_back(static_cast<int64_t>(i));
  }
  return kept;
}

TEST(OnnxDetection, NonMaxSuppressionMatchesTheGreedyLoop) {
  constexpr int64_t kBatches = 2, kClasses = 3, kBoxes = 40, kLimit = 7;
  ModelBuilder m(11);
  m.input("boxes", kF, {kBatches, kBoxes, 4});
  m.input("scores", kF, {kBatches, kClasses, kBoxes});
  m.initializer("limit", full({1}, Scalar(kLimit), kInt64));
  m.initializer("iou", full({1}, Scalar(0.3), kFloat32));
  m.initializer("min_score", full({1}, Scalar(0.2), kFloat32));
  m.node("NonMaxSuppression", {"boxes", "scores", "limit", "iou", "min_score"}, {"selected"});
  m.output("selected", ::onnx::TensorProto::INT64);
  InferenceSession s(m.save("nms_random"));
  // Corners in a 10x10 field, sizes 1 to 4, either corner first; scores with ties.
  const Tensor corner = mul(rand({kBatches, kBoxes, 2}), Scalar(10));
  const Tensor size = add(mul(rand({kBatches, kBoxes, 2}), Scalar(3)), Scalar(1));
  const Tensor boxes = cat({corner, add(corner, size)}, 2);
  const Tensor scores = div(floor(mul(rand({kBatches, kClasses, kBoxes}), Scalar(20))), Scalar(20));
  const std::vector<int64_t> got =
      s.run({{"boxes", boxes}, {"scores", scores}})[0].to_vector<int64_t>();

  std::vector<int64_t> want;
  for (int64_t b = 0; b < kBatches; ++b) {
    for (int64_t k = 0; k < kClasses; ++k) {
      for (int64_t i : greedy_nms(boxes.select(0, b).contiguous().to_vector<float>(),
                                  scores.select(0, b).select(0, k).contiguous().to_vector<float>(),
                                  0.3f, 0.2f, kLimit)) {
        want.insert(want.end(), {b, k, i});
      }
    }
  }
  EXPECT_EQ(got, want);
  // The output's length depends on the values: the key runs eagerly, and says why.
  EXPECT_EQ(s.last_graph(), nullptr);
  ASSERT_EQ(s.stats().diagnostics.size(), 1u);
  EXPECT_NE(s.stats().diagnostics[0].find("NonMaxSuppression"), std::string::npos);
}

}  // namespace
}  // namespace ath::onnx::testing
