// CPU kernels for lstm_sequence, gru_sequence and their backward ops (float32, float64).
//
// Forward, per step (in processing order; `reverse` walks time backwards): one GEMM
// h_prev [n, H] x W_hh^T [H, G] into an [n, G] scratch reused by every step (W_hh packed once
// per call into oneDNN's blocked layout, repeated_gemm.h: at W3's shape the steps' products
// took two thirds of the time they took reading W_hh in place), then the fused cell
// (rnn_cell_math.h) reads that scratch and the step's rows of xg and writes the activated gates,
// (LSTM) the cell state, and h_t straight into the output, whose rows are the next step's
// h_prev. No per-step allocation; the GRU's b_hh is the GEMM's fused per-column bias.
//
// Backward (backpropagation through time), per step from the last processed to the first: the
// fused cell backward reads d_output's rows plus the recurrent carry and writes the step's gate
// gradients into d_xg (the LSTM's, and the GRU's x side) - which is also the input projection's
// gradient - then one GEMM [n, G] x W_hh [G, H] forms the carry for the step before (W_hh
// packed once per call; the GRU's adds the step's direct gradient as a post-op). The weight
// gradient is one GEMM over all steps afterwards: h_prev of every row gathered into [T*B, H] and
// read transposed in place, times the gate gradients [T*B, G] (K = T*B is large, so the GEMM runs
// near peak), and the [H, G] result transposed into d_w_hh.
//
// Both directions run per batch chunk (n rows, see for_batch_chunks): each chunk runs the
// whole sequence independently, so there is one parallel region per call, not two per step.
// The LSTM saves, per step and row, its activated gates and cell state side by side in one
// workspace [T, B, 5H] (an op has at most four outputs).
//
// Memory contract: inputs are read in place when their last dim is unit-stride (else copied
// dense once); each output element is written once (d_w_hh and d_b_hh through one scratch
// each). Scratch per chunk: [n, G] + a few [n, H] + the packed W_hh; the GRU backward adds its
// h-side gate gradients [T, B, G]; the weight gradient [T*B, H] + [H, G]. Chunks depend on B alone,
// GEMMs split rows and columns only and column sums run in row order, so results do not depend on
// the thread count.
#include "athanor/ops/rnn_cells.h"
#include "common/register.h"
#include "repeated_gemm.h"
#include "rnn_cell_math.h"
#include "rnn_sequence_common.h"

