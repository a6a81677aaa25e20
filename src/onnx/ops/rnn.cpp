// LSTM, GRU and RNN. ONNX orders the gates i,o,f,c (LSTM) and z,r,h (GRU); athanor's sequence
// ops take PyTorch's i,f,g,o and r,z,n, so the weights are reordered (a constant computation
// for initializer weights, folded when the graph is built). LSTM runs on lstm_sequence, GRU
// with linear_before_reset=1 on gru_sequence; GRU with linear_before_reset=0 and the plain RNN
// are unrolled over the (concrete) sequence length from matmuls and activations.
#include "../op_table.h"
#include "athanor/ops/activations.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/rnn_cells.h"
#include "athanor/ops/shaping.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

// Blocks of `gates` rows (each `h` long) along dim 0, in `order`.
Tensor reorder_gates(const Tensor& w, int64_t h, std::initializer_list<int64_t> order) {
  std::vector<Tensor> parts;
  for (int64_t g : order) parts.push_back(slice(w, 0, g * h, (g + 1) * h));
  return cat(parts, 0);
}

struct RnnCommon {
  int64_t dirs = 1;
  int64_t hidden = 0;
  bool batch_first = false;  // layout = 1 (opset 14)
  std::string direction = "forward";
  Tensor x;  // [T, B, I]
};

RnnCommon read_common(NodeContext& c, const std::vector<std::string>& default_acts) {
  RnnCommon r;
  r.direction = c.attr_string("direction", "forward");
  r.dirs = r.direction == "bidirectional" ? 2 : 1;
  r.hidden = c.attr_int("hidden_size", 0);
  r.batch_first = c.attr_int("layout", 0) != 0;
  r.x = r.batch_first ? transpose(c.in(0), 0, 1) : c.in(0);
  if (c.has_attr("clip")) c.unsupported("{} with clip", c.node().op_type());
  if (c.has(4) && !c.is_static(4)) c.unsupported("sequence_lens computed at run time");
  if (c.has(4)) {
    for (int64_t len : c.ints(4)) {
      if (len != r.x.size(0)) c.unsupported("sequence_lens shorter than the sequence");
    }
  }
  const auto acts = c.has_attr("activations") ? [&] {
    std::vector<std::string> v;
    for (const auto& a : c.node().attribute()) {
      if (a.name() == "activations")
        for (const auto& s : a.strings()) v.push_back(s);
    }
    return v;
  }()
                                               : std::vector<std::string>{};
  for (std::size_t i = 0; i < acts.size(); ++i) {
    if (acts[i] != default_acts[i % default_acts.size()])
      c.unsupported("{} activation '{}'", c.node().op_type(), acts[i]);
  }
  return r;
}

// Y [T, D, B, H] (layout 1: [B, T, D, H]) and the final states [D, B, H] (layout 1: [B, D, H]).
void write_outputs(NodeContext& c, const RnnCommon& r, const std::vector<Tensor>& ys,
                   const std::vector<Tensor>& hs, const std::vector<Tensor>& cs) {
  std::vector<Tensor> y4, h3, c3;
  for (const Tensor& y : ys) y4.push_back(unsqueeze(y, 1));
  for (const Tensor& h : hs) h3.push_back(unsqueeze(h, 0));
  for (const Tensor& s : cs) c3.push_back(unsqueeze(s, 0));
  Tensor y = cat(y4, 1), h = cat(h3, 0);
  if (r.batch_first) {
    y = permute(y, {2, 0, 1, 3});
    h = transpose(h, 0, 1);
  }
  if (c.wants(0)) c.out(0, y);
  if (c.wants(1)) c.out(1, h);
  if (c.wants(2) && !cs.empty()) {
    Tensor s = cat(c3, 0);
    c.out(2, r.batch_first ? transpose(s, 0, 1) : s);
  }
}

Tensor initial_state(NodeContext& c, int input, const RnnCommon& r, int64_t d) {
  const int64_t batch = r.x.size(1);
  if (!c.has(input)) return zeros({batch, r.hidden}, r.x.dtype());
  const Tensor s = r.batch_first ? transpose(c.in(input), 0, 1) : c.in(input);
  return select(s, 0, d);
}

bool reversed(const RnnCommon& r, int64_t d) { return r.direction == "reverse" || d == 1; }

void lower_lstm(NodeContext& c) {
  RnnCommon r = read_common(c, {"Sigmoid", "Tanh", "Tanh"});
  if (c.has(7)) c.unsupported("LSTM with peepholes");
  if (c.attr_int("input_forget", 0) != 0) c.unsupported("LSTM with input_forget");
  const int64_t h = r.hidden;
  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < r.dirs; ++d) {
    Tensor w = reorder_gates(select(c.in(1), 0, d), h, {0, 2, 3, 1});
    Tensor rw = reorder_gates(select(c.in(2), 0, d), h, {0, 2, 3, 1});
    Tensor bias;
    if (c.has(3)) {
      Tensor b = select(c.in(3), 0, d);
      bias = add(reorder_gates(slice(b, 0, 0, 4 * h), h, {0, 2, 3, 1}),
                 reorder_gates(slice(b, 0, 4 * h, 8 * h), h, {0, 2, 3, 1}));
    }
    Tensor xg = bias.defined() ? linear(r.x, w, bias) : linear(r.x, w);
    LstmSequenceResult out =
        lstm_sequence(xg, rw, initial_state(c, 5, r, d), initial_state(c, 6, r, d),
                      {.reverse = reversed(r, d), .batch_first = false});
    ys.push_back(out.output);
    hs.push_back(out.h);
    cs.push_back(out.c);
  }
  write_outputs(c, r, ys, hs, cs);
}

