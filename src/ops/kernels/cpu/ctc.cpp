// CPU kernels for ctc_loss and ctc_loss_backward.
//
// Per sample b with F frames and target l of length L, the extended target l' is
// (blank, l1, blank, l2, ..., lL, blank), S = 2L + 1 states. Forward variables
//   alpha_t(s) = y_t(l'_s) * (alpha_{t-1}(s) + alpha_{t-1}(s-1) + [skip] alpha_{t-1}(s-2)),
// skip allowed into a label that differs from the label two states back; the likelihood is
// alpha_{F-1}(S-1) + alpha_{F-1}(S-2). Backward variables (without frame t's emission)
//   beta_t(s) = sum over s' in {s, s+1, s+2 (skip)} of y_{t+1}(l'_s') beta_{t+1}(s'),
// and alpha_t(s) beta_t(s) / P is the posterior of state s at frame t; the loss gradient with
// respect to log y_t(k) is minus the summed posterior of the states labelled k.
//
// Both recursions run in float64 in linear space: y is exp(log y - max over the sample's labels
// at that frame), and each frame's vector is renormalized to sum 1 with the scale's log added to
// the likelihood; posteriors are renormalized per frame, so no scale needs undoing. A frame whose
// mass falls below kUnderflow (log-probabilities hundreds of nats apart, or no alignment at all)
// sends the whole sample to the log-space recursion (log-sum-exp per cell, as torch's kernel),
// which is exact there too.
//
// Memory contract. Forward: reads log_probs [T, N, C] (frames within each input length, labels
// of each target), targets and the lengths, all checked before any read through them; writes
// loss [N], alpha [N, T, 2 S_max + 1] (rows of frames < F_b, states < S_b; the first element set
// to NaN marks a sample computed in log space) and the log-likelihood [N]. Backward: writes
// every element of dlog_probs (zero past each input length and outside the sample's labels).
// Samples are independent and run in parallel; results do not depend on the thread count.
#include "athanor/ops/ctc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "athanor/core/parallel.h"
#include "common/nn_common.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kUnderflow = 1e-200;

std::vector<int64_t> int_values(const Tensor& t) { return t.to(kInt64).to_vector<int64_t>(); }

// The checked targets of a batch: each sample's extended label sequence and input length.
struct CtcBatch {
  int64_t frames = 0, batch = 0, classes = 0, width = 0;  // width: alpha's last dim
  std::vector<int64_t> input_lengths;
  std::vector<std::vector<int64_t>> extended;  // l' per sample (size 2L + 1)
};

CtcBatch check_batch(TensorSpan in, const CtcLossAttrs& a) {
  const Tensor &lp = in[0], &targets = in[1];
  CtcBatch b;
  b.frames = lp.shape()[0];
  b.batch = lp.shape()[1];
  b.classes = lp.shape()[2];
  const bool padded = targets.dim() == 2;
  const int64_t s_max = padded ? targets.shape()[1] : targets.numel();
  b.width = 2 * s_max + 1;
  b.input_lengths = int_values(in[2]);
  const std::vector<int64_t> target_lengths = int_values(in[3]);
  const std::vector<int64_t> labels = int_values(targets);
  int64_t offset = 0;  // concatenated targets: where sample i's start
  b.extended.resize(static_cast<std::size_t>(b.batch));
  for (int64_t i = 0; i < b.batch; ++i) {
    const int64_t f = b.input_lengths[static_cast<std::size_t>(i)];
    const int64_t len = target_lengths[static_cast<std::size_t>(i)];
    ATH_CHECK(f >= 0 && f <= b.frames, IndexError,
              "input_lengths[{}] = {} is outside [0, {}] (log_probs has {} frames)", i, f, b.frames,
              b.frames);
    ATH_CHECK(len >= 0 && len <= s_max, IndexError,
              "target_lengths[{}] = {} is outside [0, {}] (targets of shape {})", i, len, s_max,
              to_string(targets.shape()));
    const int64_t start = padded ? i * s_max : offset;
    ATH_CHECK(start + len <= static_cast<int64_t>(labels.size()), IndexError,
              "target_lengths sum to more than the {} concatenated targets (sample {})",
              labels.size(), i);
    std::vector<int64_t>& ext = b.extended[static_cast<std::size_t>(i)];
    ext.assign(static_cast<std::size_t>(2 * len + 1), a.blank);
    for (int64_t j = 0; j < len; ++j) {
      const int64_t l = labels[static_cast<std::size_t>(start + j)];
      ATH_CHECK(l >= 0 && l < b.classes && l != a.blank, IndexError,
                "targets: sample {} label {} is {}; labels must be classes in [0, {}) other "
                "than the blank {}",
                i, j, l, b.classes, a.blank);
      ext[static_cast<std::size_t>(2 * j + 1)] = l;
    }
    offset += len;
  }
  return b;
}

