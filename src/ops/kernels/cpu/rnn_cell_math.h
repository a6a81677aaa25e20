// The per-row math of the LSTM and GRU cells, shared by the single-step cell kernels
// (rnn_cells.cpp) and the whole-sequence kernels (rnn_sequence.cpp). Each function handles one
// batch row of H hidden units; the gate blocks of a row are H apart (PyTorch's layout:
// LSTM i, f, g, o; GRU r, z, n). Pointers are __restrict: callers never pass aliasing rows,
// so the loops vectorize.
//
// float uses branch-free approximations that vectorize (exp_fast for sigmoid, a rational
// function for tanh: within 4e-7 absolute of tanh, a few ulp); double uses libm.
//
// The library is built for baseline x86-64 (SSE2: 4 floats a vector). for_rows() runs a row
// loop through a copy compiled for AVX-512 (16 floats) or AVX2 (8 floats), as ath::cpu_isa()
// allows: the row functions and the caller's lambda are always inlined into that copy, so all
// of it is vectorized for the wider ISA. Every copy does the same IEEE operations in the same
// order (no FMA contraction: the kernels build with -ffp-contract=off), so results are bitwise
// identical.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "common/exp_fast.h"
#include "common/isa_dispatch.h"

#define ATH_RNN_INLINE [[gnu::always_inline]] inline
#define ATH_RNN_LAMBDA __attribute__((always_inline))

