// Recurrent-network ops: the fused pointwise parts of an LSTM and a GRU cell, and whole-sequence
// recurrences built from them. nn::LSTM, nn::GRU and their cells (athanor/nn/rnn.h) are
// written with these; most code wants those layers rather than the ops.
//
//   // One LSTM step: gates = x W_ih^T + b_ih + h W_hh^T + b_hh  ([B, 4H], PyTorch's i,f,g,o)
//   Tensor gates = randn({2, 4 * 3}), c_prev = zeros({2, 3});   // B = 2, H = 3
//   auto [h, c] = lstm_cell_pointwise(gates, c_prev);
//   // One GRU step: xg = x W_ih^T + b_ih, hg = h W_hh^T + b_hh  ([B, 3H], r,z,n)
//   Tensor xg = randn({2, 3 * 3}), hg = randn({2, 3 * 3}), h_prev = zeros({2, 3});
//   Tensor h1 = gru_cell_pointwise(xg, hg, h_prev);
//   // A whole sequence, input projection done by the caller (one large GEMM for all steps):
//   Tensor x = randn({5, 2, 4}), w_ih = randn({12, 4}), w_hh = randn({12, 3});  // T 5, in 4
//   Tensor b_ih = zeros({12}), b_hh = zeros({12}), h0 = zeros({2, 3}), c0 = zeros({2, 3});
//   LstmSequenceResult r = lstm_sequence(linear(x, w_ih, b_ih + b_hh), w_hh, h0, c0);
//   assert(r.output.size(0) == 5 && r.h.size(1) == 3);   // output [T, B, H], h [B, H]
//
// The pointwise ops compute every sigmoid, tanh and product in one pass and save what backward
// needs (the activated gates); their gradients are dedicated backward ops that produce all input
// gradients in one pass. The sequence ops run the recurrence inside one kernel: per step one
// [B, H] x [H, G] GEMM and the fused cell, writing h_t straight into the output. Their backward
// runs backpropagation through time in one kernel and the weight gradient as one GEMM over all
// steps. float32 and float64.
//
// Double backward (create_graph) through these ops is not supported and throws
// NotImplementedError: the backward ops compute first-order gradients only.
#pragma once

#include <array>

#include "athanor/ops/op.h"

namespace ath {

// ---- single-step cells -----------------------------------------------------------------------

struct LstmCellResult {
  Tensor h, c;
};

// gates [B, 4H] pre-activations in PyTorch's order (input, forget, cell, output); c_prev [B, H].
// i, f, o = sigmoid; g = tanh; c = f * c_prev + i * g; h = o * tanh(c).
LstmCellResult lstm_cell_pointwise(const Tensor& gates, const Tensor& c_prev);

// xg = W_ih x + b_ih and hg = W_hh h + b_hh, both [B, 3H] in PyTorch's order (reset, update,
// new); h_prev [B, H]. r, z = sigmoid(xg + hg) on their blocks; n = tanh(xg_n + r * hg_n);
// h = (1 - z) * n + z * h_prev.
Tensor gru_cell_pointwise(const Tensor& xg, const Tensor& hg, const Tensor& h_prev);

// Inputs (gates, c_prev). Outputs (h, c, acts): acts [B, 4H] holds sigmoid(i), sigmoid(f),
// tanh(g), sigmoid(o), saved for backward.
const Op<NoAttrs>& op_lstm_cell_pointwise();
// Inputs (dh, dc, acts, c_prev, c). Outputs (d_gates [B, 4H], d_c_prev [B, H]).
const Op<NoAttrs>& op_lstm_cell_pointwise_backward();
// Inputs (xg, hg, h_prev). Outputs (h, acts): acts [B, 3H] holds r, z, n.
const Op<NoAttrs>& op_gru_cell_pointwise();
// Inputs (dh, acts, hg, h_prev). Outputs (d_xg [B, 3H], d_hg [B, 3H], d_h_prev [B, H]).
const Op<NoAttrs>& op_gru_cell_pointwise_backward();

// ---- whole sequences -------------------------------------------------------------------------

// Sequence tensors are [T, B, X], or [B, T, X] with batch_first. reverse runs from the last
// step to the first (the backward direction of a bidirectional layer); the output keeps the
// input's time order either way.
struct RnnSequenceAttrs {
  bool reverse = false;
  bool batch_first = false;
  bool operator==(const RnnSequenceAttrs&) const = default;
};

struct LstmSequenceResult {
  Tensor output;  // [T, B, H] (batch_first: [B, T, H]): h_t for every step
  Tensor h, c;    // [B, H]: the final state (after the last step processed)
};

// xg: the input projection of every step, x W_ih^T + b_ih + b_hh ([T, B, 4H]); w_hh [4H, H];
// h0, c0 [B, H].
LstmSequenceResult lstm_sequence(const Tensor& xg, const Tensor& w_hh, const Tensor& h0,
                                 const Tensor& c0, RnnSequenceAttrs attrs = {});

struct GruSequenceResult {
  Tensor output;  // [T, B, H] (batch_first: [B, T, H])
  Tensor h;       // [B, H]
};

// xg: x W_ih^T + b_ih for every step ([T, B, 3H]); w_hh [3H, H]; b_hh [3H] (zeros when the
// layer has no bias); h0 [B, H]. b_hh stays separate because r multiplies W_hn h + b_hn.
GruSequenceResult gru_sequence(const Tensor& xg, const Tensor& w_hh, const Tensor& b_hh,
                               const Tensor& h0, RnnSequenceAttrs attrs = {});

// Which inputs' gradients a sequence backward op computes ([0] placeholders for the others).
struct RnnSequenceBackwardAttrs {
  bool reverse = false;
  bool batch_first = false;
  bool need_w_hh = true;  // the weight gradient (one GEMM over all steps)
  bool operator==(const RnnSequenceBackwardAttrs&) const = default;
};

// Inputs (xg, w_hh, h0, c0). Outputs (output, h_n, c_n, workspace [T, B, 5H] ([B, T, 5H])):
// per step and row, the activated gates (4H) then the cell state (H), saved for backward.
const Op<RnnSequenceAttrs>& op_lstm_sequence();
// Inputs (d_output, d_h_n, d_c_n, w_hh, h0, c0, output, workspace).
// Outputs (d_xg, d_w_hh, d_h0, d_c0).
const Op<RnnSequenceBackwardAttrs>& op_lstm_sequence_backward();
// Inputs (xg, w_hh, b_hh, h0). Outputs (output, h_n, acts [like xg]: r, z, n, hn [like output]:
// W_hn h + b_hn of every step).
const Op<RnnSequenceAttrs>& op_gru_sequence();
// Inputs (d_output, d_h_n, w_hh, h0, output, acts, hn).
// Outputs (d_xg, d_w_hh, d_b_hh, d_h0).
const Op<RnnSequenceBackwardAttrs>& op_gru_sequence_backward();

}  // namespace ath
