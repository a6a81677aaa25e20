// Helpers shared by the NN functional kernels (softmax, norms, dropout, embedding): dense
// operands, small per-channel vectors, a vectorizable exp, lane-strip sums and mergeable
// moments for numerically robust, thread-count-independent statistics.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "athanor/ops/copy.h"
#include "athanor/tensor/tensor.h"
#include "exp_fast.h"

namespace ath::kernels {

// Copies t into out (contiguous, t's shape and dtype) by the clone kernel directly: a kernel's
// scratch copy must not be recorded by autograd or seen by a tracer. A transposed t takes the
// clone kernel's tiled register transposes.
inline void dense_into(const Tensor& t, Tensor& out) {
  auto kernel = op_clone().typed_kernel(DeviceType::CPU, t.dtype());
  Tensor in[1] = {t};
  kernel(TensorSpan(in), std::span<Tensor>(&out, 1), NoAttrs{});
}

// t itself when contiguous, else a contiguous copy (dense_into).
inline Tensor dense(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = empty(t.shape(), t.dtype());
  dense_into(t, out);
  return out;
}

// The values of a small tensor (weights, statistics) as S, any dtype or layout; a contiguous
// tensor of dtype S is read in place.
template <class S>
class Values {
 public:
  Values() = default;
  explicit Values(const Tensor& t) {
    if (!t.defined()) return;
    if (t.is_contiguous() && t.dtype() == cpp_to_dtype<S>()) {
      ptr_ = static_cast<const S*>(t.data_ptr());
    } else {
      own_ = t.to_vector<S>();
      ptr_ = own_.data();
    }
  }
  const S* data() const { return ptr_; }
  S operator[](int64_t i) const { return ptr_[i]; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  std::vector<S> own_;
  const S* ptr_ = nullptr;
};

// The first n values of an optional parameter (weight, bias) as C, or n copies of `fallback`
// when it is absent.
template <class C>
std::vector<C> param_or(const Tensor& t, bool present, int64_t n, C fallback) {
  if (!present) return std::vector<C>(static_cast<std::size_t>(n), fallback);
  Values<C> v(t);
  return std::vector<C>(v.data(), v.data() + n);
}

template <class C>
inline C exp_c(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return exp_fast(x);
  } else {
    return std::exp(x);
  }
}

// sum over j in [0, n) of f(j), in fixed 16-lane strips combined by a fixed tree: vectorizes,
// and the order (hence the result) depends only on n.
template <class Acc, class F>
inline Acc lane_sum(int64_t n, const F& f) {
  constexpr int kL = 16;
  Acc lanes[kL] = {};
  int64_t j = 0;
  for (; j + kL <= n; j += kL) {
    for (int l = 0; l < kL; ++l) lanes[l] += f(j + l);
  }
  for (int l = 0; j < n; ++j, ++l) lanes[l] += f(j);
  for (int w = kL / 2; w >= 1; w /= 2) {
    for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  }
  return lanes[0];
}

template <class Acc, class F>
inline Acc lane_max(int64_t n, const F& f) {
  constexpr int kL = 16;
  Acc lanes[kL];
  for (auto& v : lanes) v = -std::numeric_limits<Acc>::infinity();
  int64_t j = 0;
  for (; j + kL <= n; j += kL) {
    for (int l = 0; l < kL; ++l) lanes[l] = std::max(lanes[l], f(j + l));
  }
  for (int l = 0; j < n; ++j, ++l) lanes[l] = std::max(lanes[l], f(j));
  for (int w = kL / 2; w >= 1; w /= 2) {
    for (int l = 0; l < w; ++l) lanes[l] = std::max(lanes[l], lanes[l + w]);
  }
  return lanes[0];
}

// Count, mean and sum of squared deviations of a set of values; two sets merge exactly (Chan et
// al.), so statistics are built from fixed chunks and merged in a fixed order.
struct Moments {
  double n = 0, mean = 0, m2 = 0;
};

inline Moments merge(const Moments& a, const Moments& b) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  double n = a.n + b.n, d = b.mean - a.mean;
  return {n, a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * b.n / n)};
}

inline constexpr int64_t kMomentChunk = 4096;

// Moments of a contiguous run: each chunk of kMomentChunk elements is read twice while it is in
// cache (mean, then squared deviations: no cancellation), and the chunks merge in order.
template <class T>
Moments run_moments(const T* p, int64_t n) {
  Moments acc;
  for (int64_t start = 0; start < n; start += kMomentChunk) {
    const T* q = p + start;
    int64_t len = std::min(kMomentChunk, n - start);
    double mean = lane_sum<double>(len, [q](int64_t j) { return double(q[j]); }) / double(len);
    double m2 = lane_sum<double>(len, [q, mean](int64_t j) {
      double d = double(q[j]) - mean;
      return d * d;
    });
    acc = merge(acc, Moments{double(len), mean, m2});
  }
  return acc;
}

// Empty tensor of shape [0] standing for an output a backward op was asked not to compute.
inline bool skipped(const Tensor& t) { return t.dim() == 1 && t.shape()[0] == 0; }

}  // namespace ath::kernels
