// nn::LSTM and nn::GRU: parameters, checks, and the layer/direction loop around the fused
// sequence ops (athanor/ops/rnn_cells.h).
#include "athanor/nn/rnn.h"

#include <cmath>

#include "athanor/core/error.h"
#include "athanor/nn/init.h"
#include "athanor/ops/ops.h"
#include "athanor/ops/rnn_cells.h"

namespace ath::nn {

namespace {

// The input projection of every time step as one GEMM: x [T, B, in] (or [B, T, in]) times
// w^T, plus bias. addmm rather than linear: addmm's weight gradient is x^T g, which copies
// only the narrow x^T for the GEMM, where linear's g^T x transposes the wide gate gradient
// ([T*B, G*H]: 8 MB for W3's LSTM).
Tensor project(const Tensor& x, const Tensor& w, const Tensor& bias) {
  Tensor x2 = x.reshape({-1, x.shape()[2]});
  Tensor g = bias.defined() ? addmm(bias, x2, w.t()) : mm(x2, w.t());
  return g.view({x.shape()[0], x.shape()[1], w.shape()[0]});
}

}  // namespace

RNNBase::RNNBase(std::string type_name, int64_t gates, RNNOptions o)
    : Module(std::move(type_name)), options(o) {
  const std::string& n = this->type_name();
  ATH_CHECK(o.dropout >= 0 && o.dropout <= 1, ValueError,
            "{}: dropout should be a number in range [0, 1] representing the probability of an "
            "element being zeroed, got {}",
            n, o.dropout);
  ATH_CHECK(o.hidden_size > 0, ValueError, "{}: hidden_size must be greater than zero, got {}", n,
            o.hidden_size);
  ATH_CHECK(o.num_layers > 0, ValueError, "{}: num_layers must be greater than zero, got {}", n,
            o.num_layers);
  ATH_CHECK(o.input_size >= 0, ValueError, "{}: input_size must be non-negative, got {}", n,
            o.input_size);
  ATH_CHECK(o.proj_size >= 0, ValueError,
            "{}: proj_size should be a positive integer or zero to disable projections, got {}", n,
            o.proj_size);
  ATH_CHECK(o.proj_size == 0 || gates == 4, ValueError,
            "{}: proj_size argument is only supported for LSTM, not RNN or GRU", n);
  ATH_CHECK(o.proj_size == 0, NotImplementedError,
            "{}: proj_size > 0 (LSTM with projections) is not implemented", n);
  ATH_CHECK(is_floating(o.dtype), DTypeError, "{}: parameters need a floating dtype, got {}", n,
            dtype_name(o.dtype));
  const int64_t dirs = num_directions(), h = o.hidden_size;
  for (int64_t l = 0; l < o.num_layers; ++l) {
    const int64_t in = l == 0 ? o.input_size : h * dirs;
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string sfx = fmt::format("_l{}{}", l, d == 1 ? "_reverse" : "");
      Weights w;
      w.w_ih = register_parameter("weight_ih" + sfx, empty({gates * h, in}, o.dtype));
      w.w_hh = register_parameter("weight_hh" + sfx, empty({gates * h, h}, o.dtype));
      if (o.bias) {
        w.b_ih = register_parameter("bias_ih" + sfx, empty({gates * h}, o.dtype));
        w.b_hh = register_parameter("bias_hh" + sfx, empty({gates * h}, o.dtype));
      }
      weights_.push_back(w);
    }
  }
  reset_parameters();
}

const RNNBase::Weights& RNNBase::weights(int64_t layer, int64_t direction) const {
  ATH_CHECK(
      layer >= 0 && layer < options.num_layers && direction >= 0 && direction < num_directions(),
      IndexError, "{}: no layer {} direction {} ({} layers, {} directions)", type_name(), layer,
      direction, options.num_layers, num_directions());
  return weights_[static_cast<std::size_t>(layer * num_directions() + direction)];
}

void RNNBase::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(static_cast<double>(options.hidden_size));
  for (Tensor& p : parameters()) init::uniform_(p, -stdv, stdv);
}

std::string RNNBase::extra_repr() const {
  const RNNOptions& o = options;
  std::string s = fmt::format("{}, {}", o.input_size, o.hidden_size);
  if (o.num_layers != 1) s += fmt::format(", num_layers={}", o.num_layers);
  if (!o.bias) s += ", bias=False";
  if (o.batch_first) s += ", batch_first=True";
  if (o.dropout != 0) s += fmt::format(", dropout={}", o.dropout);
  if (o.bidirectional) s += ", bidirectional=True";
  return s;
}

Tensor RNNBase::batched_input(const Tensor& x, bool& unbatched) const {
  const std::string& n = type_name();
  ATH_CHECK(x.defined(), ValueError, "{}: the input is undefined", n);
  const DType t = weights_[0].w_ih.dtype();
  ATH_CHECK(x.dtype() == t, DTypeError, "{}: input must have the type {} (the parameters'), got {}",
            n, dtype_name(t), dtype_name(x.dtype()));
  ATH_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError,
            "{}: Expected input to be 2-D or 3-D but received {}-D tensor (shape {})", n, x.dim(),
            ath::to_string(x.shape()));
  ATH_CHECK(x.shape().back() == options.input_size, ShapeError,
            "{}: input.size(-1) must be equal to input_size. Expected {}, got {} (input shape {})",
            n, options.input_size, x.shape().back(), ath::to_string(x.shape()));
  unbatched = x.dim() == 2;
  Tensor b = unbatched ? x.unsqueeze(options.batch_first ? 0 : 1) : x;
  ATH_CHECK(b.shape()[options.batch_first ? 1 : 0] > 0, ValueError,
            "{}: Expected sequence length to be larger than 0 in RNN (input shape {})", n,
            ath::to_string(x.shape()));
  return b;
}

