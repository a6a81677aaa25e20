// CPU kernels for softmax, log_softmax and their backward ops.
//
// Memory contract: inputs are read (a non-contiguous input is first copied to a dense scratch);
// the output (contiguous) is written once per element, after the row statistics are known.
// Layout: the input is [outer, D, inner] around the softmax dim. With inner == 1 each row of D
// is contiguous and handled by one thread (max, exp-sum, write: the row stays in cache);
// otherwise blocks of kBlock adjacent columns are processed together so the inner loops run over
// contiguous memory. Each output depends only on its own column, summed in a fixed order, so
// results do not depend on the thread count. 16-bit floats compute in float.
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/ops/nn_functional.h"
#include "common/nn_common.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

constexpr int64_t kBlock = 64;

struct Layout {
  int64_t outer = 1, d = 1, inner = 1;
};

Layout layout_of(const Tensor& t, int64_t dim) {
  Layout l;
  if (t.dim() == 0) return l;
  for (int64_t i = 0; i < dim; ++i) l.outer *= t.shape()[i];
  l.d = t.shape()[dim];
  for (int64_t i = dim + 1; i < t.dim(); ++i) l.inner *= t.shape()[i];
  return l;
}

// Runs fn(o, i0, w) over every (outer index, block of w columns starting at i0), in parallel.
template <class Fn>
void for_blocks(const Layout& l, const Fn& fn) {
  if (l.outer * l.inner == 0) return;
  if (l.inner == 1) {
    int64_t grain = std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(l.d, 1));
    parallel_for(0, l.outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) fn(o, 0, 1);
    });
    return;
  }
  int64_t nblk = (l.inner + kBlock - 1) / kBlock;
  int64_t grain = std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(l.d * kBlock, 1));
  parallel_for(0, l.outer * nblk, grain, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t o = k / nblk, i0 = (k % nblk) * kBlock;
      fn(o, i0, std::min(kBlock, l.inner - i0));
    }
  });
}

template <class T, bool Log>
void softmax_kernel(TensorSpan in, std::span<Tensor> out, const SoftmaxAttrs& a) {
  using C = compute_t<T>;
  Tensor x = dense(in[0]);
  Layout l = layout_of(x, a.dim);
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(out[0].data_ptr());
  const int64_t D = l.d, inner = l.inner;
  for_blocks(l, [&](int64_t o, int64_t i0, int64_t w) {
    const T* xb = xp + o * D * inner + i0;
    T* yb = yp + o * D * inner + i0;
    if (w == 1 && inner == 1) {
      C m = lane_max<C>(D, [xb](int64_t j) { return C(xb[j]); });
      if constexpr (Log) {
        // (x - max) - log(sum), not x - (max + log(sum)): the latter rounds at max's scale.
        C s = lane_sum<C>(D, [xb, m](int64_t j) { return exp_c<C>(C(xb[j]) - m); });
        C ls = std::log(s);
        for (int64_t j = 0; j < D; ++j) yb[j] = T((C(xb[j]) - m) - ls);
      } else if constexpr (std::is_same_v<T, C>) {
        C s = lane_sum<C>(D, [xb, yb, m](int64_t j) { return yb[j] = exp_c<C>(xb[j] - m); });
        C inv = C(1) / s;
        for (int64_t j = 0; j < D; ++j) yb[j] *= inv;
      } else {  // 16-bit output: keep the exponentials in float until the final rounding
        thread_local std::vector<C> buf;
        buf.resize(static_cast<std::size_t>(D));
        C* e = buf.data();
        C s = lane_sum<C>(D, [xb, e, m](int64_t j) { return e[j] = exp_c<C>(C(xb[j]) - m); });
        C inv = C(1) / s;
        for (int64_t j = 0; j < D; ++j) yb[j] = T(e[j] * inv);
      }
      return;
    }
    C m[kBlock], s[kBlock];
    for (int64_t i = 0; i < w; ++i) {
      m[i] = -std::numeric_limits<C>::infinity();
      s[i] = 0;
    }
    for (int64_t j = 0; j < D; ++j) {
      for (int64_t i = 0; i < w; ++i) m[i] = std::max(m[i], C(xb[j * inner + i]));
    }
    // softmax in full precision keeps the exponentials in y and rescales them; otherwise
    // (log, or a 16-bit y) the last pass recomputes from x.
    constexpr bool kStore = !Log && std::is_same_v<T, C>;
    for (int64_t j = 0; j < D; ++j) {
      for (int64_t i = 0; i < w; ++i) {
        C e = exp_c<C>(C(xb[j * inner + i]) - m[i]);
        if constexpr (kStore) yb[j * inner + i] = T(e);
        s[i] += e;
      }
    }
    for (int64_t i = 0; i < w; ++i) s[i] = Log ? std::log(s[i]) : C(1) / s[i];
    for (int64_t j = 0; j < D; ++j) {
      for (int64_t i = 0; i < w; ++i) {
        if constexpr (kStore) {
          yb[j * inner + i] *= s[i];
        } else {
          C v = C(xb[j * inner + i]) - m[i];
          yb[j * inner + i] = T(Log ? v - s[i] : exp_c<C>(v) * s[i]);
        }
      }
    }
  });
}

// softmax_backward: y * (g - sum(g * y)); log_softmax_backward: g - exp(y) * sum(g).
template <class T, bool Log>
void softmax_backward_kernel(TensorSpan in, std::span<Tensor> out, const SoftmaxAttrs& a) {
  using C = compute_t<T>;
  Tensor g = dense(in[0]), y = dense(in[1]);
  Layout l = layout_of(g, a.dim);
  const T* gp = static_cast<const T*>(g.data_ptr());
  const T* yp = static_cast<const T*>(y.data_ptr());
  T* op = static_cast<T*>(out[0].data_ptr());
  const int64_t D = l.d, inner = l.inner;
  auto term = [](C gv, C yv) { return Log ? gv : gv * yv; };
  auto result = [](C gv, C yv, C s) { return Log ? gv - exp_c<C>(yv) * s : yv * (gv - s); };
  for_blocks(l, [&](int64_t o, int64_t i0, int64_t w) {
    int64_t base = o * D * inner + i0;
    const T *gb = gp + base, *yb = yp + base;
    T* ob = op + base;
    if (w == 1 && inner == 1) {
      C s = lane_sum<C>(D, [&](int64_t j) { return term(C(gb[j]), C(yb[j])); });
      for (int64_t j = 0; j < D; ++j) ob[j] = T(result(C(gb[j]), C(yb[j]), s));
      return;
    }
    C s[kBlock] = {};
    for (int64_t j = 0; j < D; ++j) {
      for (int64_t i = 0; i < w; ++i) s[i] += term(C(gb[j * inner + i]), C(yb[j * inner + i]));
    }
    for (int64_t j = 0; j < D; ++j) {
      for (int64_t i = 0; i < w; ++i) {
        int64_t k = j * inner + i;
        ob[k] = T(result(C(gb[k]), C(yb[k]), s[i]));
      }
    }
  });
}

const bool registered = [] {
  register_cpu_floating(op_softmax(), []<class T>() { return &softmax_kernel<T, false>; });
  register_cpu_floating(op_log_softmax(), []<class T>() { return &softmax_kernel<T, true>; });
  register_cpu_floating(op_softmax_backward(),
                        []<class T>() { return &softmax_backward_kernel<T, false>; });
  register_cpu_floating(op_log_softmax_backward(),
                        []<class T>() { return &softmax_backward_kernel<T, true>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
