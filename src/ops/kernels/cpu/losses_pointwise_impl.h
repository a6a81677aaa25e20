// The elementwise loss kernels' bodies, included by losses_pointwise.cpp once per instruction
// set inside its own namespace (see isa_dispatch.h). No include guard on purpose.
//
// Memory contract: see losses_pointwise.cpp.

#include "losses_simd_impl.h"

// Calls fn(pos, len, offsets) for the rows covering flat positions [begin, end); operand k's
// elements in the row are at offsets[k] + j * w.strides[k][0].
template <std::size_t N, class Fn>
void walk_rows(const Walk<N>& w, int64_t begin, int64_t end, const Fn& fn) {
  std::array<int64_t, kMaxDims> idx{};
  int64_t rem = begin;
  for (int d = 0; d < w.ndim; ++d) {
    idx[d] = rem % w.sizes[d];
    rem /= w.sizes[d];
  }
  for (int64_t pos = begin; pos < end;) {
    const int64_t len = std::min(w.sizes[0] - idx[0], end - pos);
    std::array<int64_t, N> off{};
    for (int d = 0; d < w.ndim; ++d) {
      for (std::size_t k = 0; k < N; ++k) off[k] += idx[d] * w.strides[k][d];
    }
    fn(pos, len, off);
    pos += len;
    idx[0] += len;
    for (int d = 0; d < w.ndim - 1 && idx[d] >= w.sizes[d]; ++d) {
      idx[d] = 0;
      ++idx[d + 1];
    }
  }
}

template <class C>
inline C softplus_neg(C x) {  // log(1 + exp(-x)), stable for any x
  return std::max(-x, C(0)) + log1p_v<C>(exp_v<C>(-std::abs(x)));
}

template <class C>
inline C sigmoid_v(C x) {
  const C e = exp_v<C>(-std::abs(x));  // in (0, 1]: no overflow
  const C r = C(1) / (C(1) + e);
  return x >= 0 ? r : e * r;
}

template <class C>
struct Params {
  C p;  // beta / delta
  bool log_target;
};

template <Kind K, class C>
inline C loss_value(C x, C y, C w, C pw, const Params<C>& q) {
  if constexpr (K == Kind::Mse) {
    const C d = x - y;
    return d * d;
  } else if constexpr (K == Kind::L1) {
    return std::abs(x - y);
  } else if constexpr (K == Kind::SmoothL1) {
    const C z = std::abs(x - y);
    if (q.p == 0) return z;
    return z < q.p ? C(0.5) * z * z / q.p : z - C(0.5) * q.p;
  } else if constexpr (K == Kind::Huber) {
    const C z = std::abs(x - y);
    return z < q.p ? C(0.5) * z * z : q.p * (z - C(0.5) * q.p);
  } else if constexpr (K == Kind::Bce) {
    return w *
           ((y - C(1)) * std::max(log1p_v<C>(-x), C(-100)) - y * std::max(log_v<C>(x), C(-100)));
  } else if constexpr (K == Kind::BceLogits) {
    return w * ((C(1) - y) * x + (C(1) + (pw - C(1)) * y) * softplus_neg(x));
  } else {  // KlDiv: xlogy(y, y) - y * x, or exp(y) * (y - x)
    if (q.log_target) return exp_v<C>(y) * (y - x);
    return (y == 0 ? C(0) : y * log_v<C>(y)) - y * x;
  }
}

// dL/dx (torch's backward formulas, including its conventions at kinks and clamps).
template <Kind K, class C>
inline C loss_grad_x(C x, C y, C w, C pw, const Params<C>& q) {
  const C d = x - y;
  if constexpr (K == Kind::Mse) {
    return C(2) * d;
  } else if constexpr (K == Kind::L1 || K == Kind::SmoothL1) {
    if (K == Kind::L1 || q.p == 0) return C(d > 0) - C(d < 0);
    return d < -q.p ? C(-1) : d > q.p ? C(1) : d / q.p;
  } else if constexpr (K == Kind::Huber) {
    return d < -q.p ? -q.p : d > q.p ? q.p : d;
  } else if constexpr (K == Kind::Bce) {
    return w * d / std::max((C(1) - x) * x, C(1e-12f));  // torch's EPSILON is a float
  } else if constexpr (K == Kind::BceLogits) {
    return w * ((pw * y + C(1) - y) * sigmoid_v(x) - pw * y);
  } else {  // KlDiv
    return q.log_target ? -exp_v<C>(y) : -y;
  }
}

