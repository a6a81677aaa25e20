// The cross_entropy kernels' bodies, included by losses_cross_entropy.cpp once per instruction
// set (plain x86-64, AVX2+FMA, AVX-512) inside its own namespace, so each copy is compiled for
// its ISA and the best one the CPU supports is registered. No include guard on purpose; its
// includer provides the headers (compiled for the baseline ISA); the math it inlines comes from
// losses_simd_impl.h, included here so each copy gets its own.
//
// Memory contract: see losses_cross_entropy.cpp.

#include "losses_simd_impl.h"

constexpr int64_t kCols = 64;  // adjacent positions per block when inner > 1

struct Partial {
  double nll = 0, smooth = 0, weight = 0;
};

// The blocks a layout splits into and the positions each covers.
struct Blocks {
  int64_t count = 0, rows = 1, col_blocks = 1;  // rows: per block when inner == 1
  int64_t elems = 1;                            // elements per block (for the grain)
};

Blocks make_blocks(const ClassLayout& l) {
  Blocks b;
  if (l.positions() == 0) return b;
  const int64_t c = std::max<int64_t>(l.c, 1);
  if (l.inner == 1) {
    b.rows = std::max<int64_t>(1, kLossBlockElems / c);
    b.count = (l.outer + b.rows - 1) / b.rows;
    b.elems = b.rows * c;
  } else {
    b.col_blocks = (l.inner + kCols - 1) / kCols;
    b.count = l.outer * b.col_blocks;
    b.elems = kCols * c;
  }
  return b;
}

