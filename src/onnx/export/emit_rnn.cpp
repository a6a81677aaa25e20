// lstm_sequence and gru_sequence as ONNX LSTM and GRU nodes. The trace records nn::LSTM's and
// nn::GRU's input projection apart (view(addmm(bias, view(x), w_ih^T)), one GEMM over every
// step) and the recurrence as lstm_sequence(xg, w_hh, h0, c0) / gru_sequence(xg, w_hh, b_hh,
// h0); when that pattern is there the ONNX node takes x, w_ih and the bias itself (the
// projection's nodes then have no reader and drop out), otherwise it takes xg with an identity
// input weight. ONNX orders the gates i, o, f, c (LSTM) and z, r, h (GRU) where athanor
// (PyTorch) orders them i, f, g, o and r, z, n, so the weights are reordered with Split +
// Concat on the initializers (which runtimes fold), keeping the parameters under their own
// names. athanor's GRU applies the reset gate after the recurrent product (r * (W_hn h +
// b_hn)), which is ONNX's linear_before_reset = 1; its importer reads such a node back onto
// gru_sequence.
#include <optional>

#include "athanor/ops/creation.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/rnn_cells.h"
#include "athanor/ops/views.h"
#include "emitters.h"

namespace ath::onnx::detail {

namespace {

// athanor's gate blocks in ONNX's order: LSTM i, f, g, o -> i, o, f, c; GRU r, z, n -> z, r, h.
const std::vector<int64_t> kLstmOrder{0, 3, 1, 2};
const std::vector<int64_t> kGruOrder{1, 0, 2};

struct Projection {
  ValueId x = graph::kNoValue;     // the sequence [T, B, I] ([B, T, I])
  ValueId w_ih = graph::kNoValue;  // [G*H, I]
  ValueId bias = graph::kNoValue;  // [G*H] or none
};

const graph::Node* producer(const EmitContext& c, ValueId v, const OpDef& op) {
  const graph::Value& val = c.graph().value(v);
  if (val.origin != graph::ValueOrigin::Node || val.version_of != graph::kNoValue) return nullptr;
  const graph::Node& n = c.graph().nodes[static_cast<std::size_t>(val.node)];
  return n.op == &op ? &n : nullptr;
}

// Matches xg = view(addmm(bias, view(x), permute(w_ih, {1, 0}))) (or mm without bias).
std::optional<Projection> match_projection(const EmitContext& c, ValueId xg) {
  const graph::Node* outer = producer(c, xg, op_view());
  if (outer == nullptr) return {};
  const ValueId g = outer->inputs[0];
  const graph::Node* mm = producer(c, g, op_addmm());
  const bool with_bias = mm != nullptr;
  if (mm == nullptr) mm = producer(c, g, op_mm());
  if (mm == nullptr) return {};
  if (with_bias) {
    const AddmmAttrs& a = *static_cast<const AddmmAttrs*>(mm->attrs.get());
    if (a.alpha != 1 || a.beta != 1 || c.meta(mm->inputs[0]).shape.size() != 1) return {};
  }
  const std::size_t o = with_bias ? 1 : 0;
  const graph::Node* inner = producer(c, mm->inputs[o], op_view());
  const graph::Node* wt = producer(c, mm->inputs[o + 1], op_permute());
  if (inner == nullptr || wt == nullptr) return {};
  const DimList& perm = static_cast<const PermuteAttrs*>(wt->attrs.get())->dims;
  if (perm.size() != 2 || perm[0] != 1 || perm[1] != 0) return {};
  const Shape& x = c.meta(inner->inputs[0]).shape;
  const Shape& out = c.meta(xg).shape;
  if (x.size() != 3 || x[0] != out[0] || x[1] != out[1]) return {};
  return Projection{inner->inputs[0], wt->inputs[0], with_bias ? mm->inputs[0] : graph::kNoValue};
}

std::string concat0(EmitContext& c, const std::vector<std::string>& parts) {
  ::onnx::NodeProto* n = nullptr;
  const std::string r = c.op("Concat", parts, &n);
  attr_i(*n, "axis", 0);
  return r;
}

std::string unsqueeze0(EmitContext& c, const std::string& x) {
  return c.op("Unsqueeze", {x, c.ints({0})});
}

// The blocks of h rows of w (along dim 0) in ONNX's order.
std::string onnx_gates(EmitContext& c, const std::string& w, int64_t h,
                       const std::vector<int64_t>& order) {
  std::vector<std::string> blocks, ordered;
  for (std::size_t i = 0; i < order.size(); ++i) blocks.push_back(c.fresh("gate"));
  attr_i(c.add("Split", {w, c.ints(std::vector<int64_t>(order.size(), h))}, blocks), "axis", 0);
  for (int64_t k : order) ordered.push_back(blocks[static_cast<std::size_t>(k)]);
  return concat0(c, ordered);
}

bool all_zero(const std::optional<Tensor>& t) {
  if (!t) return false;
  for (double v : t->to(kFloat64).contiguous().to_vector<double>()) {
    if (v != 0) return false;
  }
  return true;
}

const std::vector<int64_t> kSwap{1, 0, 2};  // [B, T, X] <-> [T, B, X]

// The node's X and W, and the input bias Wb in ONNX's gate order ("" when there is none).
struct SequenceInput {
  std::string x, w, wb;
};

SequenceInput sequence_input(EmitContext& c, int64_t h, const std::vector<int64_t>& order,
                             bool batch_first) {
  SequenceInput r;
  if (auto p = match_projection(c, c.in_value(0))) {
    r.x = c.name(p->x);
    r.w = unsqueeze0(c, onnx_gates(c, c.name(p->w_ih), h, order));
    if (p->bias != graph::kNoValue) r.wb = onnx_gates(c, c.name(p->bias), h, order);
  } else {
    // xg already holds the projection (and the input bias): an identity input weight passes
    // it on.
    const auto g = static_cast<int64_t>(order.size()) * h;
    r.x = c.in(0);
    r.w = unsqueeze0(
        c, onnx_gates(c, c.constant(eye(g, g, c.in_meta(0).dtype), "identity"), h, order));
  }
  if (batch_first) {
    ::onnx::NodeProto* n = nullptr;
    r.x = c.op("Transpose", {r.x}, &n);
    attr_ints(*n, "perm", kSwap);
  }
  return r;
}

// Input i as ONNX's initial state [1, B, H], or "" (zeros) when it is known to be zero.
std::string initial_state(EmitContext& c, int i) {
  return all_zero(c.known_in(i)) ? std::string() : unsqueeze0(c, c.in(i));
}

// Y [T, 1, B, H] -> output 0 [T, B, H] ([B, T, H]); each final state [1, B, H] -> output k
// [B, H] (output 1 for Y_h, 2 for Y_c).
void write_outputs(EmitContext& c, bool batch_first, const std::string& y,
                   const std::vector<std::string>& states) {
  if (batch_first) {
    const std::string tbh = c.op("Squeeze", {y, c.ints({1})});
    attr_ints(c.add("Transpose", {tbh}, {c.out(0)}), "perm", kSwap);
  } else {
    c.add("Squeeze", {y, c.ints({1})}, {c.out(0)});
  }
  for (std::size_t k = 0; k < states.size(); ++k) {
    const int i = static_cast<int>(k) + 1;
    if (c.out_used(i)) c.add("Squeeze", {states[k], c.ints({0})}, {c.out(i)});
  }
}

// Inputs (xg, w_hh, h0, c0); outputs (output, h_n, c_n, workspace).
void emit_lstm_sequence(EmitContext& c) {
  const RnnSequenceAttrs& a = c.attrs<RnnSequenceAttrs>();
  if (c.out_used(3)) c.unsupported("lstm_sequence's workspace read by the model");
  const int64_t h = c.in_meta(1).shape[1];
  const DType t = c.in_meta(0).dtype;
  const SequenceInput in = sequence_input(c, h, kLstmOrder, a.batch_first);
  // B is Wb then Rb: the projection's bias is already b_ih + b_hh.
  const std::string bias =
      in.wb.empty() ? std::string()
                    : unsqueeze0(c, concat0(c, {in.wb, c.constant(zeros({4 * h}, t), "rb")}));
  const std::string r = unsqueeze0(c, onnx_gates(c, c.in(1), h, kLstmOrder));
  const std::string h0 = initial_state(c, 2), c0 = initial_state(c, 3);
  const std::string y = c.fresh("Y"), yh = c.fresh("Y_h"), yc = c.fresh("Y_c");
  ::onnx::NodeProto& n = c.add("LSTM", {in.x, in.w, r, bias, "", h0, c0}, {y, yh, yc});
  attr_i(n, "hidden_size", h);
  if (a.reverse) attr_s(n, "direction", "reverse");
  write_outputs(c, a.batch_first, y, {yh, yc});
}

// Inputs (xg, w_hh, b_hh, h0); outputs (output, h_n, acts, hn).
void emit_gru_sequence(EmitContext& c) {
  const RnnSequenceAttrs& a = c.attrs<RnnSequenceAttrs>();
  if (c.out_used(2) || c.out_used(3)) c.unsupported("gru_sequence's saved gates read by the model");
  const int64_t h = c.in_meta(1).shape[1];
  const DType t = c.in_meta(0).dtype;
  const SequenceInput in = sequence_input(c, h, kGruOrder, a.batch_first);
  // B is Wb then Rb; b_hh stays apart because the reset gate multiplies W_hn h + b_hn.
  std::string bias;
  const bool no_rb = all_zero(c.known_in(2));
  if (!in.wb.empty() || !no_rb) {
    const std::string zero = c.constant(zeros({3 * h}, t), "zero_bias");
    const std::string rb = no_rb ? zero : onnx_gates(c, c.in(2), h, kGruOrder);
    bias = unsqueeze0(c, concat0(c, {in.wb.empty() ? zero : in.wb, rb}));
  }
  const std::string r = unsqueeze0(c, onnx_gates(c, c.in(1), h, kGruOrder));
  const std::string y = c.fresh("Y"), yh = c.fresh("Y_h");
  ::onnx::NodeProto& n = c.add("GRU", {in.x, in.w, r, bias, "", initial_state(c, 3)}, {y, yh});
  attr_i(n, "hidden_size", h);
  attr_i(n, "linear_before_reset", 1);
  if (a.reverse) attr_s(n, "direction", "reverse");
  write_outputs(c, a.batch_first, y, {yh});
}

}  // namespace

void add_rnn_emitters(EmitTable& t) {
  t[&op_lstm_sequence()] = {emit_lstm_sequence};
  t[&op_gru_sequence()] = {emit_gru_sequence};
}

}  // namespace ath::onnx::detail