// dL/dy.
template <Kind K, class C>
inline C loss_grad_y(C x, C y, C w, C pw, const Params<C>& q) {
  if constexpr (K == Kind::Mse || K == Kind::L1 || K == Kind::SmoothL1 || K == Kind::Huber) {
    return -loss_grad_x<K, C>(x, y, w, pw, q);
  } else if constexpr (K == Kind::Bce) {
    return w * (log1p_v<C>(-x) - log_v<C>(x));  // -logit(x)
  } else if constexpr (K == Kind::BceLogits) {
    return w * ((pw - C(1)) * softplus_neg(x) - x);
  } else {  // KlDiv; torch's xlogy gradient makes dy NaN where y == 0
    if (q.log_target) return exp_v<C>(y) * (y - x + C(1));
    return (y == 0 ? std::numeric_limits<C>::quiet_NaN() : log_v<C>(y) + C(1)) - x;
  }
}

// Operand access with the layout fixed at compile time, so the row loops vectorize: Unit means
// stride 1 (same-shape contiguous operands, or [C] weights along [N, C] rows); an absent
// operand is never loaded (a masked load through a null pointer would be a microcode assist).
template <class T, bool Present, bool Unit>
struct Operand {
  const T* p = nullptr;
  int64_t s = 0;
  template <class C>
  C at(int64_t j, C absent) const {
    if constexpr (!Present) {
      return absent;
    } else {
      return C(p[Unit ? j : j * s]);
    }
  }
};

// Calls fn.template operator()<Unit, HasWeight, HasPosWeight>() for the runtime layout; the
// weights exist only for the losses that take them.
template <Kind K, class Fn>
void with_modes(bool unit, bool has_w, bool has_pw, const Fn& fn) {
  auto pick_pw = [&]<bool U, bool W>() {
    if constexpr (num_loss_inputs(K) >= 4) {
      if (has_pw) return fn.template operator()<U, W, true>();
    }
    fn.template operator()<U, W, false>();
  };
  auto pick_w = [&]<bool U>() {
    if constexpr (num_loss_inputs(K) >= 3) {
      if (has_w) return pick_pw.template operator()<U, true>();
    }
    pick_pw.template operator()<U, false>();
  };
  if (unit) {
    pick_w.template operator()<true>();
  } else {
    pick_w.template operator()<false>();
  }
}

constexpr int64_t kBuf = 256;

template <class T, Kind K>
void loss_kernel(TensorSpan in, std::span<Tensor> out, const PointwiseLossAttrs& a) {
  using C = compute_t<T>;
  constexpr int nin = num_loss_inputs(K);
  const Tensor &x = in[0], &y = in[1];
  const Tensor* w = nin >= 3 && a.has_weight ? &in[2] : nullptr;
  const Tensor* pw = nin >= 4 && a.has_pos_weight ? &in[3] : nullptr;
  const Walk<4> wk = make_walk<4>(x.shape(), {&x, &y, w, pw});
  const std::array<const T*, 4> bp{static_cast<const T*>(x.data_ptr()),
                                   static_cast<const T*>(y.data_ptr()),
                                   w != nullptr ? static_cast<const T*>(w->data_ptr()) : nullptr,
                                   pw != nullptr ? static_cast<const T*>(pw->data_ptr()) : nullptr};
  const bool unit = unit_rows(wk, {true, true, w != nullptr, pw != nullptr});
  const Params<C> q{C(a.param), a.log_target};
  const bool reduce = a.reduction != Reduction::None;
  const int64_t n = x.numel(), chunks = (n + kLossBlockElems - 1) / kLossBlockElems;
  std::vector<double> partial(static_cast<std::size_t>(reduce ? chunks : 0));
  T* o = static_cast<T*>(out[0].data_ptr());
  with_modes<K>(unit, w != nullptr, pw != nullptr, [&]<bool U, bool W, bool P>() {
    for_each_block(chunks, kLossBlockElems, [&](int64_t c) {
      const int64_t b = c * kLossBlockElems, e = std::min(n, b + kLossBlockElems);
      bool bad = false;
      double acc = 0;
      walk_rows(wk, b, e, [&](int64_t pos, int64_t len, const std::array<int64_t, 4>& off) {
        const Operand<T, true, U> ox{bp[0] + off[0], wk.strides[0][0]};
        const Operand<T, true, U> oy{bp[1] + off[1], wk.strides[1][0]};
        Operand<T, W, U> ow;
        Operand<T, P, U> op;
        if constexpr (W) ow = {bp[2] + off[2], wk.strides[2][0]};
        if constexpr (P) op = {bp[3] + off[3], wk.strides[3][0]};
        C buf[kBuf];
        for (int64_t j0 = 0; j0 < len; j0 += kBuf) {
          const int64_t m = std::min(kBuf, len - j0);
          bool row_bad = false;
          for (int64_t j = 0; j < m; ++j) {
            const C xv = ox.at(j0 + j, C(0));
            if constexpr (K == Kind::Bce) row_bad |= !(xv >= 0 && xv <= 1);
            buf[j] = loss_value<K, C>(xv, oy.at(j0 + j, C(0)), ow.at(j0 + j, C(1)),
                                      op.at(j0 + j, C(1)), q);
          }
          bad = bad || row_bad;
          if (reduce) {
            acc += row_sum<double>(m, [&buf](int64_t j) { return double(buf[j]); });
          } else {
            for (int64_t j = 0; j < m; ++j) o[pos + j0 + j] = T(buf[j]);
          }
        }
      });
      ATH_CHECK(!bad, ValueError, "all elements of input should be between 0 and 1");
      if (reduce) partial[static_cast<std::size_t>(c)] = acc;
    });
  });
  if (!reduce) return;
  double total = 0;
  for (double p : partial) total += p;
  o[0] = T(total / divisor(a.reduction, x.shape()));  // mean of nothing: 0 / 0 = NaN
}

