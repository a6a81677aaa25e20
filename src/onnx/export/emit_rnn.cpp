// lstm_sequence as an ONNX LSTM node. The trace records nn::LSTM's input projection apart
// (view(addmm(b_ih + b_hh, view(x), w_ih^T)), one GEMM over every step) and the recurrence as
// lstm_sequence(xg, w_hh, h0, c0); when that pattern is there the LSTM node takes x, w_ih and
// the bias itself (the projection's nodes then have no reader and drop out), otherwise it takes
// xg with an identity input weight. ONNX orders the gates i, o, f, c where athanor (PyTorch)
// orders them i, f, g, o, so the weights are reordered with Split + Concat on the initializers
// (which runtimes fold), keeping the parameters under their own names.
#include <optional>

#include "athanor/ops/creation.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/rnn_cells.h"
#include "athanor/ops/views.h"
#include "emitters.h"

namespace ath::onnx::detail {

namespace {

struct Projection {
  ValueId x = graph::kNoValue;     // the sequence [T, B, I] ([B, T, I])
  ValueId w_ih = graph::kNoValue;  // [4H, I]
  ValueId bias = graph::kNoValue;  // [4H] or none
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

// Blocks i, f, g, o (each h rows) of w reordered to ONNX's i, o, f, g, with a leading dim of 1.
std::string onnx_gates(EmitContext& c, const std::string& w, int64_t h) {
  std::vector<std::string> blocks{c.fresh("gate_i"), c.fresh("gate_f"), c.fresh("gate_g"),
                                  c.fresh("gate_o")};
  attr_i(c.add("Split", {w, c.ints({h, h, h, h})}, blocks), "axis", 0);
  ::onnx::NodeProto* n = nullptr;
  const std::string r = c.op("Concat", {blocks[0], blocks[3], blocks[1], blocks[2]}, &n);
  attr_i(*n, "axis", 0);
  return c.op("Unsqueeze", {r, c.ints({0})});
}

bool all_zero(const std::optional<Tensor>& t) {
  if (!t) return false;
  for (double v : t->to(kFloat64).contiguous().to_vector<double>()) {
    if (v != 0) return false;
  }
  return true;
}

// Inputs (xg, w_hh, h0, c0); outputs (output, h_n, c_n, workspace).
void emit_lstm_sequence(EmitContext& c) {
  const RnnSequenceAttrs& a = c.attrs<RnnSequenceAttrs>();
  if (c.out_used(3)) c.unsupported("lstm_sequence's workspace read by the model");
  const int64_t h = c.in_meta(1).shape[1];
  const DType t = c.in_meta(0).dtype;
  const std::vector<int64_t> swap{1, 0, 2};  // [B, T, X] <-> [T, B, X]

  std::string x, w, bias;
  if (auto p = match_projection(c, c.in_value(0))) {
    x = c.name(p->x);
    w = onnx_gates(c, c.name(p->w_ih), h);
    if (p->bias != graph::kNoValue) {
      const std::string b = c.op("Squeeze", {onnx_gates(c, c.name(p->bias), h), c.ints({0})});
      ::onnx::NodeProto* n = nullptr;
      const std::string wb_rb = c.op("Concat", {b, c.constant(zeros({4 * h}, t), "rb")}, &n);
      attr_i(*n, "axis", 0);
      bias = c.op("Unsqueeze", {wb_rb, c.ints({0})});
    }
  } else {
    // xg already holds the projection and the bias: an identity input weight passes it on.
    x = c.in(0);
    w = onnx_gates(c, c.constant(eye(4 * h, 4 * h, t), "identity"), h);
  }
  if (a.batch_first) {
    ::onnx::NodeProto* n = nullptr;
    x = c.op("Transpose", {x}, &n);
    attr_ints(*n, "perm", swap);
  }
  const std::string r = onnx_gates(c, c.in(1), h);
  std::string h0, c0;
  if (!all_zero(c.known_in(2)) || !all_zero(c.known_in(3))) {
    h0 = c.op("Unsqueeze", {c.in(2), c.ints({0})});
    c0 = c.op("Unsqueeze", {c.in(3), c.ints({0})});
  }
  const std::string y = c.fresh("Y"), yh = c.fresh("Y_h"), yc = c.fresh("Y_c");
  ::onnx::NodeProto& n = c.add("LSTM", {x, w, r, bias, "", h0, c0}, {y, yh, yc});
  attr_i(n, "hidden_size", h);
  if (a.reverse) attr_s(n, "direction", "reverse");
  // Y [T, 1, B, H] -> [T, B, H] ([B, T, H]); Y_h, Y_c [1, B, H] -> [B, H].
  if (a.batch_first) {
    const std::string tbh = c.op("Squeeze", {y, c.ints({1})});
    attr_ints(c.add("Transpose", {tbh}, {c.out(0)}), "perm", swap);
  } else {
    c.add("Squeeze", {y, c.ints({1})}, {c.out(0)});
  }
  if (c.out_used(1)) c.add("Squeeze", {yh, c.ints({0})}, {c.out(1)});
  if (c.out_used(2)) c.add("Squeeze", {yc, c.ints({0})}, {c.out(2)});
}

}  // namespace

void add_rnn_emitters(EmitTable& t) { t[&op_lstm_sequence()] = {emit_lstm_sequence}; }

}  // namespace ath::onnx::detail
