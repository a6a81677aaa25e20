// lstm_sequence, gru_sequence and their backward ops: definitions, shape rules and gradient
// formulas. Kernels: src/ops/kernels/cpu/rnn_sequence.cpp.
#include "athanor/ops/dispatch.h"
#include "athanor/ops/rnn_cells.h"
#include "rnn_common.h"

namespace ath {

namespace {

// The sizes of a recurrence over xg [T, B, k * H] (batch_first: [B, T, k * H]).
struct SeqDims {
  int64_t t = 0, b = 0, h = 0;
  Shape seq(int64_t x, bool batch_first) const {
    return batch_first ? Shape{b, t, x} : Shape{t, b, x};
  }
};

// w_hh must be [k * H, H] except for the LSTM workspace (k = 5), whose caller checks it.
SeqDims seq_dims(const Tensor& xg, const Tensor& w_hh, int64_t k, bool batch_first) {
  ATH_CHECK(xg.dim() == 3, ShapeError, "expected 3-D xg [{}, {} * hidden], got shape {}",
            batch_first ? "batch, seq" : "seq, batch", k, to_string(xg.shape()));
  const int64_t g = xg.shape()[2];
  ATH_CHECK(g % k == 0, ShapeError, "xg has {} columns, not a multiple of {} (one block per gate)",
            g, k);
  SeqDims d{batch_first ? xg.shape()[1] : xg.shape()[0],
            batch_first ? xg.shape()[0] : xg.shape()[1], g / k};
  ATH_CHECK(w_hh.dim() == 2 && w_hh.shape()[1] == d.h, ShapeError,
            "expected w_hh of shape [{}, {}], got {}", (k == 5 ? 4 : k) * d.h, d.h,
            to_string(w_hh.shape()));
  if (k != 5) detail::check_rnn_shape(w_hh, {g, d.h}, "w_hh");
  return d;
}

}  // namespace

const Op<RnnSequenceAttrs>& op_lstm_sequence() {
  static const auto& op = define_op<RnnSequenceAttrs>({
      .name = "lstm_sequence",
      .kind = OpKind::Opaque,
      .num_inputs = 4,   // xg, w_hh, h0, c0
      .num_outputs = 4,  // output, h_n, c_n, workspace
      // The recurrence carries its state across time steps (and its kernel takes one dtype):
      // float32 under autocast, the input projection before it in low precision.
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b1110,
      .save_outputs = 0b1001,
      .infer =
          [](TensorSpan in, const RnnSequenceAttrs& a) {
            detail::check_rnn_dtypes(in, {"xg", "w_hh", "h0", "c0"});
            SeqDims d = seq_dims(in[0], in[1], 4, a.batch_first);
            detail::check_rnn_shape(in[2], {d.b, d.h}, "h0");
            detail::check_rnn_shape(in[3], {d.b, d.h}, "c0");
            const DType t = in[0].dtype();
            const Shape y = d.seq(d.h, a.batch_first);
            return OutputSpec{
                {{y, t}, {{d.b, d.h}, t}, {{d.b, d.h}, t}, {d.seq(5 * d.h, a.batch_first), t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const RnnSequenceAttrs& a) {
            detail::refuse_double_backward();
            ATH_CHECK(!ctx.grad_output_defined(3), NotImplementedError,
                      "no gradient flows through the saved workspace (output 3)");
            Tensor in[8] = {ctx.grad_output(0), ctx.grad_output(1), ctx.grad_output(2),
                            ctx.input(1),       ctx.input(2),       ctx.input(3),
                            ctx.output(0),      ctx.output(3)};
            Outputs g = call(op_lstm_sequence_backward(), TensorSpan(in),
                             RnnSequenceBackwardAttrs{.reverse = a.reverse,
                                                      .batch_first = a.batch_first,
                                                      .need_w_hh = ctx.needs_grad(1)});
            for (int i = 0; i < 4; ++i) {
              if (ctx.needs_grad(i)) ctx.set_grad_input(i, g[static_cast<std::size_t>(i)]);
            }
          },
  });
  return op;
}

const Op<RnnSequenceBackwardAttrs>& op_lstm_sequence_backward() {
  static const auto& op = define_op<RnnSequenceBackwardAttrs>({
      .name = "lstm_sequence_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 8,   // d_output, d_h_n, d_c_n, w_hh, h0, c0, output, workspace
      .num_outputs = 4,  // d_xg, d_w_hh, d_h0, d_c0
      .infer =
          [](TensorSpan in, const RnnSequenceBackwardAttrs& a) {
            detail::check_rnn_dtypes(
                in, {"d_output", "d_h_n", "d_c_n", "w_hh", "h0", "c0", "output", "workspace"});
            SeqDims d = seq_dims(in[7], in[3], 5, a.batch_first);  // workspace: 5 blocks of H
            ATH_CHECK(in[3].shape()[0] == 4 * d.h, ShapeError,
                      "expected w_hh of shape [{}, {}] for workspace {}, got {}", 4 * d.h, d.h,
                      to_string(in[7].shape()), to_string(in[3].shape()));
            const Shape y = d.seq(d.h, a.batch_first), state{d.b, d.h};
            detail::check_rnn_shape(in[0], y, "d_output");
            detail::check_rnn_shape(in[6], y, "output");
            const char* names[5] = {"d_h_n", "d_c_n", "", "h0", "c0"};
            for (int i : {1, 2, 4, 5}) detail::check_rnn_shape(in[i], state, names[i - 1]);
            const DType t = in[0].dtype();
            return OutputSpec{{{d.seq(4 * d.h, a.batch_first), t},
                               {a.need_w_hh ? in[3].shape() : Shape{0}, t},
                               {state, t},
                               {state, t}},
                              t};
          },
      .not_differentiable =
          "a fused first-order gradient (backpropagation through time in one kernel); "
          "lstm_sequence refuses create_graph instead",
  });
  return op;
}

const Op<RnnSequenceAttrs>& op_gru_sequence() {
  static const auto& op = define_op<RnnSequenceAttrs>({
      .name = "gru_sequence",
      .kind = OpKind::Opaque,
      .num_inputs = 4,   // xg, w_hh, b_hh, h0
      .num_outputs = 4,  // output, h_n, acts, hn
      // The recurrence carries its state across time steps (and its kernel takes one dtype):
      // float32 under autocast, the input projection before it in low precision.
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b1010,
      .save_outputs = 0b1101,
      .infer =
          [](TensorSpan in, const RnnSequenceAttrs& a) {
            detail::check_rnn_dtypes(in, {"xg", "w_hh", "b_hh", "h0"});
            SeqDims d = seq_dims(in[0], in[1], 3, a.batch_first);
            detail::check_rnn_shape(in[2], {3 * d.h}, "b_hh");
            detail::check_rnn_shape(in[3], {d.b, d.h}, "h0");
            const DType t = in[0].dtype();
            const Shape y = d.seq(d.h, a.batch_first);
            return OutputSpec{{{y, t}, {{d.b, d.h}, t}, {in[0].shape(), t}, {y, t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const RnnSequenceAttrs& a) {
            detail::refuse_double_backward();
            ATH_CHECK(!ctx.grad_output_defined(2) && !ctx.grad_output_defined(3),
                      NotImplementedError,
                      "no gradient flows through the saved gates (outputs 2, 3)");
            Tensor in[7] = {ctx.grad_output(0), ctx.grad_output(1), ctx.input(1), ctx.input(3),
                            ctx.output(0),      ctx.output(2),      ctx.output(3)};
            Outputs g = call(op_gru_sequence_backward(), TensorSpan(in),
                             RnnSequenceBackwardAttrs{.reverse = a.reverse,
                                                      .batch_first = a.batch_first,
                                                      .need_w_hh = ctx.needs_grad(1)});
            for (int i = 0; i < 4; ++i) {
              if (ctx.needs_grad(i)) ctx.set_grad_input(i, g[static_cast<std::size_t>(i)]);
            }
          },
  });
  return op;
}

const Op<RnnSequenceBackwardAttrs>& op_gru_sequence_backward() {
  static const auto& op = define_op<RnnSequenceBackwardAttrs>({
      .name = "gru_sequence_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 7,   // d_output, d_h_n, w_hh, h0, output, acts, hn
      .num_outputs = 4,  // d_xg, d_w_hh, d_b_hh, d_h0
      .infer =
          [](TensorSpan in, const RnnSequenceBackwardAttrs& a) {
            detail::check_rnn_dtypes(in,
                                     {"d_output", "d_h_n", "w_hh", "h0", "output", "acts", "hn"});
            SeqDims d = seq_dims(in[5], in[2], 3, a.batch_first);
            const Shape y = d.seq(d.h, a.batch_first), state{d.b, d.h};
            detail::check_rnn_shape(in[0], y, "d_output");
            detail::check_rnn_shape(in[4], y, "output");
            detail::check_rnn_shape(in[6], y, "hn");
            detail::check_rnn_shape(in[1], state, "d_h_n");
            detail::check_rnn_shape(in[3], state, "h0");
            const DType t = in[0].dtype();
            return OutputSpec{{{in[5].shape(), t},
                               {a.need_w_hh ? in[2].shape() : Shape{0}, t},
                               {{3 * d.h}, t},
                               {state, t}},
                              t};
          },
      .not_differentiable =
          "a fused first-order gradient (backpropagation through time in one kernel); "
          "gru_sequence refuses create_graph instead",
  });
  return op;
}

LstmSequenceResult lstm_sequence(const Tensor& xg, const Tensor& w_hh, const Tensor& h0,
                                 const Tensor& c0, RnnSequenceAttrs attrs) {
  Tensor in[4] = {xg, w_hh, h0, c0};
  Outputs out = call(op_lstm_sequence(), TensorSpan(in), attrs);
  return {std::move(out[0]), std::move(out[1]), std::move(out[2])};
}

GruSequenceResult gru_sequence(const Tensor& xg, const Tensor& w_hh, const Tensor& b_hh,
                               const Tensor& h0, RnnSequenceAttrs attrs) {
  Tensor in[4] = {xg, w_hh, b_hh, h0};
  Outputs out = call(op_gru_sequence(), TensorSpan(in), attrs);
  return {std::move(out[0]), std::move(out[1])};
}

}  // namespace ath
