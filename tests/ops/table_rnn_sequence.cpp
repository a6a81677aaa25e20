// Op-table rows: lstm_sequence, gru_sequence and their backward ops, against the naive float64
// references of rnn_reference.h. The rows return every output concatenated (flattened), so one
// gradcheck covers the paths through the output, h_n and c_n, and one backward row compares
// every gradient the op produces.
#include "athanor/ops/rnn_cells.h"
#include "ops/rnn_reference.h"
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

Tensor flat_cat(std::vector<Tensor> ts) {
  for (Tensor& t : ts) t = t.flatten();
  return cat(ts, 0);
}

// Inputs of a recurrence with T steps, batch B, hidden H, G gates.
std::vector<In> seq_inputs(int64_t T, int64_t B, int64_t H, int64_t G, bool bf, bool lstm) {
  std::vector<In> in{In::randn(bf ? Shape{B, T, G * H} : Shape{T, B, G * H}),
                     In::uniform({G * H, H}, -0.6, 0.6)};
  if (!lstm) in.push_back(In::randn({G * H}));
  in.push_back(In::randn({B, H}));
  if (lstm) in.push_back(In::randn({B, H}));
  return in;
}

OpFn lstm_seq_call(RnnSequenceAttrs a) {
  return [=](const Tensors& x) {
    LstmSequenceResult r = lstm_sequence(x[0], x[1], x[2], x[3], a);
    return flat_cat({r.output, r.h, r.c});
  };
}

RefFn lstm_seq_ref(RnnSequenceAttrs a) {
  return [=](const Tensors& x) {
    SeqRef r = lstm_sequence_ref(x[0], x[1], x[2], x[3], a.reverse, a.batch_first);
    return flat_cat({r.output, r.h, r.c});
  };
}

OpFn gru_seq_call(RnnSequenceAttrs a) {
  return [=](const Tensors& x) {
    GruSequenceResult r = gru_sequence(x[0], x[1], x[2], x[3], a);
    return flat_cat({r.output, r.h});
  };
}

RefFn gru_seq_ref(RnnSequenceAttrs a) {
  return [=](const Tensors& x) {
    SeqRef r = gru_sequence_ref(x[0], x[1], x[2], x[3], a.reverse, a.batch_first);
    return flat_cat({r.output, r.h});
  };
}

// Backward rows: inputs (dy, dh_n, dc_n, xg, w_hh, h0, c0) for the LSTM and
// (dy, dh_n, xg, w_hh, b_hh, h0) for the GRU; the forward op supplies the saved tensors.
std::vector<In> seq_backward_inputs(int64_t T, int64_t B, int64_t H, int64_t G, bool bf,
                                    bool lstm) {
  std::vector<In> in{In::randn(bf ? Shape{B, T, H} : Shape{T, B, H}), In::randn({B, H})};
  if (lstm) in.push_back(In::randn({B, H}));
  for (const In& i : seq_inputs(T, B, H, G, bf, lstm)) in.push_back(i);
  return in;
}

OpFn lstm_seq_backward_call(RnnSequenceAttrs a) {
  return [=](const Tensors& x) {
    Tensor fin[4] = {x[3], x[4], x[5], x[6]};
    Outputs f = call(op_lstm_sequence(), TensorSpan(fin), a);
    Tensor bin[8] = {x[0], x[1], x[2], x[4], x[5], x[6], f[0], f[3]};
    Outputs g = call(op_lstm_sequence_backward(), TensorSpan(bin),
                     RnnSequenceBackwardAttrs{.reverse = a.reverse, .batch_first = a.batch_first});
    return flat_cat({g[0], g[1], g[2], g[3]});
  };
}

RefFn lstm_seq_backward_ref(RnnSequenceAttrs a) {
  return [=](const Tensors& x) {
    SeqGradRef g =
        lstm_sequence_grad_ref(x[0], x[1], x[2], x[3], x[4], x[5], x[6], a.reverse, a.batch_first);
    return flat_cat({g.dxg, g.dw_hh, g.dh0, g.dc0});
  };
}

