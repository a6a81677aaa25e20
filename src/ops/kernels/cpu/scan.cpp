// CPU kernels for cumsum, cumprod, cumprod_backward and cumprod_double_backward.
//
// Memory contract: x (and grad) are made contiguous (a copy when they are not) and viewed as
// [A, N, B] with N the scanned dim; each element is read once (cumprod_backward: twice) and each
// output element written once. Accumulators are double for float32/float64 (as PyTorch's CPU
// cumsum), float for the 16-bit floats, int64 for integers. Every (a, b) column is scanned
// sequentially by one thread, so results do not depend on the thread count.
// cumprod_double_backward reads its input once and writes zeros.
#include <algorithm>
#include <memory>

#include "athanor/ops/reduction.h"
#include "common/pointwise_loop.h"
#include "common/register.h"

namespace ath::kernels {

namespace {

template <class T>
using scan_acc_t = std::conditional_t<
    std::is_floating_point_v<compute_t<T>>,
    std::conditional_t<std::is_same_v<compute_t<T>, float> && !std::is_same_v<T, float>, float,
                       double>,
    int64_t>;

struct ScanLayout {
  int64_t a = 1, n = 1, b = 1;
};

ScanLayout scan_layout(const Shape& s, int64_t dim) {
  ScanLayout l;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    (d < dim ? l.a : d == dim ? l.n : l.b) *= s[static_cast<std::size_t>(d)];
  }
  return l;
}

// Position of step k (0..n-1) along the scanned dim.
inline int64_t position(int64_t k, int64_t n, bool reverse) { return reverse ? n - 1 - k : k; }

// Runs fn(a, b0, w) over column blocks of at most `block` columns, in parallel.
template <class Fn>
void for_each_block(const ScanLayout& l, int64_t block, const Fn& fn) {
  const int64_t per_a = (l.b + block - 1) / block;
  const int64_t grain = std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(l.n * block, 1));
  parallel_for(0, l.a * per_a, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b0 = (t % per_a) * block;
      fn(t / per_a, b0, std::min(block, l.b - b0));
    }
  });
}

template <class T, bool Prod>
void scan_kernel(TensorSpan in, std::span<Tensor> out, const ScanAttrs& a) {
  if (out[0].numel() == 0) return;
  using Acc = scan_acc_t<T>;
  constexpr int64_t kBlock = 256;
  Tensor x = in[0].contiguous();
  const ScanLayout l = scan_layout(x.shape(), a.dim);
  const T* px = static_cast<const T*>(x.data_ptr());
  T* po = static_cast<T*>(out[0].data_ptr());
  for_each_block(l, kBlock, [&](int64_t ai, int64_t b0, int64_t w) {
    Acc acc[kBlock];
    for (int64_t j = 0; j < w; ++j) acc[j] = Acc(Prod ? 1 : 0);
    for (int64_t k = 0; k < l.n; ++k) {
      const int64_t off = (ai * l.n + position(k, l.n, a.reverse)) * l.b + b0;
      const T* row = px + off;
      T* dst = po + off;
      for (int64_t j = 0; j < w; ++j) {
        const Acc v = static_cast<Acc>(load(row + j));
        if (a.exclusive) dst[j] = static_cast<T>(acc[j]);
        if constexpr (Prod) {
          if constexpr (std::is_integral_v<Acc>) {  // wraps like PyTorch, without UB
            acc[j] = static_cast<Acc>(static_cast<uint64_t>(acc[j]) * static_cast<uint64_t>(v));
          } else {
            acc[j] *= v;
          }
        } else {
          if constexpr (std::is_integral_v<Acc>) {
            acc[j] = static_cast<Acc>(static_cast<uint64_t>(acc[j]) + static_cast<uint64_t>(v));
          } else {
            acc[j] += v;
          }
        }
        if (!a.exclusive) dst[j] = static_cast<T>(acc[j]);
      }
    }
  });
}

// dx[k] = (prod of x before k) * (sum over the later outputs i of g[i] * prod of x strictly
// between k and i), both in scan order: two passes, no division, so zeros are exact.
template <class T>
void cumprod_backward_kernel(TensorSpan in, std::span<Tensor> out, const ScanAttrs& a) {
  if (out[0].numel() == 0) return;
  using Acc = scan_acc_t<T>;
  Tensor g = in[0].contiguous(), x = in[1].contiguous();
  const ScanLayout l = scan_layout(x.shape(), a.dim);
  const T* pg = static_cast<const T*>(g.data_ptr());
  const T* px = static_cast<const T*>(x.data_ptr());
  T* po = static_cast<T*>(out[0].data_ptr());
  // Scratch holds the suffix sums of one column block: keep it near 512 KiB.
  const int64_t block = std::clamp<int64_t>(65536 / std::max<int64_t>(l.n, 1), 1, 256);
  for_each_block(l, block, [&](int64_t ai, int64_t b0, int64_t w) {
    std::unique_ptr<Acc[]> suffix(new Acc[static_cast<std::size_t>(l.n * w)]);
    std::unique_ptr<Acc[]> carry(new Acc[static_cast<std::size_t>(w)]);
    auto offset = [&](int64_t k) { return (ai * l.n + position(k, l.n, a.reverse)) * l.b + b0; };
    // Backwards over steps: inclusive B_k = g_k + x_k' B_k' (k' the next step) is carried as
    // x_k * B_k; exclusive B_k = g_k' + x_k' B_k'.
    for (int64_t j = 0; j < w; ++j) carry[j] = 0;
    for (int64_t k = l.n - 1; k >= 0; --k) {
      const int64_t off = offset(k);
      Acc* s = suffix.get() + k * w;
      for (int64_t j = 0; j < w; ++j) {
        const Acc gv = static_cast<Acc>(load(pg + off + j));
        const Acc xv = static_cast<Acc>(load(px + off + j));
        if (a.exclusive) {
          s[j] = carry[j];
          carry[j] = gv + xv * carry[j];
        } else {
          s[j] = gv + carry[j];
          carry[j] = xv * s[j];
        }
      }
    }
    for (int64_t j = 0; j < w; ++j) carry[j] = 1;  // now the prefix product
    for (int64_t k = 0; k < l.n; ++k) {
      const int64_t off = offset(k);
      const Acc* s = suffix.get() + k * w;
      for (int64_t j = 0; j < w; ++j) {
        po[off + j] = static_cast<T>(carry[j] * s[j]);
        carry[j] *= static_cast<Acc>(load(px + off + j));
      }
    }
  });
}

// Zeros shaped like gg, or NotImplementedError if any element of gg is nonzero (see
// op_cumprod_double_backward). Reads gg once, strided.
template <class T>
void cumprod_double_backward_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  Tensor gg = in[0].contiguous();
  const T* p = static_cast<const T*>(gg.data_ptr());
  for (int64_t i = 0; i < gg.numel(); ++i) {
    ATH_CHECK(static_cast<double>(load(p + i)) == 0.0, NotImplementedError,
              "double backward of cumprod (or prod) with zeros in the input is not implemented");
  }
  T* po = static_cast<T*>(out[0].data_ptr());
  std::fill(po, po + out[0].numel(), T(0));
}

const bool registered = [] {
  register_cpu_numeric(op_cumsum(), []<class T>() { return &scan_kernel<T, false>; });
  register_cpu_numeric(op_cumprod(), []<class T>() { return &scan_kernel<T, true>; });
  register_cpu_floating(op_cumprod_backward(),
                        []<class T>() { return &cumprod_backward_kernel<T>; });
  register_cpu_floating(op_cumprod_double_backward(),
                        []<class T>() { return &cumprod_double_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