// One sample's view of log_probs: frame t, class c at lp[t * stride + c].
template <class T>
struct SampleLogProbs {
  const T* lp;
  int64_t stride;
  double at(int64_t t, int64_t c) const { return static_cast<double>(lp[t * stride + c]); }
};

// Whether the state s may be entered from s - 2 (a label differing from the one before).
inline bool can_skip(const std::vector<int64_t>& ext, std::size_t s) {
  return s >= 2 && s % 2 == 1 && ext[s] != ext[s - 2];
}
inline double log_add(double a, double b) {
  const double m = std::max(a, b);
  return m == kNegInf ? kNegInf : m + std::log(std::exp(a - m) + std::exp(b - m));
}

// y_t(l'_s) / max_s y_t(l'_s) for every state; returns log of that max (-inf: every label of
// the sample is impossible at frame t).
template <class T>
double scaled_emissions(const SampleLogProbs<T>& x, int64_t t, const std::vector<int64_t>& ext,
                        std::vector<double>& e) {
  double m = kNegInf;
  for (int64_t c : ext) m = std::max(m, x.at(t, c));
  if (m == kNegInf) return m;
  // Even states are all the blank: one exp for them, one per label.
  const double blank = std::exp(x.at(t, ext[0]) - m);
  for (std::size_t s = 0; s < ext.size(); s += 2) e[s] = blank;
  for (std::size_t s = 1; s < ext.size(); s += 2) e[s] = std::exp(x.at(t, ext[s]) - m);
  return m;
}

// Divides v by its sum; returns the sum's log, or NaN when it is below kUnderflow.
double renormalize(double* v, std::size_t n) {
  double sum = 0;
  for (std::size_t s = 0; s < n; ++s) sum += v[s];
  if (!(sum >= kUnderflow)) return std::numeric_limits<double>::quiet_NaN();
  const double inv = 1.0 / sum;
  for (std::size_t s = 0; s < n; ++s) v[s] *= inv;
  return std::log(sum);
}

// The linear-space forward pass: writes frames [0, F) of alpha (per-frame normalized, stride
// `width`) and returns log P, or NaN when the sample needs the log-space path.
template <class T>
double forward_linear(const SampleLogProbs<T>& x, int64_t frames, const std::vector<int64_t>& ext,
                      double* alpha, int64_t width) {
  const std::size_t n = ext.size();
  std::vector<double> e(n);
  double log_p = 0;
  for (int64_t t = 0; t < frames; ++t) {
    const double m = scaled_emissions(x, t, ext, e);
    if (m == kNegInf) return std::numeric_limits<double>::quiet_NaN();
    double* a = alpha + t * width;
    if (t == 0) {
      for (std::size_t s = 0; s < n; ++s) a[s] = s < 2 ? e[s] : 0.0;
    } else {
      const double* prev = a - width;
      for (std::size_t s = 0; s < n; ++s) {
        double v = prev[s];
        if (s >= 1) v += prev[s - 1];
        if (can_skip(ext, s)) v += prev[s - 2];
        a[s] = v * e[s];
      }
    }
    log_p += renormalize(a, n) + m;
    if (std::isnan(log_p)) return log_p;
  }
  const double* last = alpha + (frames - 1) * width;
  const double end = last[n - 1] + (n > 1 ? last[n - 2] : 0.0);
  if (!(end >= kUnderflow)) return std::numeric_limits<double>::quiet_NaN();
  return log_p + std::log(end);
}

