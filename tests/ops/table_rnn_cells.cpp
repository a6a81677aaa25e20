// Op-table rows: lstm_cell_pointwise, gru_cell_pointwise and their backward ops, against the
// naive float64 references of rnn_reference.h.
#include "athanor/ops/rnn_cells.h"
#include "ops/rnn_reference.h"
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

OpFn lstm_cell_call(int which) {
  return [=](const Tensors& x) {
    LstmCellResult r = lstm_cell_pointwise(x[0], x[1]);
    return which == 0 ? r.h : r.c;
  };
}

RefFn lstm_cell_ref(int which) {
  return [=](const Tensors& x) {
    const int64_t B = x[1].shape()[0], H = x[1].shape()[1];
    LstmStepRef r = lstm_step_ref(values(x[0]), values(x[1]), B, H);
    return make_f64({B, H}, which == 0 ? r.h : r.c);
  };
}

// Inputs (dh, dc, gates, c_prev): the backward op on the forward op's saved outputs.
OpFn lstm_cell_backward_call(int which) {
  return [=](const Tensors& x) {
    Tensor fin[2] = {x[2], x[3]};
    Outputs f = call(op_lstm_cell_pointwise(), TensorSpan(fin));
    Tensor bin[5] = {x[0], x[1], f[2], x[3], f[1]};
    return call(op_lstm_cell_pointwise_backward(),
                TensorSpan(bin))[static_cast<std::size_t>(which)];
  };
}

RefFn lstm_cell_backward_ref(int which) {
  return [=](const Tensors& x) {
    const int64_t B = x[3].shape()[0], H = x[3].shape()[1];
    LstmStepGradRef g =
        lstm_step_grad_ref(values(x[0]), values(x[1]), values(x[2]), values(x[3]), B, H);
    return which == 0 ? make_f64({B, 4 * H}, g.dpre) : make_f64({B, H}, g.dc_prev);
  };
}

Tensor gru_cell_ref(const Tensors& x) {
  const int64_t B = x[2].shape()[0], H = x[2].shape()[1];
  return make_f64({B, H}, gru_step_ref(values(x[0]), values(x[1]), values(x[2]), B, H));
}

// Inputs (dh, xg, hg, h_prev).
OpFn gru_cell_backward_call(int which) {
  return [=](const Tensors& x) {
    Tensor fin[3] = {x[1], x[2], x[3]};
    Outputs f = call(op_gru_cell_pointwise(), TensorSpan(fin));
    Tensor bin[4] = {x[0], f[1], x[2], x[3]};
    return call(op_gru_cell_pointwise_backward(), TensorSpan(bin))[static_cast<std::size_t>(which)];
  };
}

RefFn gru_cell_backward_ref(int which) {
  return [=](const Tensors& x) {
    const int64_t B = x[3].shape()[0], H = x[3].shape()[1];
    GruStepGradRef g =
        gru_step_grad_ref(values(x[0]), values(x[1]), values(x[2]), values(x[3]), B, H);
    if (which == 2) return make_f64({B, H}, g.dh_prev);
    return make_f64({B, 3 * H}, which == 0 ? g.dxg : g.dhg);
  };
}

}  // namespace

