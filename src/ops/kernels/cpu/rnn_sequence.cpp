// CPU kernels for lstm_sequence, gru_sequence and their backward ops (float32, float64).
//
// Forward, per step (in processing order; `reverse` walks time backwards): one GEMM
// h_prev [B, H] x W_hh^T [H, G] into a [B, G] scratch reused by every step, then the fused cell
// (rnn_cell_math.h) reads that scratch and the step's rows of xg and writes the activated gates,
// (LSTM) the cell state, and h_t straight into the output, whose rows are the next step's
// h_prev. No per-step allocation; the GRU's b_hh is the GEMM's fused per-column bias.
//
// Backward (backpropagation through time), per step from the last processed to the first: the
// fused cell backward reads d_output's rows plus the recurrent carry and writes the step's gate
// gradients into d_xg (the LSTM's, and the GRU's x side) - which is also the input projection's
// gradient - then one GEMM [B, G] x W_hh [G, H] forms the carry for the step before. The weight
// gradient is one GEMM over all steps afterwards: h_prev of every row gathered transposed into
// [H, T*B], times the gate gradients [T*B, G] (K = T*B is large, so the GEMM runs near peak), and
// the [H, G] result transposed into d_w_hh.
//
// The LSTM saves, per step and row, its activated gates and cell state side by side in one
// workspace [T, B, 5H] (an op has at most four outputs).
//
// Memory contract: inputs are read in place when their last dim is unit-stride (else copied
// dense once); each output element is written once (d_w_hh and d_b_hh through one scratch
// each). Scratch: [B, G] + [B, H] per call (the GRU backward adds its h-side gate gradients,
// [T, B, G]), and [H, T*B] + [H, G] for the weight gradient. GEMMs split rows and columns only
// and column sums run in row order, so results do not depend on the thread count.
#include <cstring>
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/ops/rnn_cells.h"
#include "athanor/tensor/grad_mode.h"
#include "gemm.h"
#include "nn_common.h"
#include "register.h"
#include "rnn_cell_math.h"

namespace ath::kernels {
namespace {

// A sequence tensor [T, B, X] ([B, T, X] when batch_first) with a unit-stride X dim, its rows
// addressed through the time and batch strides.
template <class T>
struct Seq {
  Tensor tensor;  // the tensor read (a dense copy when the input's X dim was strided)
  T* base = nullptr;
  int64_t st = 0, sb = 0;

  T* row(int64_t t, int64_t b) const { return base + t * st + b * sb; }
  // The same rows starting `cols` elements in (the LSTM workspace's cell-state block).
  Seq shifted(int64_t cols) const { return {tensor, base + cols, st, sb}; }
  // Step t's [B, X] rows as a view: a GEMM operand.
  Tensor step(int64_t t, int64_t rows, int64_t x) const {
    return make_view(tensor, {rows, x}, {sb, 1}, tensor.storage_offset() + t * st);
  }
};

template <class T>
Seq<T> seq(const Tensor& t, bool batch_first) {
  Tensor d = (t.shape()[2] <= 1 || t.strides()[2] == 1) ? t : dense(t);
  const std::size_t td = batch_first ? 1 : 0, bd = 1 - td;
  return {d, static_cast<T*>(d.data_ptr()), d.strides()[td], d.strides()[bd]};
}

template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

// A fresh contiguous copy (a carry buffer the kernel overwrites), made without dispatching.
Tensor copy_of(const Tensor& t) {
  Tensor d = dense(t), c = empty(t.shape(), t.dtype());
  std::memcpy(c.data_ptr(), d.data_ptr(), c.nbytes());
  return c;
}

// A step's [B, X] rows of a sequence as a GEMM operand. oneDNN runs its fast (brgemm) kernel
// only on dense rows; with batch_first a step's rows are T * X apart, and a strided operand
// sends the GEMM to a slower kernel after copying both operands (W_hh^T included) every step.
// So when the rows are strided, each row is also staged into a dense [B, X] buffer right after
// it is written (a row copy still in cache, far cheaper than the GEMM).
template <class T>
class StepRows {
 public:
  StepRows(const Seq<T>& seq, int64_t rows, int64_t x) : seq_(seq), rows_(rows), x_(x) {
    if (seq.sb != x && rows > 1) buf_ = empty({rows, x}, seq.tensor.dtype());
  }
  void stage(int64_t t, int64_t b) const {
    if (buf_.defined()) std::memcpy(ptr<T>(buf_) + b * x_, seq_.row(t, b), sizeof(T) * x_);
  }
  Tensor operand(int64_t t) const { return buf_.defined() ? buf_ : seq_.step(t, rows_, x_); }

