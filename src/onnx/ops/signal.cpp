// The signal ops (opset 17). The window functions (HannWindow, HammingWindow, BlackmanWindow):
// a pure function of the size, computed on the host in double precision and converted to
// output_datatype. DFT: a dense transform, a matrix product of the signal (moved to the last
// axis) with cosine and sine matrices computed on the host in double precision; the product runs
// in float64 and the result is rounded once to the input's type, so float32 outputs match a
// float64 FFT's to the last bit or so. That is O(n^2) work per signal (an FFT is O(n log n)),
// fine for the frame lengths of audio front ends; lengths above 8192 are refused.
#include <cmath>
#include <numbers>

#include "../op_table.h"
#include "../tensor_proto.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/shaping.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

// a0 - a1 cos(2 pi n / N') + a2 cos(4 pi n / N'), N' = N (periodic) or N - 1 (symmetric).
void window(NodeContext& c, double a0, double a1, double a2) {
  const int64_t n = c.ints(0).at(0);
  ATH_CHECK(n >= 0 && n <= (int64_t{1} << 28), ValueError, "window size {} is out of range", n);
  const bool periodic = c.attr_int("periodic", 1) != 0;
  const double denom = static_cast<double>(periodic ? n : n - 1);
  std::vector<double> w(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double x = 2 * std::numbers::pi * static_cast<double>(i) / denom;
    w[static_cast<std::size_t>(i)] = a0 - a1 * std::cos(x) + a2 * std::cos(2 * x);
  }
  const int type = static_cast<int>(c.attr_int("output_datatype", ::onnx::TensorProto::FLOAT));
  const std::optional<DType> dt = dtype_from_onnx(type);
  if (!dt) c.unsupported("output_datatype {}", onnx_type_name(type));
  c.out(0, to_dtype(from_vector(w), *dt));
}

constexpr int64_t kMaxDftLength = 8192;

// [rows, cols] float64 matrices weight(j) * cos(2 pi j k / n) and weight(j) * sin(2 pi j k / n).
std::pair<Tensor, Tensor> dft_matrices(int64_t rows, int64_t cols, int64_t n,
                                       const std::vector<double>& weight) {
  std::vector<double> cs(static_cast<std::size_t>(rows * cols)), sn(cs.size());
  for (int64_t j = 0; j < rows; ++j) {
    for (int64_t k = 0; k < cols; ++k) {
      // (j k) mod n keeps the angle in [0, 2 pi): no precision lost to large arguments.
      const double angle =
          2 * std::numbers::pi * static_cast<double>((j * k) % n) / static_cast<double>(n);
      const auto at = static_cast<std::size_t>(j * cols + k);
      cs[at] = weight[static_cast<std::size_t>(j)] * std::cos(angle);
      sn[at] = weight[static_cast<std::size_t>(j)] * std::sin(angle);
    }
  }
  return {from_vector(cs).reshape({rows, cols}), from_vector(sn).reshape({rows, cols})};
}

// Input [batch, signal dims..., 1 (real) or 2 (complex)]. Forward: X[k] = sum_j x[j] e^{-2 pi i
// jk/n}; inverse: x[t] = 1/n sum_k X[k] e^{+2 pi i kt/n}; onesided keeps the first n/2 + 1
// frequencies, and with inverse reads a one-sided spectrum and returns the real signal
// (numpy.fft.irfft; ONNX's reference implementation). dft_length (input 1) truncates or
// zero-pads the signal along the axis to n.
void lower_dft(NodeContext& c) {
  const Tensor& x = c.in(0);
  const int64_t rank = x.dim();
  ATH_CHECK(rank >= 2 && (x.size(-1) == 1 || x.size(-1) == 2), ShapeError,
            "input must be [batch, signal..., 1 or 2], got {}", to_string(x.shape()));
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  ATH_CHECK(axis >= 0 && axis <= rank - 2, ValueError,
            "axis {} is not a signal axis of a rank-{} input (the last holds real/imaginary)",
            c.attr_int("axis", 1), rank);
  const bool inverse = c.attr_int("inverse", 0) != 0;
  const bool onesided = c.attr_int("onesided", 0) != 0;
  const bool irfft = inverse && onesided;
  const int64_t n = c.has(1) ? c.ints(1).at(0) : irfft ? 2 * (x.size(axis) - 1) : x.size(axis);
  ATH_CHECK(n >= 1, ValueError, "DFT length {} is not positive", n);
  if (n > kMaxDftLength)
    c.unsupported("DFT length {} (a dense transform: at most {})", n, kMaxDftLength);
  const int64_t rows = irfft ? n / 2 + 1 : n;                 // signal samples read
  const int64_t cols = onesided && !inverse ? n / 2 + 1 : n;  // outputs written

  // The real and imaginary parts in float64, cut or zero-padded to `rows`, the axis last.
  auto prepare = [&](const Tensor& part) {
    Tensor t = to_dtype(part, kFloat64);
    if (t.size(axis) > rows) {
      t = slice(t, axis, 0, rows);
    } else if (t.size(axis) < rows) {
      Shape pad = t.shape();
      pad[static_cast<std::size_t>(axis)] = rows - t.size(axis);
      t = cat({t, zeros(pad, kFloat64)}, axis);
    }
    return transpose(t, axis, rank - 2);
  };
  const Tensor re = prepare(select(x, -1, 0));
  const std::optional<Tensor> im =
      x.size(-1) == 2 ? std::optional<Tensor>(prepare(select(x, -1, 1))) : std::nullopt;

  std::vector<double> weight(static_cast<std::size_t>(rows),
                             inverse ? 1.0 / static_cast<double>(n) : 1.0);
  if (irfft) {  // the spectrum's other half by conjugate symmetry: every bin but 0 and n/2 twice
    for (int64_t k = 1; k < rows; ++k)
      if (2 * k != n) weight[static_cast<std::size_t>(k)] *= 2;
  }
  const auto [cs, sn] = dft_matrices(rows, cols, n, weight);
  // e^{-i theta} forward, e^{+i theta} inverse: (a + ib)(cos -/+ i sin).
  const double s = inverse ? 1.0 : -1.0;
  Tensor out_re = matmul(re, cs), out_im = mul(matmul(re, sn), Scalar(s));
  if (im) {
    out_re = sub(out_re, mul(matmul(*im, sn), Scalar(s)));
    out_im = add(out_im, matmul(*im, cs));
  }
  auto restore = [&](const Tensor& t) { return transpose(t, axis, rank - 2); };
  const Tensor y =
      irfft ? unsqueeze(restore(out_re), -1) : stack({restore(out_re), restore(out_im)}, -1);
  c.out(0, to_dtype(y, x.dtype()));
}

void lower_hann(NodeContext& c) { window(c, 0.5, 0.5, 0.0); }
void lower_hamming(NodeContext& c) { window(c, 25.0 / 46.0, 1.0 - 25.0 / 46.0, 0.0); }
void lower_blackman(NodeContext& c) { window(c, 0.42, 0.5, 0.08); }

}  // namespace

void add_signal_ops(OpTable& t) {
  t["HannWindow"] = {lower_hann, 1u << 0, 17, kIntTypes};
  t["HammingWindow"] = {lower_hamming, 1u << 0, 17, kIntTypes};
  t["BlackmanWindow"] = {lower_blackman, 1u << 0, 17, kIntTypes};
  t["DFT"] = {lower_dft, 1u << 1, 17, kFloatTypes};
}

}  // namespace ath::onnx::detail
