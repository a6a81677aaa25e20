// nn::LSTMCell and nn::GRUCell: one time step, the two projections as GEMMs and the gates in
// one fused pointwise op (lstm_cell_pointwise / gru_cell_pointwise).
#include <cmath>

#include "athanor/core/error.h"
#include "athanor/nn/init.h"
#include "athanor/nn/rnn.h"
#include "athanor/ops/ops.h"
#include "athanor/ops/rnn_cells.h"

namespace ath::nn {

RNNCellBase::RNNCellBase(std::string type_name, int64_t gates, RNNCellOptions o)
    : Module(std::move(type_name)), options(o) {
  const std::string& n = this->type_name();
  ATH_CHECK(o.hidden_size > 0, ValueError, "{}: hidden_size must be greater than zero, got {}", n,
            o.hidden_size);
  ATH_CHECK(o.input_size >= 0, ValueError, "{}: input_size must be non-negative, got {}", n,
            o.input_size);
  ATH_CHECK(is_floating(o.dtype), DTypeError, "{}: parameters need a floating dtype, got {}", n,
            dtype_name(o.dtype));
  const int64_t g = gates * o.hidden_size;
  weight_ih = register_parameter("weight_ih", empty({g, o.input_size}, o.dtype));
  weight_hh = register_parameter("weight_hh", empty({g, o.hidden_size}, o.dtype));
  if (o.bias) {
    bias_ih = register_parameter("bias_ih", empty({g}, o.dtype));
    bias_hh = register_parameter("bias_hh", empty({g}, o.dtype));
  }
  reset_parameters();
}

void RNNCellBase::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(static_cast<double>(options.hidden_size));
  for (Tensor& p : parameters()) init::uniform_(p, -stdv, stdv);
}

std::string RNNCellBase::extra_repr() const {
  std::string s = fmt::format("{}, {}", options.input_size, options.hidden_size);
  if (!options.bias) s += ", bias=False";
  return s;
}

Tensor RNNCellBase::batched_input(const Tensor& x, bool& unbatched) const {
  const std::string& n = type_name();
  ATH_CHECK(x.defined(), ValueError, "{}: the input is undefined", n);
  ATH_CHECK(x.dtype() == weight_ih.dtype(), DTypeError,
            "{}: input must have the type {} (the parameters'), got {}", n,
            dtype_name(weight_ih.dtype()), dtype_name(x.dtype()));
  ATH_CHECK(x.dim() == 1 || x.dim() == 2, ShapeError,
            "{}: Expected input to be 1-D or 2-D but received {}-D tensor (shape {})", n, x.dim(),
            ath::to_string(x.shape()));
  ATH_CHECK(x.shape().back() == options.input_size, ShapeError,
            "{}: input has inconsistent input_size: got {}, expected {}", n, x.shape().back(),
            options.input_size);
  unbatched = x.dim() == 1;
  return unbatched ? x.unsqueeze(0) : x;
}

Tensor RNNCellBase::batched_state(const Tensor& s, const char* name, bool unbatched,
                                  int64_t batch) const {
  const std::string& n = type_name();
  if (!s.defined()) return zeros({batch, options.hidden_size}, weight_ih.dtype());
  ATH_CHECK(s.dtype() == weight_ih.dtype(), DTypeError,
            "{}: {} must have the type {} (the parameters'), got {}", n, name,
            dtype_name(weight_ih.dtype()), dtype_name(s.dtype()));
  ATH_CHECK(s.dim() == (unbatched ? 1 : 2), ShapeError,
            "{}: for {} input, {} should be {}-D but got a {}-D tensor (shape {})", n,
            unbatched ? "unbatched 1-D" : "batched 2-D", name, unbatched ? 1 : 2, s.dim(),
            ath::to_string(s.shape()));
  Tensor b = unbatched ? s.unsqueeze(0) : s;
  ATH_CHECK(b.shape()[0] == batch, ShapeError,
            "{}: Input batch size {} doesn't match {} batch size {}", n, batch, name, b.shape()[0]);
  ATH_CHECK(b.shape()[1] == options.hidden_size, ShapeError,
            "{}: {} has inconsistent hidden_size: got {}, expected {}", n, name, b.shape()[1],
            options.hidden_size);
  return b;
}

LSTMCell::LSTMCell(LSTMCellOptions o) : RNNCellBase("LSTMCell", 4, o) {}

Tensor LSTMCell::forward(const Tensor& x) { return forward(x, LSTMState{}).h; }

LSTMState LSTMCell::forward(const Tensor& x_in, const LSTMState& state) {
  bool unbatched = false;
  Tensor x = batched_input(x_in, unbatched);
  ATH_CHECK(state.h.defined() == state.c.defined(), ValueError,
            "LSTMCell: pass both h and c of the state, or neither");
  const int64_t batch = x.shape()[0];
  Tensor h = batched_state(state.h, "h", unbatched, batch);
  Tensor c = batched_state(state.c, "c", unbatched, batch);
  Tensor xg = options.bias ? linear(x, weight_ih, bias_ih + bias_hh) : linear(x, weight_ih);
  LstmCellResult r = lstm_cell_pointwise(addmm(xg, h, weight_hh.t()), c);
  if (unbatched) return {r.h.squeeze(0), r.c.squeeze(0)};
  return {r.h, r.c};
}

GRUCell::GRUCell(GRUCellOptions o) : RNNCellBase("GRUCell", 3, o) {}

Tensor GRUCell::forward(const Tensor& x) { return forward(x, Tensor()); }

Tensor GRUCell::forward(const Tensor& x_in, const Tensor& h_in) {
  bool unbatched = false;
  Tensor x = batched_input(x_in, unbatched);
  Tensor h = batched_state(h_in, "h", unbatched, x.shape()[0]);
  Tensor xg = options.bias ? linear(x, weight_ih, bias_ih) : linear(x, weight_ih);
  Tensor hg = options.bias ? linear(h, weight_hh, bias_hh) : linear(h, weight_hh);
  Tensor h1 = gru_cell_pointwise(xg, hg, h);
  return unbatched ? h1.squeeze(0) : h1;
}

}  // namespace ath::nn