 private:
  const Seq<T>& seq_;
  int64_t rows_, x_;
  Tensor buf_;
};

// Processing order: step s handles time index order(s).
struct Order {
  int64_t steps;
  bool reverse;
  int64_t operator()(int64_t s) const { return reverse ? steps - 1 - s : s; }
};

// W [G, H] read as W^T [H, G] in place.
Tensor transposed(const Tensor& w) {
  return make_view(w, {w.shape()[1], w.shape()[0]}, {w.strides()[1], w.strides()[0]},
                   w.storage_offset());
}

template <class T>
void copy_rows(T* dst, const Seq<T>& src, int64_t t, int64_t rows, int64_t x) {
  for (int64_t b = 0; b < rows; ++b) std::memcpy(dst + b * x, src.row(t, b), sizeof(T) * x);
}

// dst [cols, rows] = src [rows, cols]^T, in 32 x 32 tiles.
template <class T>
void transpose_into(const T* src, int64_t rows, int64_t cols, T* dst) {
  constexpr int64_t kTile = 32;
  const int64_t tiles = (rows + kTile - 1) / kTile;
  parallel_for(0, tiles, std::max<int64_t>(1, 32768 / std::max<int64_t>(cols * kTile, 1)),
               [&](int64_t i0, int64_t i1) {
                 for (int64_t i = i0 * kTile; i < std::min(rows, i1 * kTile); i += kTile) {
                   for (int64_t j = 0; j < cols; j += kTile) {
                     for (int64_t r = i; r < std::min(rows, i + kTile); ++r) {
                       for (int64_t c = j; c < std::min(cols, j + kTile); ++c) {
                         dst[c * rows + r] = src[r * cols + c];
                       }
                     }
                   }
                 }
               });
}

// dw [G, H] = sum over every (t, b) of dgates(t, b)^T h_prev(t, b), as one GEMM. dgates is a
// contiguous [T, B, G] ([B, T, G] when dgates_bf) tensor; h_prev(t, b) is h0's row for the
// first step processed and the previous step's output row otherwise.
template <class T>
void recurrent_weight_grad(const Tensor& dgates, bool dgates_bf, const Tensor& h0, const Seq<T>& y,
                           Order order, Tensor& dw) {
  const bool bf = dgates_bf;
  const int64_t steps = order.steps, B = h0.shape()[0], H = h0.shape()[1];
  const int64_t G = dgates.shape()[2], N = steps * B;
  if (N == 0 || H == 0 || G == 0) {
    std::memset(dw.data_ptr(), 0, dw.nbytes());
    return;
  }
  // h_prev transposed, its columns in dgates' row order, in 32 x 32 tiles.
  std::vector<const T*> rows(static_cast<std::size_t>(N));
  const T* h0p = ptr<T>(h0);
  for (int64_t r = 0; r < N; ++r) {
    const int64_t t = bf ? r % steps : r / B, b = bf ? r / steps : r % B;
    rows[r] = t == order(0) ? h0p + b * H : y.row(order.reverse ? t + 1 : t - 1, b);
  }
  Tensor hT = empty({H, N}, dgates.dtype());
  T* hp = ptr<T>(hT);
  constexpr int64_t kTile = 32;
  parallel_for(0, (H + kTile - 1) / kTile, 1, [&](int64_t jb0, int64_t jb1) {
    for (int64_t j0 = jb0 * kTile; j0 < std::min(H, jb1 * kTile); j0 += kTile) {
      const int64_t j1 = std::min(H, j0 + kTile);
      for (int64_t r0 = 0; r0 < N; r0 += kTile) {
        const int64_t r1 = std::min(N, r0 + kTile);
        for (int64_t j = j0; j < j1; ++j) {
          for (int64_t r = r0; r < r1; ++r) hp[j * N + r] = rows[r][j];
        }
      }
    }
  });
  Tensor dwT = empty({H, G}, dgates.dtype());
  gemm({.a = hT, .b = make_view(dgates, {N, G}, {G, 1}, dgates.storage_offset()), .c = dwT});
  transpose_into(ptr<T>(dwT), H, G, ptr<T>(dw));
}

// ---- LSTM -----------------------------------------------------------------------------------

template <class T>
void lstm_sequence_kernel(TensorSpan in, std::span<Tensor> out, const RnnSequenceAttrs& a) {
  NoGradGuard no_grad;  // GEMM operands are scratch views, not part of any graph
  const bool bf = a.batch_first;
  const Tensor h0 = dense(in[2]), c0 = dense(in[3]);
  const int64_t B = h0.shape()[0], H = h0.shape()[1], G = 4 * H;
  const Seq<T> xg = seq<T>(in[0], bf), y = seq<T>(out[0], bf), acts = seq<T>(out[3], bf),
               cs = acts.shifted(G);
  const Order order{in[0].shape()[bf ? 1 : 0], a.reverse};
  const Tensor wt = transposed(in[1]);
  Tensor pre = empty({B, G}, in[0].dtype());
  T* pp = ptr<T>(pre);
  const T *h0p = ptr<T>(h0), *c0p = ptr<T>(c0);
  StepRows<T> h_rows(y, B, H);
  for (int64_t s = 0; s < order.steps; ++s) {
    const int64_t t = order(s), tp = s > 0 ? order(s - 1) : -1;
    gemm({.a = s == 0 ? h0 : h_rows.operand(tp), .b = wt, .c = pre});
    parallel_for(0, B, rnn::row_grain(H), [&](int64_t b0, int64_t b1) {
      rnn::for_rows(b0, b1, [&](int64_t b) ATH_RNN_LAMBDA {
        const T* c_prev = s == 0 ? c0p + b * H : cs.row(tp, b);
        rnn::lstm_forward_row<T, true>(H, pp + b * G, xg.row(t, b), c_prev, acts.row(t, b),
                                       cs.row(t, b), y.row(t, b));
        h_rows.stage(t, b);
      });
    });
  }
  if (order.steps == 0) {
    std::memcpy(out[1].data_ptr(), h0p, out[1].nbytes());
    std::memcpy(out[2].data_ptr(), c0p, out[2].nbytes());
  } else {
    copy_rows(ptr<T>(out[1]), y, order(order.steps - 1), B, H);
    copy_rows(ptr<T>(out[2]), cs, order(order.steps - 1), B, H);
  }
}

template <class T>
void lstm_sequence_backward_kernel(TensorSpan in, std::span<Tensor> out,
                                   const RnnSequenceBackwardAttrs& a) {
  NoGradGuard no_grad;
  const bool bf = a.batch_first;
  const Tensor h0 = dense(in[4]), c0 = dense(in[5]);
  const Tensor& w = in[3];
  const int64_t B = h0.shape()[0], H = h0.shape()[1], G = 4 * H;
  const Seq<T> dy = seq<T>(in[0], bf), y = seq<T>(in[6], bf), acts = seq<T>(in[7], bf),
               cs = acts.shifted(G), dxg = seq<T>(out[0], bf);
  const Order order{in[7].shape()[bf ? 1 : 0], a.reverse};
  // carry: d h_prev through W_hh (starts as d h_n); dc[cur]: d c of the step being processed.
  Tensor carry = copy_of(in[1]), dc[2] = {copy_of(in[2]), empty({B, H}, w.dtype())};
  T* cp = ptr<T>(carry);
  const T* c0p = ptr<T>(c0);
  int cur = 0;
  StepRows<T> g_rows(dxg, B, G);
  for (int64_t s = order.steps - 1; s >= 0; --s) {
    const int64_t t = order(s), tp = s > 0 ? order(s - 1) : -1;
    const T* dc_in = ptr<T>(dc[cur]);
    T* dc_out = ptr<T>(dc[1 - cur]);
    parallel_for(0, B, rnn::row_grain(H), [&](int64_t b0, int64_t b1) {
      rnn::for_rows(b0, b1, [&](int64_t b) ATH_RNN_LAMBDA {
        const T* c_prev = s == 0 ? c0p + b * H : cs.row(tp, b);
        rnn::lstm_backward_row<T, true>(H, dy.row(t, b), cp + b * H, dc_in + b * H, acts.row(t, b),
                                        c_prev, cs.row(t, b), dxg.row(t, b), dc_out + b * H);
        g_rows.stage(t, b);
      });
    });
    cur = 1 - cur;
    gemm({.a = g_rows.operand(t), .b = w, .c = carry});
  }
  std::memcpy(out[2].data_ptr(), cp, out[2].nbytes());
  std::memcpy(out[3].data_ptr(), dc[cur].data_ptr(), out[3].nbytes());
  if (a.need_w_hh) recurrent_weight_grad(out[0], bf, h0, y, order, out[1]);
}

// ---- GRU ------------------------------------------------------------------------------------

template <class T>
void gru_sequence_kernel(TensorSpan in, std::span<Tensor> out, const RnnSequenceAttrs& a) {
  NoGradGuard no_grad;
  const bool bf = a.batch_first;
  const Seq<T> xg = seq<T>(in[0], bf), y = seq<T>(out[0], bf), acts = seq<T>(out[2], bf),
               hn = seq<T>(out[3], bf);
  const Tensor b_hh = dense(in[2]), h0 = dense(in[3]);
  const int64_t B = h0.shape()[0], H = h0.shape()[1], G = 3 * H;
  const Order order{in[0].shape()[bf ? 1 : 0], a.reverse};
  const Tensor wt = transposed(in[1]);
  Tensor hg = empty({B, G}, in[0].dtype());
  T* hgp = ptr<T>(hg);
  const T* h0p = ptr<T>(h0);
  StepRows<T> h_rows(y, B, H);
  for (int64_t s = 0; s < order.steps; ++s) {
    const int64_t t = order(s), tp = s > 0 ? order(s - 1) : -1;
    gemm({.a = s == 0 ? h0 : h_rows.operand(tp), .b = wt, .c = hg, .bias = b_hh});
    parallel_for(0, B, rnn::row_grain(H), [&](int64_t b0, int64_t b1) {
      rnn::for_rows(b0, b1, [&](int64_t b) ATH_RNN_LAMBDA {
        const T* h_prev = s == 0 ? h0p + b * H : y.row(tp, b);
        rnn::gru_forward_row<T, true>(H, xg.row(t, b), hgp + b * G, h_prev, acts.row(t, b),
                                      hn.row(t, b), y.row(t, b));
        h_rows.stage(t, b);
      });
    });
  }
  if (order.steps == 0) {
    std::memcpy(out[1].data_ptr(), h0p, out[1].nbytes());
  } else {
    copy_rows(ptr<T>(out[1]), y, order(order.steps - 1), B, H);
  }
}

// d_b_hh [G] = column sums of the h-side gate gradients [N, G], each in row order.
template <class T>
void column_sums(const T* src, int64_t rows, int64_t cols, T* dst) {
  constexpr int64_t kCols = 64;
  parallel_for(0, (cols + kCols - 1) / kCols, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t j0 = c0 * kCols; j0 < std::min(cols, c1 * kCols); j0 += kCols) {
      const int64_t n = std::min(cols, j0 + kCols) - j0;
      double acc[kCols] = {};
      for (int64_t r = 0; r < rows; ++r) {
        const T* s = src + r * cols + j0;
        for (int64_t j = 0; j < n; ++j) acc[j] += double(s[j]);
      }
      for (int64_t j = 0; j < n; ++j) dst[j0 + j] = T(acc[j]);
    }
  });
}

