#include "athanor/nn/init.h"

#include <cmath>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/ops/ops.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::nn::init {
namespace {

void check_floating(const Tensor& t, const char* fn) {
  ATH_CHECK(t.defined(), ValueError, "init.{}: tensor is undefined", fn);
  ATH_CHECK(t.is_floating_point(), DTypeError, "init.{}: expected a floating tensor, got {}", fn,
            dtype_name(t.dtype()));
}

// Writes `values` (any dtype, same shape) into t without recording history.
Tensor assign(Tensor t, const Tensor& values) {
  NoGradGuard no_grad;
  t.copy_(values);
  return t;
}

int64_t fan(const Tensor& t, FanMode mode) {
  auto [in, out] = fan_in_and_fan_out(t);
  return mode == FanMode::FanIn ? in : out;
}

}  // namespace

double calculate_gain(std::string_view nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "conv1d" || nonlinearity == "conv2d" ||
      nonlinearity == "conv3d" || nonlinearity == "conv_transpose1d" ||
      nonlinearity == "conv_transpose2d" || nonlinearity == "conv_transpose3d" ||
      nonlinearity == "sigmoid") {
    return 1.0;
  }
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  if (nonlinearity == "selu") return 3.0 / 4.0;
  ATH_THROW(ValueError, "init.calculate_gain: unsupported nonlinearity '{}'", nonlinearity);
}

std::pair<int64_t, int64_t> fan_in_and_fan_out(const Tensor& t) {
  ATH_CHECK(t.dim() >= 2, ShapeError,
            "init: fan in and fan out need a tensor of at least 2 dims, got shape {}",
            to_string(t.shape()));
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

Tensor uniform_(Tensor t, double a, double b, Generator* gen) {
  check_floating(t, "uniform_");
  ATH_CHECK(a <= b, ValueError, "init.uniform_: a ({}) must not exceed b ({})", a, b);
  Tensor u = rand(t.shape(), {.dtype = kFloat64, .generator = gen});
  return assign(t, u * (b - a) + a);
}

Tensor normal_(Tensor t, double mean, double std, Generator* gen) {
  check_floating(t, "normal_");
  ATH_CHECK(std >= 0, ValueError, "init.normal_: std must be >= 0, got {}", std);
  Tensor n = randn(t.shape(), {.dtype = kFloat64, .generator = gen});
  return assign(t, n * std + mean);
}

Tensor trunc_normal_(Tensor t, double mean, double std, double a, double b, Generator* gen) {
  check_floating(t, "trunc_normal_");
  ATH_CHECK(a < b && std > 0, ValueError,
            "init.trunc_normal_: needs a < b and std > 0 (a={}, b={}, std={})", a, b, std);
  // PyTorch's method: draw uniformly between the CDF values of the bounds, then invert the CDF.
  auto cdf = [](double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); };
  const double lo = 2 * cdf((a - mean) / std) - 1, hi = 2 * cdf((b - mean) / std) - 1;
  std::vector<double> u =
      rand(t.shape(), {.dtype = kFloat64, .generator = gen}).to_vector<double>();
  for (double& v : u) {
    const double y = lo + (hi - lo) * v;
    // erfinv by Newton's method from a rational first guess; |y| < 1 here.
    double x = 0;
    if (y > -1 && y < 1) {
      // Winitzki's approximation (a = 0.147), then Newton steps to full precision.
      const double w = -std::log((1 - y) * (1 + y)), a = 0.147;
      const double c = 2 / (M_PI * a) - w / 2;
      x = std::copysign(std::sqrt(std::sqrt(c * c + w / a) - c), y);
      for (int it = 0; it < 3; ++it) {
        x -= (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
      }
    }
    v = std::clamp(mean + std * std::sqrt(2.0) * x, a, b);
  }
  return assign(t, from_vector(u, t.shape()));
}

Tensor constant_(Tensor t, double value) {
  check_floating(t, "constant_");
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}

Tensor zeros_(Tensor t) { return constant_(t, 0.0); }
Tensor ones_(Tensor t) { return constant_(t, 1.0); }

Tensor xavier_uniform_(Tensor t, double gain, Generator* gen) {
  check_floating(t, "xavier_uniform_");
  auto [in, out] = fan_in_and_fan_out(t);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(in + out));
  return uniform_(t, -bound, bound, gen);
}

Tensor xavier_normal_(Tensor t, double gain, Generator* gen) {
  check_floating(t, "xavier_normal_");
  auto [in, out] = fan_in_and_fan_out(t);
  return normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(in + out)), gen);
}

Tensor kaiming_uniform_(Tensor t, KaimingOptions o) {
  check_floating(t, "kaiming_uniform_");
  const int64_t f = fan(t, o.mode);
  if (f == 0) return t;  // PyTorch warns and leaves a 0-element tensor alone
  const double std = calculate_gain(o.nonlinearity, o.a) / std::sqrt(static_cast<double>(f));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(t, -bound, bound, o.generator);
}

Tensor kaiming_normal_(Tensor t, KaimingOptions o) {
  check_floating(t, "kaiming_normal_");
  const int64_t f = fan(t, o.mode);
  if (f == 0) return t;
  return normal_(t, 0.0, calculate_gain(o.nonlinearity, o.a) / std::sqrt(static_cast<double>(f)),
                 o.generator);
}

Tensor orthogonal_(Tensor t, double gain, Generator* gen) {
  check_floating(t, "orthogonal_");
  ATH_CHECK(t.dim() >= 2, ShapeError, "init.orthogonal_: needs at least 2 dims, got shape {}",
            to_string(t.shape()));
  if (t.numel() == 0) return t;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  // Work on the tall orientation m x n (m >= n): its QR gives n orthonormal columns.
  const bool transposed = rows < cols;
  const int64_t m = transposed ? cols : rows, n = transposed ? rows : cols;
  Tensor draw = randn({rows, cols}, {.dtype = kFloat64, .generator = gen});
  if (transposed) draw = draw.t();
  std::vector<double> a = draw.contiguous().to_vector<double>();  // m x n row-major
  // Modified Gram-Schmidt: R's diagonal comes out positive, which is exactly the sign
  // convention PyTorch enforces after its Householder QR (q *= sign(diag(r))).
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < m; ++i) dot += a[i * n + k] * a[i * n + j];
      for (int64_t i = 0; i < m; ++i) a[i * n + j] -= dot * a[i * n + k];
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += a[i * n + j] * a[i * n + j];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < m; ++i) a[i * n + j] /= norm;
  }
  Tensor q = from_vector(a, {m, n}) * gain;
  if (transposed) q = q.t();
  return assign(t, q.reshape(t.shape()));
}

}  // namespace ath::nn::init