void lower_gru(NodeContext& c) {
  RnnCommon r = read_common(c, {"Sigmoid", "Tanh"});
  const int64_t h = r.hidden;
  const bool before_reset = c.attr_int("linear_before_reset", 0) != 0;
  std::vector<Tensor> ys, hs;
  for (int64_t d = 0; d < r.dirs; ++d) {
    Tensor w = reorder_gates(select(c.in(1), 0, d), h, {1, 0, 2});  // z,r,h -> r,z,n
    Tensor rw = reorder_gates(select(c.in(2), 0, d), h, {1, 0, 2});
    Tensor wb = zeros({3 * h}, r.x.dtype()), rb = zeros({3 * h}, r.x.dtype());
    if (c.has(3)) {
      Tensor b = select(c.in(3), 0, d);
      wb = reorder_gates(slice(b, 0, 0, 3 * h), h, {1, 0, 2});
      rb = reorder_gates(slice(b, 0, 3 * h, 6 * h), h, {1, 0, 2});
    }
    Tensor h0 = initial_state(c, 5, r, d);
    Tensor xg = linear(r.x, w, wb);  // [T, B, 3H]
    if (before_reset) {
      GruSequenceResult out =
          gru_sequence(xg, rw, rb, h0, {.reverse = reversed(r, d), .batch_first = false});
      ys.push_back(out.output);
      hs.push_back(out.h);
      continue;
    }
    // linear_before_reset = 0: n = tanh(W_n x + b_wn + (r * h) R_n^T + b_rn), step by step.
    const int64_t steps = r.x.size(0);
    std::vector<Tensor> outs(static_cast<std::size_t>(steps));
    Tensor ht = h0;
    Tensor r_rz = slice(rw, 0, 0, 2 * h), r_n = slice(rw, 0, 2 * h, 3 * h);
    Tensor b_rz = slice(rb, 0, 0, 2 * h), b_n = slice(rb, 0, 2 * h, 3 * h);
    for (int64_t k = 0; k < steps; ++k) {
      const int64_t t = reversed(r, d) ? steps - 1 - k : k;
      Tensor xt = select(xg, 0, t);
      Tensor rz = sigmoid(add(slice(xt, 1, 0, 2 * h), linear(ht, r_rz, b_rz)));
      Tensor rt = slice(rz, 1, 0, h), zt = slice(rz, 1, h, 2 * h);
      Tensor nt = tanh(add(slice(xt, 1, 2 * h, 3 * h), linear(mul(rt, ht), r_n, b_n)));
      ht = add(mul(sub(ones_like(zt), zt), nt), mul(zt, ht));
      outs[static_cast<std::size_t>(t)] = unsqueeze(ht, 0);
    }
    ys.push_back(cat(outs, 0));
    hs.push_back(ht);
  }
  write_outputs(c, r, ys, hs, {});
}

void lower_rnn(NodeContext& c) {
  RnnCommon r = read_common(c, {"Tanh"});
  std::vector<Tensor> ys, hs;
  for (int64_t d = 0; d < r.dirs; ++d) {
    Tensor w = select(c.in(1), 0, d), rw = select(c.in(2), 0, d);
    Tensor bias = zeros({r.hidden}, r.x.dtype());
    if (c.has(3)) {
      Tensor b = select(c.in(3), 0, d);
      bias = add(slice(b, 0, 0, r.hidden), slice(b, 0, r.hidden, 2 * r.hidden));
    }
    Tensor xg = linear(r.x, w, bias);
    const int64_t steps = r.x.size(0);
    std::vector<Tensor> outs(static_cast<std::size_t>(steps));
    Tensor ht = initial_state(c, 5, r, d);
    for (int64_t k = 0; k < steps; ++k) {
      const int64_t t = reversed(r, d) ? steps - 1 - k : k;
      ht = tanh(add(select(xg, 0, t), linear(ht, rw)));
      outs[static_cast<std::size_t>(t)] = unsqueeze(ht, 0);
    }
    ys.push_back(cat(outs, 0));
    hs.push_back(ht);
  }
  write_outputs(c, r, ys, hs, {});
}

}  // namespace

void add_rnn_ops(OpTable& t) {
  // sequence_lens (input 4) is read on the host: only full lengths are supported.
  t["LSTM"] = {lower_lstm, 1u << 4, 7, kFloatTypes};
  t["GRU"] = {lower_gru, 1u << 4, 7, kFloatTypes};
  t["RNN"] = {lower_rnn, 1u << 4, 7, kFloatTypes};
}

}  // namespace ath::onnx::detail
