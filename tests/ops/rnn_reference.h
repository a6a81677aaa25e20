// Naive float64 references for the recurrent ops (lstm/gru cell pointwise, lstm/gru sequence)
// and their backward ops: the textbook equations as plain loops, backpropagation through time
// written out step by step. They never call the ops under test.
#pragma once

#include <vector>

#include "athanor/athanor.h"

namespace ath::testing {

using Vec = std::vector<double>;

// One LSTM step on a batch: pre [B, 4H] (i, f, g, o), c_prev [B, H] -> h, c [B, H].
struct LstmStepRef {
  Vec h, c;
};
LstmStepRef lstm_step_ref(const Vec& pre, const Vec& c_prev, int64_t B, int64_t H);
// Gradients of <dh, h> + <dc, c> w.r.t. pre and c_prev.
struct LstmStepGradRef {
  Vec dpre, dc_prev;
};
LstmStepGradRef lstm_step_grad_ref(const Vec& dh, const Vec& dc, const Vec& pre, const Vec& c_prev,
                                   int64_t B, int64_t H);

// One GRU step: xg, hg [B, 3H] (r, z, n), h_prev [B, H] -> h [B, H].
Vec gru_step_ref(const Vec& xg, const Vec& hg, const Vec& h_prev, int64_t B, int64_t H);
struct GruStepGradRef {
  Vec dxg, dhg, dh_prev;
};
GruStepGradRef gru_step_grad_ref(const Vec& dh, const Vec& xg, const Vec& hg, const Vec& h_prev,
                                 int64_t B, int64_t H);

// Whole sequences, tensors as the ops take them (xg [T, B, G*H] or [B, T, G*H] batch_first).
struct SeqRef {
  Tensor output, h, c;  // c: LSTM only
};
SeqRef lstm_sequence_ref(const Tensor& xg, const Tensor& w_hh, const Tensor& h0, const Tensor& c0,
                         bool reverse, bool batch_first);
SeqRef gru_sequence_ref(const Tensor& xg, const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0,
                        bool reverse, bool batch_first);

// Gradients of <dy, output> + <dh_n, h_n> (+ <dc_n, c_n>) by backpropagation through time.
struct SeqGradRef {
  Tensor dxg, dw_hh, d_b_hh, dh0, dc0;  // d_b_hh: GRU only; dc0: LSTM only
};
SeqGradRef lstm_sequence_grad_ref(const Tensor& dy, const Tensor& dh_n, const Tensor& dc_n,
                                  const Tensor& xg, const Tensor& w_hh, const Tensor& h0,
                                  const Tensor& c0, bool reverse, bool batch_first);
SeqGradRef gru_sequence_grad_ref(const Tensor& dy, const Tensor& dh_n, const Tensor& xg,
                                 const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0,
                                 bool reverse, bool batch_first);

}  // namespace ath::testing