namespace ath::kernels::rnn {

template <class F>
void for_rows_baseline(int64_t b0, int64_t b1, const F& f) {
  for (int64_t b = b0; b < b1; ++b) f(b);
}
#if ATH_ISA_MULTI
template <class F>
ATH_ISA_TARGET_AVX512 void for_rows_avx512(int64_t b0, int64_t b1, const F& f) {
  for (int64_t b = b0; b < b1; ++b) f(b);
}
template <class F>
ATH_ISA_TARGET_AVX2 void for_rows_avx2(int64_t b0, int64_t b1, const F& f) {
  for (int64_t b = b0; b < b1; ++b) f(b);
}
#endif

// f(b) for every row b in [b0, b1); f must be declared ATH_RNN_LAMBDA and call only
// ATH_RNN_INLINE functions (see the file comment).
template <class F>
void for_rows(int64_t b0, int64_t b1, const F& f) {
#if ATH_ISA_MULTI
  return pick_isa_copy(&for_rows_baseline<F>, &for_rows_avx2<F>, &for_rows_avx512<F>)(b0, b1, f);
#else
  for_rows_baseline(b0, b1, f);
#endif
}

// Rows of hidden units per parallel chunk: a cell costs tens of flops (an exp per gate), so
// a few thousand cells amortise the cost of waking a thread.
inline int64_t row_grain(int64_t hidden) {
  return std::max<int64_t>(1, 4096 / std::max<int64_t>(hidden, 1));
}

ATH_RNN_INLINE float sigmoid(float x) { return 1.0f / (1.0f + exp_fast(-x)); }
ATH_RNN_INLINE double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Eigen's rational approximation of tanh on [-7.9, 7.9] (saturated outside), odd numerator of
// degree 13 over an even denominator of degree 6; tiny inputs return x itself.
ATH_RNN_INLINE float tanh(float x) {
  const float xc = std::min(std::max(x, -7.90531110763549805f), 7.90531110763549805f);
  const float x2 = xc * xc;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * xc;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  const float r = p / q;
  return std::abs(x) < 0.0004f ? x : r;
}
ATH_RNN_INLINE double tanh(double x) { return std::tanh(x); }

// ---- LSTM -----------------------------------------------------------------------------------

// Pre-activations are a[k] (+ b[k] when kSum: the recurrent GEMM's result plus the input
// projection, added here instead of in a separate pass). Writes the activated gates, c and h.
template <class T, bool kSum>
ATH_RNN_INLINE void lstm_forward_row(int64_t H, const T* __restrict a, const T* __restrict b,
                                     const T* __restrict c_prev, T* __restrict acts,
                                     T* __restrict c, T* __restrict h) {
  for (int64_t j = 0; j < H; ++j) {
    T pi = a[j], pf = a[H + j], pg = a[2 * H + j], po = a[3 * H + j];
    if constexpr (kSum) {
      pi += b[j];
      pf += b[H + j];
      pg += b[2 * H + j];
      po += b[3 * H + j];
    }
    const T i = sigmoid(pi), f = sigmoid(pf), g = tanh(pg), o = sigmoid(po);
    const T cj = f * c_prev[j] + i * g;
    acts[j] = i;
    acts[H + j] = f;
    acts[2 * H + j] = g;
    acts[3 * H + j] = o;
    c[j] = cj;
    h[j] = o * tanh(cj);
  }
}

// dh is dh1 (+ dh2 when kSum: the output's gradient plus the recurrent carry). Writes the
// pre-activation gate gradients and d c_prev.
template <class T, bool kSum>
ATH_RNN_INLINE void lstm_backward_row(int64_t H, const T* __restrict dh1, const T* __restrict dh2,
                                      const T* __restrict dc, const T* __restrict acts,
                                      const T* __restrict c_prev, const T* __restrict c,
                                      T* __restrict dgates, T* __restrict dc_prev) {
  for (int64_t j = 0; j < H; ++j) {
    T dh = dh1[j];
    if constexpr (kSum) dh += dh2[j];
    const T i = acts[j], f = acts[H + j], g = acts[2 * H + j], o = acts[3 * H + j];
    const T tc = tanh(c[j]);
    const T dct = dc[j] + dh * o * (T(1) - tc * tc);
    dgates[j] = dct * g * i * (T(1) - i);
    dgates[H + j] = dct * c_prev[j] * f * (T(1) - f);
    dgates[2 * H + j] = dct * i * (T(1) - g * g);
    dgates[3 * H + j] = dh * tc * o * (T(1) - o);
    dc_prev[j] = dct * f;
  }
}

// ---- GRU ------------------------------------------------------------------------------------

// xg, hg: the two projections (r, z, n blocks). Writes r, z, n, the h-side n pre-activation
// (hn_out, when kSaveHn: the sequence kernel keeps it, the cell op has it as an input) and h.
// h = n + z * (h_prev - n), PyTorch's form of (1 - z) n + z h_prev.
template <class T, bool kSaveHn>
ATH_RNN_INLINE void gru_forward_row(int64_t H, const T* __restrict xg, const T* __restrict hg,
                                    const T* __restrict h_prev, T* __restrict acts,
                                    T* __restrict hn_out, T* __restrict h) {
  for (int64_t j = 0; j < H; ++j) {
    const T r = sigmoid(xg[j] + hg[j]);
    const T z = sigmoid(xg[H + j] + hg[H + j]);
    const T hn = hg[2 * H + j];
    const T n = tanh(xg[2 * H + j] + r * hn);
    acts[j] = r;
    acts[H + j] = z;
    acts[2 * H + j] = n;
    if constexpr (kSaveHn) hn_out[j] = hn;
    h[j] = n + z * (h_prev[j] - n);
  }
}

// dh is dh1 (+ dh2 when kSum). hn: the h-side n pre-activation of the row. Writes the gate
// gradients of both projections and the direct part of d h_prev (dh * z; the rest comes
// through W_hh).
template <class T, bool kSum>
ATH_RNN_INLINE void gru_backward_row(int64_t H, const T* __restrict dh1, const T* __restrict dh2,
                                     const T* __restrict acts, const T* __restrict hn,
                                     const T* __restrict h_prev, T* __restrict dxg,
                                     T* __restrict dhg, T* __restrict dh_prev) {
  for (int64_t j = 0; j < H; ++j) {
    T dh = dh1[j];
    if constexpr (kSum) dh += dh2[j];
    const T r = acts[j], z = acts[H + j], n = acts[2 * H + j];
    const T dnp = dh * (T(1) - z) * (T(1) - n * n);
    const T drp = dnp * hn[j] * r * (T(1) - r);
    const T dzp = dh * (h_prev[j] - n) * z * (T(1) - z);
    dxg[j] = drp;
    dxg[H + j] = dzp;
    dxg[2 * H + j] = dnp;
    dhg[j] = drp;
    dhg[H + j] = dzp;
    dhg[2 * H + j] = dnp * r;
    dh_prev[j] = dh * z;
  }
}

}  // namespace ath::kernels::rnn