ATH_OP_ROWS(rnn_cells) {
  return {
      Row("lstm_cell_pointwise", "h")
          .inputs({In::randn({3, 20}), In::randn({3, 5})})
          .call(lstm_cell_call(0))
          .ref(lstm_cell_ref(0))
          .tol(1e-5, 2e-6)
          .bad("1-D gates",
               [] {
                 lstm_cell_pointwise(zeros({8}), zeros({1, 2}));
               })
          .bad("gate columns not a multiple of 4",
               [] {
                 lstm_cell_pointwise(zeros({2, 6}), zeros({2, 2}));
               })
          .bad("c_prev shape",
               [] {
                 lstm_cell_pointwise(zeros({2, 8}), zeros({3, 2}));
               })
          .bad("mixed dtypes",
               [] {
                 lstm_cell_pointwise(zeros({2, 8}), zeros({2, 2}, kFloat64));
               })
          .bad("integer gates",
               [] {
                 lstm_cell_pointwise(zeros({2, 8}, kInt64), zeros({2, 2}, kInt64));
               }),
      Row("lstm_cell_pointwise", "c")
          .inputs({In::randn({3, 20}), In::randn({3, 5})})
          .call(lstm_cell_call(1))
          .ref(lstm_cell_ref(1))
          .tol(1e-5, 2e-6),
      // H = 19: the vector loop's body and remainder; saturated gates (|x| up to 12).
      Row("lstm_cell_pointwise", "wide_strided_saturated")
          .inputs({In::uniform({4, 76}, -12, 12).strided(), In::randn({4, 19}).strided()})
          .call(lstm_cell_call(0))
          .ref(lstm_cell_ref(0))
          .tol(1e-5, 2e-6),
      Row("lstm_cell_pointwise", "zero_batch")
          .inputs({In::randn({0, 8}), In::randn({0, 2})})
          .call(lstm_cell_call(1))
          .ref(lstm_cell_ref(1)),
      Row("lstm_cell_pointwise_backward", "d_gates")
          .inputs({In::randn({3, 5}), In::randn({3, 5}), In::randn({3, 20}), In::randn({3, 5})})
          .call(lstm_cell_backward_call(0))
          .ref(lstm_cell_backward_ref(0))
          .tol(1e-5, 2e-6)
          .bad("acts shape",
               [] {
                 Tensor in[5] = {zeros({2, 3}), zeros({2, 3}), zeros({2, 8}), zeros({2, 3}),
                                 zeros({2, 3})};
                 call(op_lstm_cell_pointwise_backward(), TensorSpan(in));
               })
          .bad("dh shape",
               [] {
                 Tensor in[5] = {zeros({2, 4}), zeros({2, 3}), zeros({2, 12}), zeros({2, 3}),
                                 zeros({2, 3})};
                 call(op_lstm_cell_pointwise_backward(), TensorSpan(in));
               }),
      Row("lstm_cell_pointwise_backward", "d_c_prev_wide")
          .inputs({In::randn({2, 19}).strided(), In::randn({2, 19}), In::randn({2, 76}),
                   In::randn({2, 19})})
          .call(lstm_cell_backward_call(1))
          .ref(lstm_cell_backward_ref(1))
          .tol(1e-5, 2e-6),
      Row("gru_cell_pointwise", "basic")
          .inputs({In::randn({3, 15}), In::randn({3, 15}), In::randn({3, 5})})
          .call([](const Tensors& x) { return gru_cell_pointwise(x[0], x[1], x[2]); })
          .ref(gru_cell_ref)
          .tol(1e-5, 2e-6)
          .bad("columns not a multiple of 3",
               [] {
                 gru_cell_pointwise(zeros({2, 7}), zeros({2, 7}), zeros({2, 2}));
               })
          .bad("hg shape",
               [] {
                 gru_cell_pointwise(zeros({2, 6}), zeros({2, 9}), zeros({2, 2}));
               })
          .bad("h_prev shape",
               [] {
                 gru_cell_pointwise(zeros({2, 6}), zeros({2, 6}), zeros({2, 3}));
               })
          .bad("mixed dtypes",
               [] {
                 gru_cell_pointwise(zeros({2, 6}), zeros({2, 6}, kFloat64), zeros({2, 2}));
               }),
      Row("gru_cell_pointwise", "wide_strided_saturated")
          .inputs({In::uniform({4, 57}, -12, 12).strided(), In::randn({4, 57}).strided(),
                   In::randn({4, 19})})
          .call([](const Tensors& x) { return gru_cell_pointwise(x[0], x[1], x[2]); })
          .ref(gru_cell_ref)
          .tol(1e-5, 2e-6),
      Row("gru_cell_pointwise_backward", "d_xg")
          .inputs({In::randn({3, 5}), In::randn({3, 15}), In::randn({3, 15}), In::randn({3, 5})})
          .call(gru_cell_backward_call(0))
          .ref(gru_cell_backward_ref(0))
          .tol(1e-5, 2e-6)
          .bad("hg shape",
               [] {
                 Tensor in[4] = {zeros({2, 2}), zeros({2, 6}), zeros({2, 3}), zeros({2, 2})};
                 call(op_gru_cell_pointwise_backward(), TensorSpan(in));
               }),
      Row("gru_cell_pointwise_backward", "d_hg_wide")
          .inputs({In::randn({2, 19}), In::randn({2, 57}), In::randn({2, 57}), In::randn({2, 19})})
          .call(gru_cell_backward_call(1))
          .ref(gru_cell_backward_ref(1))
          .tol(1e-5, 2e-6),
      Row("gru_cell_pointwise_backward", "d_h_prev")
          .inputs({In::randn({3, 5}), In::randn({3, 15}), In::randn({3, 15}), In::randn({3, 5})})
          .call(gru_cell_backward_call(2))
          .ref(gru_cell_backward_ref(2)),
  };
}

}  // namespace ath::testing
