// lstm_cell_pointwise, gru_cell_pointwise and their backward ops: definitions, shape rules and
// gradient formulas. Kernels: src/ops/kernels/cpu/rnn_cells.cpp.
#include "athanor/ops/rnn_cells.h"

#include "athanor/ops/dispatch.h"
#include "rnn_common.h"

namespace ath {

namespace {

// [B, k * H] gates next to a [B, H] state: returns H.
int64_t gate_hidden(const Tensor& gates, const Tensor& state, int64_t k, const char* gname,
                    const char* sname) {
  ATH_CHECK(gates.dim() == 2, ShapeError, "expected 2-D {} [batch, {} * hidden], got shape {}",
            gname, k, to_string(gates.shape()));
  ATH_CHECK(gates.shape()[1] % k == 0, ShapeError,
            "{} has {} columns, not a multiple of {} (one block per gate)", gname, gates.shape()[1],
            k);
  const int64_t h = gates.shape()[1] / k;
  detail::check_rnn_shape(state, {gates.shape()[0], h}, sname);
  return h;
}

}  // namespace

const Op<NoAttrs>& op_lstm_cell_pointwise() {
  static const auto& op = define_op<NoAttrs>({
      .name = "lstm_cell_pointwise",
      .kind = OpKind::Opaque,
      .num_inputs = 2,   // gates, c_prev
      .num_outputs = 3,  // h, c, acts
      // The recurrence carries its state across time steps (and its kernel takes one dtype):
      // float32 under autocast, the input projection before it in low precision.
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b10,
      .save_outputs = 0b110,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            detail::check_rnn_dtypes(in, {"gates", "c_prev"});
            gate_hidden(in[0], in[1], 4, "gates", "c_prev");
            const DType t = in[0].dtype();
            return OutputSpec{{{in[1].shape(), t}, {in[1].shape(), t}, {in[0].shape(), t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            detail::refuse_double_backward();
            ATH_CHECK(!ctx.grad_output_defined(2), NotImplementedError,
                      "no gradient flows through the saved activations (output 2)");
            Tensor in[5] = {ctx.grad_output(0), ctx.grad_output(1), ctx.output(2), ctx.input(1),
                            ctx.output(1)};
            Outputs g = call(op_lstm_cell_pointwise_backward(), TensorSpan(in));
            if (ctx.needs_grad(0)) ctx.set_grad_input(0, g[0]);
            if (ctx.needs_grad(1)) ctx.set_grad_input(1, g[1]);
          },
  });
  return op;
}

const Op<NoAttrs>& op_lstm_cell_pointwise_backward() {
  static const auto& op = define_op<NoAttrs>({
      .name = "lstm_cell_pointwise_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 5,   // dh, dc, acts, c_prev, c
      .num_outputs = 2,  // d_gates, d_c_prev
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            detail::check_rnn_dtypes(in, {"dh", "dc", "acts", "c_prev", "c"});
            gate_hidden(in[2], in[3], 4, "acts", "c_prev");
            detail::check_rnn_shape(in[0], in[3].shape(), "dh");
            detail::check_rnn_shape(in[1], in[3].shape(), "dc");
            detail::check_rnn_shape(in[4], in[3].shape(), "c");
            const DType t = in[0].dtype();
            return OutputSpec{{{in[2].shape(), t}, {in[3].shape(), t}}, t};
          },
      .not_differentiable =
          "a fused first-order gradient; lstm_cell_pointwise refuses create_graph instead",
  });
  return op;
}

const Op<NoAttrs>& op_gru_cell_pointwise() {
  static const auto& op = define_op<NoAttrs>({
      .name = "gru_cell_pointwise",
      .kind = OpKind::Opaque,
      .num_inputs = 3,   // xg, hg, h_prev
      .num_outputs = 2,  // h, acts
      // The recurrence carries its state across time steps (and its kernel takes one dtype):
      // float32 under autocast, the input projection before it in low precision.
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b110,
      .save_outputs = 0b10,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            detail::check_rnn_dtypes(in, {"xg", "hg", "h_prev"});
            gate_hidden(in[0], in[2], 3, "xg", "h_prev");
            detail::check_rnn_shape(in[1], in[0].shape(), "hg");
            const DType t = in[0].dtype();
            return OutputSpec{{{in[2].shape(), t}, {in[0].shape(), t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            detail::refuse_double_backward();
            ATH_CHECK(!ctx.grad_output_defined(1), NotImplementedError,
                      "no gradient flows through the saved activations (output 1)");
            Tensor in[4] = {ctx.grad_output(0), ctx.output(1), ctx.input(1), ctx.input(2)};
            Outputs g = call(op_gru_cell_pointwise_backward(), TensorSpan(in));
            for (int i = 0; i < 3; ++i) {
              if (ctx.needs_grad(i)) ctx.set_grad_input(i, g[static_cast<std::size_t>(i)]);
            }
          },
  });
  return op;
}

const Op<NoAttrs>& op_gru_cell_pointwise_backward() {
  static const auto& op = define_op<NoAttrs>({
      .name = "gru_cell_pointwise_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 4,   // dh, acts, hg, h_prev
      .num_outputs = 3,  // d_xg, d_hg, d_h_prev
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            detail::check_rnn_dtypes(in, {"dh", "acts", "hg", "h_prev"});
            gate_hidden(in[1], in[3], 3, "acts", "h_prev");
            detail::check_rnn_shape(in[2], in[1].shape(), "hg");
            detail::check_rnn_shape(in[0], in[3].shape(), "dh");
            const DType t = in[0].dtype();
            return OutputSpec{{{in[1].shape(), t}, {in[1].shape(), t}, {in[3].shape(), t}}, t};
          },
      .not_differentiable =
          "a fused first-order gradient; gru_cell_pointwise refuses create_graph instead",
  });
  return op;
}

LstmCellResult lstm_cell_pointwise(const Tensor& gates, const Tensor& c_prev) {
  Tensor in[2] = {gates, c_prev};
  Outputs out = call(op_lstm_cell_pointwise(), TensorSpan(in));
  return {std::move(out[0]), std::move(out[1])};
}

Tensor gru_cell_pointwise(const Tensor& xg, const Tensor& hg, const Tensor& h_prev) {
  Tensor in[3] = {xg, hg, h_prev};
  return std::move(call(op_gru_cell_pointwise(), TensorSpan(in))[0]);
}

}  // namespace ath