template <class T>
void gru_sequence_backward_kernel(TensorSpan in, std::span<Tensor> out,
                                  const RnnSequenceBackwardAttrs& a) {
  NoGradGuard no_grad;
  const bool bf = a.batch_first;
  const Seq<T> dy = seq<T>(in[0], bf), y = seq<T>(in[4], bf), acts = seq<T>(in[5], bf),
               hn = seq<T>(in[6], bf), dxg = seq<T>(out[0], bf);
  const Tensor h0 = dense(in[3]);
  const Tensor& w = in[2];
  const int64_t B = h0.shape()[0], H = h0.shape()[1], G = 3 * H;
  const Order order{in[5].shape()[bf ? 1 : 0], a.reverse};
  // Time-major whatever the layout, so each step's rows are a dense GEMM operand.
  Tensor dhg_all = empty({order.steps, B, G}, w.dtype());
  const Seq<T> dhg = seq<T>(dhg_all, false);
  // carry: d h_prev, all of it (direct + through W_hh); starts as d h_n.
  Tensor carry = copy_of(in[1]), direct = empty({B, H}, w.dtype());
  T *cp = ptr<T>(carry), *dp = ptr<T>(direct);
  const T* h0p = ptr<T>(h0);
  for (int64_t s = order.steps - 1; s >= 0; --s) {
    const int64_t t = order(s), tp = s > 0 ? order(s - 1) : -1;
    parallel_for(0, B, rnn::row_grain(H), [&](int64_t b0, int64_t b1) {
      rnn::for_rows(b0, b1, [&](int64_t b) ATH_RNN_LAMBDA {
        const T* h_prev = s == 0 ? h0p + b * H : y.row(tp, b);
        rnn::gru_backward_row<T, true>(H, dy.row(t, b), cp + b * H, acts.row(t, b), hn.row(t, b),
                                       h_prev, dxg.row(t, b), dhg.row(t, b), dp + b * H);
      });
    });
    gemm({.a = dhg.step(t, B, G), .b = w, .c = carry, .bias = direct});
  }
  std::memcpy(out[3].data_ptr(), cp, out[3].nbytes());
  column_sums(ptr<T>(dhg_all), order.steps * B, G, ptr<T>(out[2]));
  if (a.need_w_hh) recurrent_weight_grad(dhg_all, false, h0, y, order, out[1]);
}

const bool registered = [] {
  register_cpu<float, double>(op_lstm_sequence(),
                              []<class T>() { return &lstm_sequence_kernel<T>; });
  register_cpu<float, double>(op_lstm_sequence_backward(),
                              []<class T>() { return &lstm_sequence_backward_kernel<T>; });
  register_cpu<float, double>(op_gru_sequence(), []<class T>() { return &gru_sequence_kernel<T>; });
  register_cpu<float, double>(op_gru_sequence_backward(),
                              []<class T>() { return &gru_sequence_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