OpFn gru_seq_backward_call(RnnSequenceAttrs a) {
  return [=](const Tensors& x) {
    Tensor fin[4] = {x[2], x[3], x[4], x[5]};
    Outputs f = call(op_gru_sequence(), TensorSpan(fin), a);
    Tensor bin[7] = {x[0], x[1], x[3], x[5], f[0], f[2], f[3]};
    Outputs g = call(op_gru_sequence_backward(), TensorSpan(bin),
                     RnnSequenceBackwardAttrs{.reverse = a.reverse, .batch_first = a.batch_first});
    return flat_cat({g[0], g[1], g[2], g[3]});
  };
}

RefFn gru_seq_backward_ref(RnnSequenceAttrs a) {
  return [=](const Tensors& x) {
    SeqGradRef g =
        gru_sequence_grad_ref(x[0], x[1], x[2], x[3], x[4], x[5], a.reverse, a.batch_first);
    return flat_cat({g.dxg, g.dw_hh, g.d_b_hh, g.dh0});
  };
}

constexpr RnnSequenceAttrs kFwd{}, kRev{.reverse = true}, kBf{.batch_first = true},
    kBfRev{.reverse = true, .batch_first = true};

}  // namespace

ATH_OP_ROWS(rnn_sequence) {
  return {
      Row("lstm_sequence", "forward")
          .inputs(seq_inputs(3, 2, 3, 4, false, true))
          .call(lstm_seq_call(kFwd))
          .ref(lstm_seq_ref(kFwd))
          .tol(1e-4, 1e-5)
          .bad("2-D xg",
               [] {
                 lstm_sequence(zeros({3, 8}), zeros({8, 2}), zeros({3, 2}), zeros({3, 2}));
               })
          .bad("xg columns not a multiple of 4",
               [] {
                 lstm_sequence(zeros({2, 3, 6}), zeros({6, 2}), zeros({3, 2}), zeros({3, 2}));
               })
          .bad("w_hh shape",
               [] {
                 lstm_sequence(zeros({2, 3, 8}), zeros({8, 3}), zeros({3, 2}), zeros({3, 2}));
               })
          .bad("h0 batch",
               [] {
                 lstm_sequence(zeros({2, 3, 8}), zeros({8, 2}), zeros({2, 2}), zeros({3, 2}));
               })
          .bad("c0 shape",
               [] {
                 lstm_sequence(zeros({2, 3, 8}), zeros({8, 2}), zeros({3, 2}), zeros({3, 3}));
               })
          .bad("mixed dtypes",
               [] {
                 lstm_sequence(zeros({2, 3, 8}), zeros({8, 2}, kFloat64), zeros({3, 2}),
                               zeros({3, 2}));
               }),
      Row("lstm_sequence", "reverse")
          .inputs(seq_inputs(3, 2, 3, 4, false, true))
          .call(lstm_seq_call(kRev))
          .ref(lstm_seq_ref(kRev))
          .tol(1e-4, 1e-5),
      Row("lstm_sequence", "batch_first_strided")
          .inputs({In::randn({2, 4, 12}).strided(), In::uniform({12, 3}, -0.6, 0.6).strided(),
                   In::randn({2, 3}).strided(), In::randn({2, 3})})
          .call(lstm_seq_call(kBf))
          .ref(lstm_seq_ref(kBf))
          .tol(1e-4, 1e-5),
      Row("lstm_sequence", "batch_first_reverse_no_weight_grad")
          .inputs({In::randn({3, 3, 8}), In::uniform({8, 2}, -0.6, 0.6).no_grad(),
                   In::randn({3, 2}), In::randn({3, 2})})
          .call(lstm_seq_call(kBfRev))
          .ref(lstm_seq_ref(kBfRev))
          .tol(1e-4, 1e-5),
      Row("lstm_sequence", "wide")
          .inputs(seq_inputs(2, 3, 19, 4, false, true))
          .call(lstm_seq_call(kRev))
          .ref(lstm_seq_ref(kRev))
          .tol(1e-4, 1e-5),
      // B >= 32: the batch runs in independent chunks (here 2, of 18 and 17 rows). Too many
      // elements for a full finite-difference Jacobian; the backward rows check the gradient.
      Row("lstm_sequence", "batch_chunks")
          .inputs(seq_inputs(3, 35, 2, 4, true, true))
          .call(lstm_seq_call(kBfRev))
          .ref(lstm_seq_ref(kBfRev))
          .tol(1e-4, 1e-5)
          .no_gradcheck(),
      Row("lstm_sequence", "zero_steps")
          .inputs(seq_inputs(0, 2, 3, 4, false, true))
          .call(lstm_seq_call(kFwd))
          .ref(lstm_seq_ref(kFwd)),
      Row("lstm_sequence", "zero_batch")
          .inputs(seq_inputs(3, 0, 3, 4, true, true))
          .call(lstm_seq_call(kBf))
          .ref(lstm_seq_ref(kBf)),
      Row("lstm_sequence_backward", "forward")
          .inputs(seq_backward_inputs(3, 2, 3, 4, false, true))
          .call(lstm_seq_backward_call(kFwd))
          .ref(lstm_seq_backward_ref(kFwd))
          .tol(1e-4, 1e-5)
          .bad("d_output shape",
               [] {
                 Tensor in[8] = {zeros({2, 3, 3}), zeros({3, 2}),    zeros({3, 2}),
                                 zeros({8, 2}),    zeros({3, 2}),    zeros({3, 2}),
                                 zeros({2, 3, 2}), zeros({2, 3, 10})};
                 call(op_lstm_sequence_backward(), TensorSpan(in), RnnSequenceBackwardAttrs{});
               })
          .bad("workspace width",
               [] {
                 Tensor in[8] = {zeros({2, 3, 2}), zeros({3, 2}),   zeros({3, 2}),
                                 zeros({8, 2}),    zeros({3, 2}),   zeros({3, 2}),
                                 zeros({2, 3, 2}), zeros({2, 3, 8})};
                 call(op_lstm_sequence_backward(), TensorSpan(in), RnnSequenceBackwardAttrs{});
               })
          .bad("w_hh rows",
               [] {
                 Tensor in[8] = {zeros({2, 3, 2}), zeros({3, 2}),    zeros({3, 2}),
                                 zeros({10, 2}),   zeros({3, 2}),    zeros({3, 2}),
                                 zeros({2, 3, 2}), zeros({2, 3, 10})};
                 call(op_lstm_sequence_backward(), TensorSpan(in), RnnSequenceBackwardAttrs{});
               }),
      Row("lstm_sequence_backward", "reverse")
          .inputs(seq_backward_inputs(4, 2, 3, 4, false, true))
          .call(lstm_seq_backward_call(kRev))
          .ref(lstm_seq_backward_ref(kRev))
          .tol(1e-4, 1e-5),
      Row("lstm_sequence_backward", "batch_first_reverse_wide")
          .inputs(seq_backward_inputs(3, 2, 19, 4, true, true))
          .call(lstm_seq_backward_call(kBfRev))
          .ref(lstm_seq_backward_ref(kBfRev))
          .tol(1e-4, 1e-5),
      Row("lstm_sequence_backward", "batch_chunks")
          .inputs(seq_backward_inputs(3, 35, 2, 4, false, true))
          .call(lstm_seq_backward_call(kRev))
          .ref(lstm_seq_backward_ref(kRev))
          .tol(1e-4, 1e-5),
      Row("lstm_sequence_backward", "zero_steps")
          .inputs(seq_backward_inputs(0, 2, 3, 4, true, true))
          .call(lstm_seq_backward_call(kBf))
          .ref(lstm_seq_backward_ref(kBf)),

      Row("gru_sequence", "forward")
          .inputs(seq_inputs(3, 2, 3, 3, false, false))
          .call(gru_seq_call(kFwd))
          .ref(gru_seq_ref(kFwd))
          .tol(1e-4, 1e-5)
          .bad("w_hh shape",
               [] {
                 gru_sequence(zeros({2, 3, 6}), zeros({6, 3}), zeros({6}), zeros({3, 2}));
               })
          .bad("b_hh shape",
               [] {
                 gru_sequence(zeros({2, 3, 6}), zeros({6, 2}), zeros({4}), zeros({3, 2}));
               })
          .bad("h0 shape",
               [] {
                 gru_sequence(zeros({2, 3, 6}), zeros({6, 2}), zeros({6}), zeros({2, 2}));
               })
          .bad("integer xg",
               [] {
                 gru_sequence(zeros({2, 3, 6}, kInt64), zeros({6, 2}, kInt64), zeros({6}, kInt64),
                              zeros({3, 2}, kInt64));
               }),
      Row("gru_sequence", "reverse")
          .inputs(seq_inputs(3, 2, 3, 3, false, false))
          .call(gru_seq_call(kRev))
          .ref(gru_seq_ref(kRev))
          .tol(1e-4, 1e-5),
      Row("gru_sequence", "batch_first_strided")
          .inputs({In::randn({2, 4, 9}).strided(), In::uniform({9, 3}, -0.6, 0.6),
                   In::randn({9}).strided(), In::randn({2, 3}).strided()})
          .call(gru_seq_call(kBf))
          .ref(gru_seq_ref(kBf))
          .tol(1e-4, 1e-5),
      Row("gru_sequence", "batch_first_reverse_wide_no_weight_grad")
          .inputs({In::randn({3, 2, 57}), In::uniform({57, 19}, -0.3, 0.3).no_grad(),
                   In::randn({57}), In::randn({3, 19})})
          .call(gru_seq_call(kBfRev))
          .ref(gru_seq_ref(kBfRev))
          .tol(1e-4, 1e-5),
      Row("gru_sequence", "batch_chunks")
          .inputs(seq_inputs(3, 50, 2, 3, false, false))
          .call(gru_seq_call(kFwd))
          .ref(gru_seq_ref(kFwd))
          .tol(1e-4, 1e-5)
          .no_gradcheck(),  // as lstm_sequence batch_chunks
      Row("gru_sequence", "zero_steps")
          .inputs(seq_inputs(0, 2, 3, 3, false, false))
          .call(gru_seq_call(kFwd))
          .ref(gru_seq_ref(kFwd)),
      Row("gru_sequence_backward", "forward")
          .inputs(seq_backward_inputs(3, 2, 3, 3, false, false))
          .call(gru_seq_backward_call(kFwd))
          .ref(gru_seq_backward_ref(kFwd))
          .tol(1e-4, 1e-5)
          .bad("hn shape",
               [] {
                 Tensor in[7] = {zeros({2, 3, 2}), zeros({3, 2}),    zeros({6, 2}),   zeros({3, 2}),
                                 zeros({2, 3, 2}), zeros({2, 3, 6}), zeros({2, 3, 3})};
                 call(op_gru_sequence_backward(), TensorSpan(in), RnnSequenceBackwardAttrs{});
               }),
      Row("gru_sequence_backward", "reverse_batch_first")
          .inputs(seq_backward_inputs(4, 2, 3, 3, true, false))
          .call(gru_seq_backward_call(kBfRev))
          .ref(gru_seq_backward_ref(kBfRev))
          .tol(1e-4, 1e-5),
      Row("gru_sequence_backward", "batch_chunks")
          .inputs(seq_backward_inputs(2, 50, 3, 3, true, false))
          .call(gru_seq_backward_call(kBfRev))
          .ref(gru_seq_backward_ref(kBfRev))
          .tol(1e-4, 1e-5),
      Row("gru_sequence_backward", "wide")
          .inputs(seq_backward_inputs(2, 3, 19, 3, false, false))
          .call(gru_seq_backward_call(kFwd))
          .ref(gru_seq_backward_ref(kFwd))
          .tol(1e-4, 1e-5),
  };
}

}  // namespace ath::testing