namespace ath::kernels {
namespace {

using rnn::Order;
using rnn::ptr;
using rnn::Seq;
using rnn::StepRows;

// ---- LSTM -----------------------------------------------------------------------------------

template <class T>
void lstm_sequence_kernel(TensorSpan in, std::span<Tensor> out, const RnnSequenceAttrs& a) {
  const bool bf = a.batch_first;
  const Tensor h0 = dense(in[2]), c0 = dense(in[3]);
  const int64_t B = h0.shape()[0], H = h0.shape()[1], G = 4 * H;
  const Seq<T> xg = rnn::seq<T>(in[0], bf), y = rnn::seq<T>(out[0], bf),
               acts = rnn::seq<T>(out[3], bf), cs = acts.shifted(G);
  const Order order{in[0].shape()[bf ? 1 : 0], a.reverse};
  const Tensor wt = rnn::transposed(in[1]);
  const T *h0p = ptr<T>(h0), *c0p = ptr<T>(c0);
  rnn::for_batch_chunks(B, [&](int64_t r0, int64_t n) {
    const RepeatedGemm recurrent(n, wt, {}, order.steps);
    Tensor pre = empty({n, G}, in[0].dtype());
    T* pp = ptr<T>(pre);
    StepRows<T> h_rows(y, r0, n, H);
    for (int64_t s = 0; s < order.steps; ++s) {
      const int64_t t = order(s), tp = s > 0 ? order(s - 1) : -1;
      recurrent(s == 0 ? rnn::row_block(h0, r0, n) : h_rows.operand(tp), pre);
      parallel_for(0, n, rnn::row_grain(H), [&](int64_t i0, int64_t i1) {
        rnn::for_rows(i0, i1, [&](int64_t i) ATH_RNN_LAMBDA {
          const int64_t b = r0 + i;
          const T* c_prev = s == 0 ? c0p + b * H : cs.row(tp, b);
          rnn::lstm_forward_row<T, true>(H, pp + i * G, xg.row(t, b), c_prev, acts.row(t, b),
                                         cs.row(t, b), y.row(t, b));
          h_rows.stage(t, i);
        });
      });
    }
  });
  if (order.steps == 0) {
    std::memcpy(out[1].data_ptr(), h0p, out[1].nbytes());
    std::memcpy(out[2].data_ptr(), c0p, out[2].nbytes());
  } else {
    rnn::copy_rows(ptr<T>(out[1]), y, order(order.steps - 1), B, H);
    rnn::copy_rows(ptr<T>(out[2]), cs, order(order.steps - 1), B, H);
  }
}

template <class T>
void lstm_sequence_backward_kernel(TensorSpan in, std::span<Tensor> out,
                                   const RnnSequenceBackwardAttrs& a) {
  const bool bf = a.batch_first;
  const Tensor h0 = dense(in[4]), c0 = dense(in[5]), dhn = dense(in[1]), dcn = dense(in[2]);
  const Tensor& w = in[3];
  const int64_t B = h0.shape()[0], H = h0.shape()[1], G = 4 * H;
  const Seq<T> dy = rnn::seq<T>(in[0], bf), y = rnn::seq<T>(in[6], bf),
               acts = rnn::seq<T>(in[7], bf), cs = acts.shifted(G), dxg = rnn::seq<T>(out[0], bf);
  const Order order{in[7].shape()[bf ? 1 : 0], a.reverse};
  const T* c0p = ptr<T>(c0);
  rnn::for_batch_chunks(B, [&](int64_t r0, int64_t n) {
    // carry: d h_prev through W_hh (starts as d h_n); dc[cur]: d c of the step being processed.
    Tensor carry = rnn::copy_of(rnn::row_block(dhn, r0, n));
    Tensor dc[2] = {rnn::copy_of(rnn::row_block(dcn, r0, n)), empty({n, H}, w.dtype())};
    T* cp = ptr<T>(carry);
    int cur = 0;
    const RepeatedGemm recurrent(n, w, {}, order.steps);
    StepRows<T> g_rows(dxg, r0, n, G);
    for (int64_t s = order.steps - 1; s >= 0; --s) {
      const int64_t t = order(s), tp = s > 0 ? order(s - 1) : -1;
      const T* dc_in = ptr<T>(dc[cur]);
      T* dc_out = ptr<T>(dc[1 - cur]);
      parallel_for(0, n, rnn::row_grain(H), [&](int64_t i0, int64_t i1) {
        rnn::for_rows(i0, i1, [&](int64_t i) ATH_RNN_LAMBDA {
          const int64_t b = r0 + i;
          const T* c_prev = s == 0 ? c0p + b * H : cs.row(tp, b);
          rnn::lstm_backward_row<T, true>(H, dy.row(t, b), cp + i * H, dc_in + i * H,
                                          acts.row(t, b), c_prev, cs.row(t, b), dxg.row(t, b),
                                          dc_out + i * H);
          g_rows.stage(t, i);
        });
      });
      cur = 1 - cur;
      recurrent(g_rows.operand(t), carry);
    }
    std::memcpy(ptr<T>(out[2]) + r0 * H, cp, carry.nbytes());
    std::memcpy(ptr<T>(out[3]) + r0 * H, dc[cur].data_ptr(), carry.nbytes());
  });
  if (a.need_w_hh) rnn::recurrent_weight_grad(out[0], bf, h0, y, order, out[1]);
}

// ---- GRU ------------------------------------------------------------------------------------

template <class T>
void gru_sequence_kernel(TensorSpan in, std::span<Tensor> out, const RnnSequenceAttrs& a) {
  const bool bf = a.batch_first;
  const Seq<T> xg = rnn::seq<T>(in[0], bf), y = rnn::seq<T>(out[0], bf),
               acts = rnn::seq<T>(out[2], bf), hn = rnn::seq<T>(out[3], bf);
  const Tensor b_hh = dense(in[2]), h0 = dense(in[3]);
  const int64_t B = h0.shape()[0], H = h0.shape()[1], G = 3 * H;
  const Order order{in[0].shape()[bf ? 1 : 0], a.reverse};
  const Tensor wt = rnn::transposed(in[1]);
  const T* h0p = ptr<T>(h0);
  rnn::for_batch_chunks(B, [&](int64_t r0, int64_t n) {
    const RepeatedGemm recurrent(n, wt, b_hh, order.steps);
    Tensor hg = empty({n, G}, in[0].dtype());
    T* hgp = ptr<T>(hg);
    StepRows<T> h_rows(y, r0, n, H);
    for (int64_t s = 0; s < order.steps; ++s) {
      const int64_t t = order(s), tp = s > 0 ? order(s - 1) : -1;
      recurrent(s == 0 ? rnn::row_block(h0, r0, n) : h_rows.operand(tp), hg);
      parallel_for(0, n, rnn::row_grain(H), [&](int64_t i0, int64_t i1) {
        rnn::for_rows(i0, i1, [&](int64_t i) ATH_RNN_LAMBDA {
          const int64_t b = r0 + i;
          const T* h_prev = s == 0 ? h0p + b * H : y.row(tp, b);
          rnn::gru_forward_row<T, true>(H, xg.row(t, b), hgp + i * G, h_prev, acts.row(t, b),
                                        hn.row(t, b), y.row(t, b));
          h_rows.stage(t, i);
        });
      });
    }
  });
  if (order.steps == 0) {
    std::memcpy(out[1].data_ptr(), h0p, out[1].nbytes());
  } else {
    rnn::copy_rows(ptr<T>(out[1]), y, order(order.steps - 1), B, H);
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
  const bool bf = a.batch_first;
  const Seq<T> dy = rnn::seq<T>(in[0], bf), y = rnn::seq<T>(in[4], bf),
               acts = rnn::seq<T>(in[5], bf), hn = rnn::seq<T>(in[6], bf),
               dxg = rnn::seq<T>(out[0], bf);
  const Tensor h0 = dense(in[3]), dhn = dense(in[1]);
  const Tensor& w = in[2];
  const int64_t B = h0.shape()[0], H = h0.shape()[1], G = 3 * H;
  const Order order{in[5].shape()[bf ? 1 : 0], a.reverse};
  // Time-major whatever the layout, so each step's rows are a dense GEMM operand.
  Tensor dhg_all = empty({order.steps, B, G}, w.dtype());
  const Seq<T> dhg = rnn::seq<T>(dhg_all, false);
  const T* h0p = ptr<T>(h0);
  rnn::for_batch_chunks(B, [&](int64_t r0, int64_t n) {
    // carry: all of d h_prev (direct + through W_hh); starts as d h_n.
    Tensor carry = rnn::copy_of(rnn::row_block(dhn, r0, n)), direct = empty({n, H}, w.dtype());
    T *cp = ptr<T>(carry), *dp = ptr<T>(direct);
    StepRows<T> g_rows(dhg, r0, n, G);
    const RepeatedGemm recurrent(n, w, {}, order.steps, /*with_addend=*/true);
    for (int64_t s = order.steps - 1; s >= 0; --s) {
      const int64_t t = order(s), tp = s > 0 ? order(s - 1) : -1;
      parallel_for(0, n, rnn::row_grain(H), [&](int64_t i0, int64_t i1) {
        rnn::for_rows(i0, i1, [&](int64_t i) ATH_RNN_LAMBDA {
          const int64_t b = r0 + i;
          const T* h_prev = s == 0 ? h0p + b * H : y.row(tp, b);
          rnn::gru_backward_row<T, true>(H, dy.row(t, b), cp + i * H, acts.row(t, b), hn.row(t, b),
                                         h_prev, dxg.row(t, b), dhg.row(t, b), dp + i * H);
        });
      });
      recurrent(g_rows.operand(t), carry, direct);
    }
    std::memcpy(ptr<T>(out[3]) + r0 * H, cp, carry.nbytes());
  });
  column_sums(ptr<T>(dhg_all), order.steps * B, G, ptr<T>(out[2]));
  if (a.need_w_hh) rnn::recurrent_weight_grad(dhg_all, false, h0, y, order, out[1]);
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