// The log-space forward pass (all frames, [F, S] log alpha); returns log P (-inf: no alignment).
template <class T>
double forward_log(const SampleLogProbs<T>& x, int64_t frames, const std::vector<int64_t>& ext,
                   std::vector<double>& la) {
  const std::size_t n = ext.size();
  la.assign(static_cast<std::size_t>(frames) * n, kNegInf);
  for (int64_t t = 0; t < frames; ++t) {
    double* a = la.data() + t * static_cast<int64_t>(n);
    for (std::size_t s = 0; s < n; ++s) {
      double v;
      if (t == 0) {
        v = s < 2 ? 0.0 : kNegInf;
      } else {
        const double* prev = a - n;
        v = prev[s];
        if (s >= 1) v = log_add(v, prev[s - 1]);
        if (can_skip(ext, s)) v = log_add(v, prev[s - 2]);
      }
      a[s] = v == kNegInf ? kNegInf : v + x.at(t, ext[s]);
    }
  }
  const double* last = la.data() + (frames - 1) * static_cast<int64_t>(n);
  return n > 1 ? log_add(last[n - 1], last[n - 2]) : last[n - 1];
}

// log P of a sample with no frames: 1 for an empty target, else 0.
double empty_input_log_likelihood(const std::vector<int64_t>& ext) {
  return ext.size() == 1 ? 0.0 : kNegInf;
}

template <class T>
void ctc_loss_kernel(TensorSpan in, std::span<Tensor> out, const CtcLossAttrs& a) {
  const CtcBatch b = check_batch(in, a);
  Tensor lp = dense(in[0]);
  const T* lpp = static_cast<const T*>(lp.data_ptr());
  T* loss = static_cast<T*>(out[0].data_ptr());
  double* alpha = static_cast<double*>(out[1].data_ptr());
  double* ll = static_cast<double*>(out[2].data_ptr());
  const int64_t cells = std::max<int64_t>(1, b.frames * b.width);
  parallel_for(0, b.batch, std::max<int64_t>(1, 16384 / cells), [&](int64_t i0, int64_t i1) {
    std::vector<double> la;
    for (int64_t i = i0; i < i1; ++i) {
      const std::vector<int64_t>& ext = b.extended[static_cast<std::size_t>(i)];
      const int64_t frames = b.input_lengths[static_cast<std::size_t>(i)];
      const SampleLogProbs<T> x{lpp + i * b.classes, b.batch * b.classes};
      double* al = alpha + i * b.frames * b.width;
      std::fill(al, al + b.frames * b.width, 0.0);  // padding: defined, deterministic output
      double log_p;
      if (frames == 0) {
        log_p = empty_input_log_likelihood(ext);
      } else {
        log_p = forward_linear(x, frames, ext, al, b.width);
        if (std::isnan(log_p)) {
          log_p = forward_log(x, frames, ext, la);
          al[0] = std::numeric_limits<double>::quiet_NaN();  // backward: use log space too
        }
      }
      ll[i] = log_p;
      const double nll = -log_p;
      loss[i] = T(a.zero_infinity && std::isinf(nll) ? 0.0 : nll);
    }
  });
}

// Adds -g * posterior(state s) to grad[l'_s] for frame t, from unnormalized per-state weights
// q (alpha * beta); false when their sum underflows (the caller switches to log space).
bool add_posteriors(const std::vector<int64_t>& ext, const double* q, double g, double* grad) {
  double z = 0;
  for (std::size_t s = 0; s < ext.size(); ++s) z += q[s];
  if (!(z >= kUnderflow)) return false;
  const double k = -g / z;
  for (std::size_t s = 0; s < ext.size(); ++s) grad[ext[s]] += k * q[s];
  return true;
}

// The linear-space backward pass into grad ([F, C] float64, zeroed); false when the sample
// needs the log-space path.
template <class T>
bool backward_linear(const SampleLogProbs<T>& x, int64_t frames, const std::vector<int64_t>& ext,
                     const double* alpha, int64_t width, int64_t classes, double g,
                     std::vector<double>& grad) {
  const std::size_t n = ext.size();
  std::vector<double> beta(n, 0.0), next(n), e(n), q(n);
  beta[n - 1] = 1;
  if (n > 1) beta[n - 2] = 1;
  for (int64_t t = frames - 1; t >= 0; --t) {
    if (t < frames - 1) {
      // beta_t from beta_{t+1} and frame t+1's emissions.
      if (scaled_emissions(x, t + 1, ext, e) == kNegInf) return false;
      for (std::size_t s = 0; s < n; ++s) next[s] = beta[s] * e[s];
      for (std::size_t s = 0; s < n; ++s) {
        double v = next[s];
        if (s + 1 < n) v += next[s + 1];
        if (s + 2 < n && can_skip(ext, s + 2)) v += next[s + 2];
        beta[s] = v;
      }
      if (std::isnan(renormalize(beta.data(), n))) return false;
    }
    const double* a = alpha + t * width;
    for (std::size_t s = 0; s < n; ++s) q[s] = a[s] * beta[s];
    if (!add_posteriors(ext, q.data(), g, grad.data() + t * classes)) return false;
  }
  return true;
}