// One pass per requested gradient (dx, dy): each vectorizes, and an unneeded one costs nothing.
template <class T, Kind K>
void loss_backward_kernel(TensorSpan in, std::span<Tensor> out, const PointwiseLossAttrs& a) {
  using C = compute_t<T>;
  constexpr int nin = num_loss_inputs(K);
  const Tensor &g = in[0], &x = in[1], &y = in[2];
  const Tensor* w = nin >= 3 && a.has_weight ? &in[3] : nullptr;
  const Tensor* pw = nin >= 4 && a.has_pos_weight ? &in[4] : nullptr;
  const Walk<5> wk = make_walk<5>(x.shape(), {&g, &x, &y, w, pw});
  const std::array<const T*, 5> bp{static_cast<const T*>(g.data_ptr()),
                                   static_cast<const T*>(x.data_ptr()),
                                   static_cast<const T*>(y.data_ptr()),
                                   w != nullptr ? static_cast<const T*>(w->data_ptr()) : nullptr,
                                   pw != nullptr ? static_cast<const T*>(pw->data_ptr()) : nullptr};
  // A 0-dim g (the reductions) is read once per row: it doesn't decide the layout.
  const bool scalar_g = g.dim() == 0;
  const bool unit = unit_rows(wk, {!scalar_g, true, true, w != nullptr, pw != nullptr});
  const Params<C> q{C(a.param), a.log_target};
  const C inv = C(1.0 / divisor(a.reduction, x.shape()));
  const int64_t n = x.numel(), chunks = (n + kLossBlockElems - 1) / kLossBlockElems;
  for (int which = 0; which < 2; ++which) {
    if (!a.grad_mask[which]) continue;
    T* dst = static_cast<T*>(out[which].data_ptr());
    with_modes<K>(unit, w != nullptr, pw != nullptr, [&]<bool U, bool W, bool P>() {
      for_each_block(chunks, kLossBlockElems, [&](int64_t c) {
        const int64_t b = c * kLossBlockElems, e = std::min(n, b + kLossBlockElems);
        walk_rows(wk, b, e, [&](int64_t pos, int64_t len, const std::array<int64_t, 5>& off) {
          const Operand<T, true, U> og{bp[0] + off[0], wk.strides[0][0]};
          const Operand<T, true, U> ox{bp[1] + off[1], wk.strides[1][0]};
          const Operand<T, true, U> oy{bp[2] + off[2], wk.strides[2][0]};
          Operand<T, W, U> ow;
          Operand<T, P, U> op;
          if constexpr (W) ow = {bp[3] + off[3], wk.strides[3][0]};
          if constexpr (P) op = {bp[4] + off[4], wk.strides[4][0]};
          T* d = dst + pos;
          auto run = [&](auto scale) {
            if (which == 0) {
              for (int64_t j = 0; j < len; ++j) {
                d[j] = T(scale(j) * loss_grad_x<K, C>(ox.at(j, C(0)), oy.at(j, C(0)),
                                                      ow.at(j, C(1)), op.at(j, C(1)), q));
              }
            } else {
              for (int64_t j = 0; j < len; ++j) {
                d[j] = T(scale(j) * loss_grad_y<K, C>(ox.at(j, C(0)), oy.at(j, C(0)),
                                                      ow.at(j, C(1)), op.at(j, C(1)), q));
              }
            }
          };
          if (scalar_g) {
            const C g0 = C(bp[0][0]) * inv;
            run([g0](int64_t) { return g0; });
          } else {
            run([&og, inv](int64_t j) { return og.at(j, C(0)) * inv; });
          }
        });
      });
    });
  }
}