template <class T>
void cross_entropy_kernel(TensorSpan in, std::span<Tensor> out, const CrossEntropyAttrs& a) {
  using C = compute_t<T>;
  Tensor x = dense(in[0]);
  const ClassLayout l = class_layout(x.shape());
  const int64_t nc = l.c, inner = l.inner;
  const T* xp = static_cast<const T*>(x.data_ptr());
  Values<C> wv(a.has_weight ? in[2] : Tensor());
  const C* w = wv.data();
  double wsum_d = static_cast<double>(nc);
  if (w != nullptr) {
    wsum_d = 0;
    for (int64_t j = 0; j < nc; ++j) wsum_d += double(w[j]);
  }
  const C wsum = C(wsum_d);
  const bool smooth = a.label_smoothing > 0;
  const double keep = 1 - a.label_smoothing;
  const double lsc = smooth ? a.label_smoothing / static_cast<double>(nc) : 0;
  C* lse = static_cast<C*>(out[1].data_ptr());
  T* per_pos = a.reduction == Reduction::None ? static_cast<T*>(out[0].data_ptr()) : nullptr;
  const Blocks blocks = make_blocks(l);
  std::vector<Partial> partial(static_cast<std::size_t>(blocks.count));

  with_targets(in[1], nc, a.ignore_index, [&](const auto* tp) {
    // Position p's loss from its row statistics: m = max, s = sum exp(x - m), sm = sum w (x - m);
    // xt(t) reads the target's logit.
    auto finish = [&](int64_t p, C m, C s, C sm, const auto& xt, Partial& part) {
      const C logs = std::log(s);
      lse[p] = m + logs;
      const auto t = static_cast<int64_t>(tp[p]);
      if (t == a.ignore_index) {
        if (per_pos != nullptr) per_pos[p] = T(0);
        return;
      }
      const C wt = w != nullptr ? w[t] : C(1);
      const C nll = wt * ((m - xt(t)) + logs);
      const C sml = smooth ? wsum * logs - sm : C(0);  // -sum_c w_c * log_softmax_c
      if (per_pos != nullptr) per_pos[p] = T(C(keep) * nll + C(lsc) * sml);
      part.nll += double(nll);
      part.smooth += double(sml);
      part.weight += double(wt);
    };
    for_each_block(blocks.count, blocks.elems, [&](int64_t k) {
      Partial& part = partial[static_cast<std::size_t>(k)];
      if (inner == 1) {
        const int64_t r1 = std::min(l.outer, (k + 1) * blocks.rows);
        for (int64_t r = k * blocks.rows; r < r1; ++r) {
          const T* xr = xp + r * nc;
          if (nc < 16) {  // short rows: plain loops beat the 16-lane strips' fixed cost
            C m = -std::numeric_limits<C>::infinity(), s = 0, sm = 0;
            for (int64_t j = 0; j < nc; ++j) m = std::max(m, C(xr[j]));
            for (int64_t j = 0; j < nc; ++j) {
              const C v = C(xr[j]) - m;
              s += exp_v<C>(v);
              if (smooth) sm += (w != nullptr ? w[j] : C(1)) * v;
            }
            finish(
                r, m, s, sm, [xr](int64_t t) { return C(xr[t]); }, part);
            continue;
          }
          const C m = row_max<C>(nc, [xr](int64_t j) { return C(xr[j]); });
          const C s = row_sum<C>(nc, [xr, m](int64_t j) { return exp_v<C>(C(xr[j]) - m); });
          C sm = 0;
          if (smooth && w != nullptr) {
            sm = row_sum<C>(nc, [xr, m, w](int64_t j) { return w[j] * (C(xr[j]) - m); });
          } else if (smooth) {
            sm = row_sum<C>(nc, [xr, m](int64_t j) { return C(xr[j]) - m; });
          }
          finish(
              r, m, s, sm, [xr](int64_t t) { return C(xr[t]); }, part);
        }
        return;
      }
      const int64_t o = k / blocks.col_blocks, i0 = (k % blocks.col_blocks) * kCols;
      const int64_t cols = std::min(kCols, inner - i0);
      const T* xb = xp + o * nc * inner + i0;
      C m[kCols], s[kCols], sm[kCols];
      for (int64_t i = 0; i < cols; ++i) {
        m[i] = -std::numeric_limits<C>::infinity();
        s[i] = sm[i] = 0;
      }
      for (int64_t j = 0; j < nc; ++j) {
        for (int64_t i = 0; i < cols; ++i) m[i] = std::max(m[i], C(xb[j * inner + i]));
      }
      for (int64_t j = 0; j < nc; ++j) {
        const C wj = w != nullptr ? w[j] : C(1);
        for (int64_t i = 0; i < cols; ++i) {
          const C v = C(xb[j * inner + i]) - m[i];
          s[i] += exp_v<C>(v);
          if (smooth) sm[i] += wj * v;
        }
      }
      for (int64_t i = 0; i < cols; ++i) {
        const T* xc = xb + i;
        finish(
            o * inner + i0 + i, m[i], s[i], sm[i],
            [xc, inner](int64_t t) { return C(xc[t * inner]); }, part);
      }
    });
  });

  Partial total;
  for (const Partial& p : partial) {
    total.nll += p.nll;
    total.smooth += p.smooth;
    total.weight += p.weight;
  }
  *static_cast<C*>(out[2].data_ptr()) = C(total.weight);
  if (a.reduction == Reduction::None) return;
  // Mean divides each part by the total weight separately, as torch does (0 / 0 is NaN even
  // where the smoothing part alone would be finite).
  double v = a.reduction == Reduction::Mean ? keep * (total.nll / total.weight) : keep * total.nll;
  if (smooth) {
    v += lsc * (a.reduction == Reduction::Mean ? total.smooth / total.weight : total.smooth);
  }
  *static_cast<T*>(out[0].data_ptr()) = T(v);
}

