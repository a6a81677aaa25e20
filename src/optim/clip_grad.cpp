#include "athanor/optim/clip_grad.h"

#include <algorithm>
#include <cmath>

#include "athanor/core/error.h"
#include "athanor/core/parallel.h"
#include "athanor/ops/pointwise.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::optim {

namespace {

// Partial sums over fixed chunks, combined in order: thread-count independent.
constexpr int64_t kChunk = 4096;

template <class T>
double grad_norm(const T* x, int64_t n, double p) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> part(static_cast<std::size_t>(chunks), 0.0);
  parallel_for(0, chunks, std::max<int64_t>(1, 32768 / kChunk), [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t b = c * kChunk, e = std::min(n, b + kChunk);
      double acc = 0;
      if (std::isinf(p)) {
        for (int64_t i = b; i < e; ++i) {
          const double a = std::abs(double(x[i]));
          acc = (a > acc || a != a) ? a : acc;
        }
      } else if (p == 2) {
        for (int64_t i = b; i < e; ++i) acc += double(x[i]) * double(x[i]);
      } else if (p == 1) {
        for (int64_t i = b; i < e; ++i) acc += std::abs(double(x[i]));
      } else {
        for (int64_t i = b; i < e; ++i) acc += std::pow(std::abs(double(x[i])), p);
      }
      part[static_cast<std::size_t>(c)] = acc;
    }
  });
  double total = 0;
  for (double v : part) {
    if (std::isinf(p))
      total = (v > total || v != v) ? v : total;
    else
      total += v;
  }
  if (std::isinf(p)) return total;
  return p == 1 ? total : (p == 2 ? std::sqrt(total) : std::pow(total, 1.0 / p));
}

// Rounds to the gradients' dtype, as PyTorch's norms are tensors of that dtype.
double round_to(double v, DType dt) {
  return dt == kFloat64 ? v : static_cast<double>(static_cast<float>(v));
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  ATH_CHECK(norm_type > 0, ValueError, "clip_grad_norm_: norm_type must be > 0 or INFINITY, got {}",
            norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    if (!p.defined()) continue;
    Tensor g = p.grad();
    if (!g.defined()) continue;
    ATH_CHECK(g.is_floating_point(), DTypeError, "clip_grad_norm_: gradient of dtype {}",
              dtype_name(g.dtype()));
    grads.push_back(g);
  }
  if (grads.empty()) return 0.0;
  DType dt = grads[0].dtype();
  for (const Tensor& g : grads) dt = promote_types(dt, g.dtype());
  const bool inf_norm = std::isinf(norm_type);
  double acc = 0;
  for (const Tensor& g : grads) {
    Tensor c = g.contiguous();
    double n = 0;
    if (c.dtype() == kFloat64)
      n = grad_norm(c.data<double>(), c.numel(), norm_type);
    else if (c.dtype() == kFloat32)
      n = grad_norm(c.data<float>(), c.numel(), norm_type);
    else {
      Tensor f = c.to(kFloat32);
      n = grad_norm(f.data<float>(), f.numel(), norm_type);
    }
    n = round_to(n, g.dtype());
    if (inf_norm)
      acc = (n > acc || n != n) ? n : acc;
    else
      acc += norm_type == 2 ? n * n : std::pow(n, norm_type);
  }
  double total = inf_norm ? acc : (norm_type == 2 ? std::sqrt(acc) : std::pow(acc, 1 / norm_type));
  total = round_to(total, dt);
  ATH_CHECK(!error_if_nonfinite || std::isfinite(total), ValueError,
            "clip_grad_norm_: the total norm of order {} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set error_if_nonfinite=false",
            norm_type);
  double coef = dt == kFloat64 ? max_norm / (total + 1e-6)
                               : double(float(max_norm) / (float(total) + float(1e-6)));
  if (!(coef < 1.0) && !std::isnan(coef)) return total;  // clamped to 1: nothing changes
  for (Tensor& g : grads) {
    const double c = round_to(coef, g.dtype());
    if (g.is_contiguous() && (g.dtype() == kFloat32 || g.dtype() == kFloat64)) {
      auto scale = [&]<class T>(T* x) {
        const T s = T(c);
        parallel_for(0, g.numel(), kPointwiseGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) x[i] = x[i] * s;
        });
      };
      if (g.dtype() == kFloat64)
        scale(g.data<double>());
      else
        scale(g.data<float>());
      g.bump_version();
    } else {
      g.mul_(Scalar(c));
    }
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& p : params) {
    if (!p.defined()) continue;
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.is_contiguous() && (g.dtype() == kFloat32 || g.dtype() == kFloat64)) {
      auto clamp_all = [&]<class T>(T* x) {
        const T lo = T(-clip_value), hi = T(clip_value);
        parallel_for(0, g.numel(), kPointwiseGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            const T v = x[i];
            x[i] = v != v ? v : std::min(std::max(v, lo), hi);
          }
        });
      };
      if (g.dtype() == kFloat64)
        clamp_all(g.data<double>());
      else
        clamp_all(g.data<float>());
      g.bump_version();
    } else {
      Tensor clamped =
          clamp(g, std::optional<Scalar>(-clip_value), std::optional<Scalar>(clip_value));
      g.copy_(clamped);
    }
  }
}

}  // namespace ath::optim