Tensor RNNBase::batched_state(const Tensor& s, const char* name, bool unbatched,
                              int64_t batch) const {
  const std::string& n = type_name();
  const Shape want{options.num_layers * num_directions(), batch, options.hidden_size};
  ATH_CHECK(s.dtype() == weights_[0].w_ih.dtype(), DTypeError,
            "{}: {} must have the type {} (the parameters'), got {}", n, name,
            dtype_name(weights_[0].w_ih.dtype()), dtype_name(s.dtype()));
  ATH_CHECK(s.dim() == (unbatched ? 2 : 3), ShapeError,
            "{}: for {} input, {} should be {}-D but got a {}-D tensor (shape {})", n,
            unbatched ? "unbatched 2-D" : "batched 3-D", name, unbatched ? 2 : 3, s.dim(),
            ath::to_string(s.shape()));
  Tensor b = unbatched ? s.unsqueeze(1) : s;
  ATH_CHECK(b.shape() == want, ShapeError, "{}: Expected {} size {}, got {}", n, name,
            ath::to_string(unbatched ? Shape{want[0], want[2]} : want), ath::to_string(s.shape()));
  return b;
}

Tensor RNNBase::join_directions(std::vector<Tensor>& outs, int64_t layer) const {
  Tensor y = outs.size() == 1 ? outs[0] : cat(outs, -1);
  outs.clear();
  if (layer + 1 < options.num_layers && options.dropout > 0 && is_training()) {
    y = dropout(y, options.dropout, true);
  }
  return y;
}

// ---- LSTM -----------------------------------------------------------------------------------

LSTM::LSTM(LSTMOptions o) : RNNBase("LSTM", 4, o) {}

Tensor LSTM::forward(const Tensor& x) { return forward(x, LSTMState{}).output; }

LSTMOutput LSTM::forward(const Tensor& x_in, const LSTMState& state) {
  bool unbatched = false;
  Tensor x = batched_input(x_in, unbatched);
  const bool bf = options.batch_first;
  const int64_t batch = x.shape()[bf ? 0 : 1], H = options.hidden_size;
  ATH_CHECK(state.h.defined() == state.c.defined(), ValueError,
            "LSTM: pass both h and c of the initial state, or neither");
  Tensor h0, c0;
  if (state.h.defined()) {
    h0 = batched_state(state.h, "h", unbatched, batch);
    c0 = batched_state(state.c, "c", unbatched, batch);
  }
  const DType t = x.dtype();
  std::vector<Tensor> outs, hs, cs;
  for (int64_t l = 0; l < options.num_layers; ++l) {
    for (int64_t d = 0; d < num_directions(); ++d) {
      const Weights& w = weights(l, d);
      const int64_t k = l * num_directions() + d;
      Tensor xg = project(x, w.w_ih, options.bias ? w.b_ih + w.b_hh : Tensor());
      LstmSequenceResult r =
          lstm_sequence(xg, w.w_hh, h0.defined() ? h0.select(0, k) : zeros({batch, H}, t),
                        c0.defined() ? c0.select(0, k) : zeros({batch, H}, t),
                        {.reverse = d == 1, .batch_first = bf});
      outs.push_back(r.output);
      hs.push_back(r.h);
      cs.push_back(r.c);
    }
    x = join_directions(outs, l);
  }
  Tensor h_n = stack(hs, 0), c_n = stack(cs, 0);
  if (unbatched) return {x.squeeze(bf ? 0 : 1), {h_n.squeeze(1), c_n.squeeze(1)}};
  return {x, {h_n, c_n}};
}

// ---- GRU ------------------------------------------------------------------------------------

GRU::GRU(GRUOptions o) : RNNBase("GRU", 3, o) {}

Tensor GRU::forward(const Tensor& x) { return forward(x, Tensor()).output; }

GRUOutput GRU::forward(const Tensor& x_in, const Tensor& h0_in) {
  bool unbatched = false;
  Tensor x = batched_input(x_in, unbatched);
  const bool bf = options.batch_first;
  const int64_t batch = x.shape()[bf ? 0 : 1], H = options.hidden_size;
  Tensor h0 = h0_in.defined() ? batched_state(h0_in, "h", unbatched, batch) : Tensor();
  const DType t = x.dtype();
  Tensor no_bias = options.bias ? Tensor() : zeros({3 * H}, t);
  std::vector<Tensor> outs, hs;
  for (int64_t l = 0; l < options.num_layers; ++l) {
    for (int64_t d = 0; d < num_directions(); ++d) {
      const Weights& w = weights(l, d);
      const int64_t k = l * num_directions() + d;
      Tensor xg = project(x, w.w_ih, w.b_ih);
      GruSequenceResult r = gru_sequence(xg, w.w_hh, options.bias ? w.b_hh : no_bias,
                                         h0.defined() ? h0.select(0, k) : zeros({batch, H}, t),
                                         {.reverse = d == 1, .batch_first = bf});
      outs.push_back(r.output);
      hs.push_back(r.h);
    }
    x = join_directions(outs, l);
  }
  Tensor h_n = stack(hs, 0);
  if (unbatched) return {x.squeeze(bf ? 0 : 1), h_n.squeeze(1)};
  return {x, h_n};
}

}  // namespace ath::nn