// The log-space backward pass into grad ([F, C] float64, zeroed).
template <class T>
void backward_log(const SampleLogProbs<T>& x, int64_t frames, const std::vector<int64_t>& ext,
                  double log_p, int64_t classes, double g, std::vector<double>& grad) {
  const std::size_t n = ext.size();
  std::vector<double> la;
  forward_log(x, frames, ext, la);
  std::vector<double> lb(n, kNegInf), next(n), lq(n);
  lb[n - 1] = 0;
  if (n > 1) lb[n - 2] = 0;
  for (int64_t t = frames - 1; t >= 0; --t) {
    if (t < frames - 1) {
      for (std::size_t s = 0; s < n; ++s) {
        next[s] = lb[s] == kNegInf ? kNegInf : lb[s] + x.at(t + 1, ext[s]);
      }
      for (std::size_t s = 0; s < n; ++s) {
        double v = next[s];
        if (s + 1 < n) v = log_add(v, next[s + 1]);
        if (s + 2 < n && can_skip(ext, s + 2)) v = log_add(v, next[s + 2]);
        lb[s] = v;
      }
    }
    const double* a = la.data() + t * static_cast<int64_t>(n);
    double* row = grad.data() + t * classes;
    for (std::size_t s = 0; s < n; ++s) {
      const double lq_s = a[s] + lb[s];
      if (lq_s != kNegInf) row[ext[s]] -= g * std::exp(lq_s - log_p);
    }
  }
}

template <class T>
void ctc_loss_backward_kernel(TensorSpan in, std::span<Tensor> out, const CtcLossAttrs& a) {
  const CtcBatch b = check_batch(in.subspan(1, 4), a);
  Tensor gt = dense(in[0]), lp = dense(in[1]);
  const T* gp = static_cast<const T*>(gt.data_ptr());
  const T* lpp = static_cast<const T*>(lp.data_ptr());
  Tensor alpha_t = dense(in[5]), ll_t = dense(in[6]);
  const double* alpha = static_cast<const double*>(alpha_t.data_ptr());
  const double* ll = static_cast<const double*>(ll_t.data_ptr());
  T* dx = static_cast<T*>(out[0].data_ptr());
  const int64_t c = b.classes, row_stride = b.batch * b.classes;
  const int64_t cells = std::max<int64_t>(1, b.frames * b.width);
  parallel_for(0, b.batch, std::max<int64_t>(1, 8192 / cells), [&](int64_t i0, int64_t i1) {
    std::vector<double> grad;
    for (int64_t i = i0; i < i1; ++i) {
      const std::vector<int64_t>& ext = b.extended[static_cast<std::size_t>(i)];
      const int64_t frames = b.input_lengths[static_cast<std::size_t>(i)];
      const double g = static_cast<double>(gp[i]), log_p = ll[i];
      const double* al = alpha + i * b.frames * b.width;
      grad.assign(static_cast<std::size_t>(b.frames * c), 0.0);
      if (log_p == kNegInf) {
        // No alignment: zero_infinity zeroes the gradient; otherwise it is undefined (NaN),
        // as torch's, on the frames the sample has.
        if (!a.zero_infinity) {
          std::fill(grad.begin(), grad.begin() + frames * c,
                    std::numeric_limits<double>::quiet_NaN());
        }
      } else if (frames > 0) {
        const SampleLogProbs<T> x{lpp + i * c, row_stride};
        const bool linear =
            !std::isnan(al[0]) && backward_linear(x, frames, ext, al, b.width, c, g, grad);
        if (!linear) {
          std::fill(grad.begin(), grad.end(), 0.0);
          backward_log(x, frames, ext, log_p, c, g, grad);
        }
      }
      for (int64_t t = 0; t < b.frames; ++t) {
        T* row = dx + t * row_stride + i * c;
        const double* gr = grad.data() + t * c;
        for (int64_t k = 0; k < c; ++k) row[k] = T(gr[k]);
      }
    }
  });
}

const bool registered = [] {
  register_cpu_floating(op_ctc_loss(), []<class T>() { return &ctc_loss_kernel<T>; });
  register_cpu_floating(op_ctc_loss_backward(),
                        []<class T>() { return &ctc_loss_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