// Per position: s = g / denom; s1 = (1 - ls) * w[t] * s (the one-hot part), s2 = ls / C * s (the
// uniform part), A = s1 + s2 * sum(w). dx[c] = A * p[c] - s2 * w[c] - (c == t) * s1. Kept as
// separate terms so a zero total weight gives NaN rows, as torch's composition does.
// Memory contract: dx may be x itself (InplacePolicy::OverInput1): each logit is read before
// its gradient is written, the target's included.
template <class T>
void cross_entropy_backward_kernel(TensorSpan in, std::span<Tensor> out,
                                   const CrossEntropyAttrs& a) {
  using C = compute_t<T>;
  Tensor g = dense(in[0]), x = dense(in[1]);
  const ClassLayout l = class_layout(x.shape());
  const int64_t nc = l.c, inner = l.inner;
  const T* xp = static_cast<const T*>(x.data_ptr());
  const T* gp = static_cast<const T*>(g.data_ptr());
  T* dx = static_cast<T*>(out[0].data_ptr());
  Values<C> wv(a.has_weight ? in[3] : Tensor());
  const C* w = wv.data();
  Values<C> lsev(in[4]);
  const C* lse = lsev.data();
  double wsum_d = static_cast<double>(nc);
  if (w != nullptr) {
    wsum_d = 0;
    for (int64_t j = 0; j < nc; ++j) wsum_d += double(w[j]);
  }
  const C wsum = C(wsum_d);
  const bool smooth = a.label_smoothing > 0;
  const C keep = C(1 - a.label_smoothing);
  const C lsc = smooth ? C(a.label_smoothing / static_cast<double>(nc)) : C(0);
  const bool per_pos_g = a.reduction == Reduction::None;
  const C denom = a.reduction == Reduction::Mean ? C(in[5].item<double>()) : C(1);
  const Blocks blocks = make_blocks(l);

  with_targets(in[2], nc, a.ignore_index, [&](const auto* tp) {
    struct Coef {
      C A = 0, s1 = 0, s2 = 0;
      int64_t t = -1;  // -1: ignored
    };
    auto coef = [&](int64_t p) {
      Coef k;
      const auto t = static_cast<int64_t>(tp[p]);
      if (t == a.ignore_index) return k;
      const C s = (per_pos_g ? C(gp[p]) : C(gp[0])) / denom;
      k.t = t;
      k.s1 = keep * (w != nullptr ? w[t] : C(1)) * s;
      k.s2 = smooth ? lsc * s : C(0);
      k.A = smooth ? k.s1 + k.s2 * wsum : k.s1;
      return k;
    };
    auto target_value = [&](const Coef& k, C xt, C lse_p) {
      return T(k.A * exp_v<C>(xt - lse_p) - k.s2 * (w != nullptr ? w[k.t] : C(1)) - k.s1);
    };
    for_each_block(blocks.count, blocks.elems, [&](int64_t b) {
      if (inner == 1) {
        const int64_t r1 = std::min(l.outer, (b + 1) * blocks.rows);
        for (int64_t r = b * blocks.rows; r < r1; ++r) {
          const T* xr = xp + r * nc;
          T* dr = dx + r * nc;
          const Coef k = coef(r);
          const C A = k.A, s2 = k.s2, L = lse[r];
          const C xt = k.t >= 0 ? C(xr[k.t]) : C(0);  // read first: dx may be written over x
          if (smooth && w != nullptr) {
            for (int64_t j = 0; j < nc; ++j) dr[j] = T(A * exp_v<C>(C(xr[j]) - L) - s2 * w[j]);
          } else if (smooth) {
            for (int64_t j = 0; j < nc; ++j) dr[j] = T(A * exp_v<C>(C(xr[j]) - L) - s2);
          } else {
            for (int64_t j = 0; j < nc; ++j) dr[j] = T(A * exp_v<C>(C(xr[j]) - L));
          }
          if (k.t >= 0) dr[k.t] = target_value(k, xt, L);
        }
        return;
      }
      const int64_t o = b / blocks.col_blocks, i0 = (b % blocks.col_blocks) * kCols;
      const int64_t cols = std::min(kCols, inner - i0);
      const int64_t base = o * nc * inner + i0;
      Coef k[kCols];
      C A[kCols], S2[kCols], L[kCols];  // by column, so the class loop vectorizes
      C xt[kCols];                      // the target logits, read first: dx may be written over x
      for (int64_t i = 0; i < cols; ++i) {
        k[i] = coef(o * inner + i0 + i);
        A[i] = k[i].A;
        S2[i] = k[i].s2;
        L[i] = lse[o * inner + i0 + i];
        xt[i] = k[i].t >= 0 ? C(xp[base + k[i].t * inner + i]) : C(0);
      }
      for (int64_t j = 0; j < nc; ++j) {
        const C wj = w != nullptr ? w[j] : C(1);
        const T* xr = xp + base + j * inner;
        T* dr = dx + base + j * inner;
        for (int64_t i = 0; i < cols; ++i) dr[i] = T(A[i] * exp_v<C>(C(xr[i]) - L[i]) - S2[i] * wj);
      }
      for (int64_t i = 0; i < cols; ++i) {
        if (k[i].t < 0) continue;
        dx[base + k[i].t * inner + i] = target_value(k[i], xt[i], L[i]);
      }
    });
  });
}
