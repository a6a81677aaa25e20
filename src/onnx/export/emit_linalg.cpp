// Matrix products. linear keeps its weight as recorded ([out, in], the state_dict's layout):
// Gemm with transB for a 2-D input, MatMul with a Transpose (which runtimes fold, the weight
// being an initializer) and an Add of the bias for more dims. A 2-D product whose operand is a
// transpose the trace recorded (nn::LSTM's x w^T) is written as Gemm's transA / transB of the
// transpose's input, so the Transpose node drops out.
#include <optional>

#include "athanor/ops/linalg.h"
#include "athanor/ops/views.h"
#include "emitters.h"

namespace ath::onnx::detail {

namespace {

// The input of a recorded 2-D transpose (permute {1, 0}) that made v, if one did.
std::optional<ValueId> transposed_from(const EmitContext& c, ValueId v) {
  const graph::Value& val = c.graph().value(v);
  if (val.origin != graph::ValueOrigin::Node || val.version_of != graph::kNoValue) return {};
  const graph::Node& n = c.graph().nodes[static_cast<std::size_t>(val.node)];
  if (n.op != &op_permute()) return {};
  const auto& dims = static_cast<const PermuteAttrs*>(n.attrs.get())->dims;
  if (dims.size() != 2 || dims[0] != 1 || dims[1] != 0) return {};
  return n.inputs[0];
}

// Gemm(a, b[, bias]) for 2-D a, b (inputs ia, ib of the node), folding recorded transposes.
void emit_gemm(EmitContext& c, int ia, int ib, int ibias, double alpha, double beta) {
  std::vector<std::string> inputs;
  int64_t trans[2] = {0, 0};
  const int idx[2] = {ia, ib};
  for (int k = 0; k < 2; ++k) {
    if (auto src = transposed_from(c, c.in_value(idx[k]))) {
      inputs.push_back(c.name(*src));
      trans[k] = 1;
    } else {
      inputs.push_back(c.in(idx[k]));
    }
  }
  if (ibias >= 0) inputs.push_back(c.in(ibias));
  ::onnx::NodeProto& n = c.add("Gemm", inputs, {c.out(0)});
  if (trans[0] != 0) attr_i(n, "transA", 1);
  if (trans[1] != 0) attr_i(n, "transB", 1);
  if (alpha != 1) attr_f(n, "alpha", alpha);
  if (ibias >= 0 && beta != 1) attr_f(n, "beta", beta);
}

void emit_matmul(EmitContext& c) {
  if (c.in_meta(0).shape.size() == 2 && c.in_meta(1).shape.size() == 2) {
    emit_gemm(c, 0, 1, -1, 1, 1);
  } else {
    c.add("MatMul", {c.in(0), c.in(1)}, {c.out(0)});
  }
}

// addmm(bias, a, b) = beta * bias + alpha * a b.
void emit_addmm(EmitContext& c) {
  const AddmmAttrs& a = c.attrs<AddmmAttrs>();
  emit_gemm(c, 1, 2, 0, a.alpha, a.beta);
}

// linear(x, w[, b]) = x w^T + b.
void emit_linear(EmitContext& c) {
  const bool bias = c.num_inputs() == 3;
  if (c.in_meta(0).shape.size() == 2) {
    ::onnx::NodeProto& n =
        c.add("Gemm", bias ? std::vector{c.in(0), c.in(1), c.in(2)} : std::vector{c.in(0), c.in(1)},
              {c.out(0)});
    attr_i(n, "transB", 1);
    return;
  }
  ::onnx::NodeProto* t = nullptr;
  const std::string wt = c.op("Transpose", {c.in(1)}, &t);
  attr_ints(*t, "perm", {1, 0});
  if (!bias) {
    c.add("MatMul", {c.in(0), wt}, {c.out(0)});
    return;
  }
  c.add("Add", {c.op("MatMul", {c.in(0), wt}), c.in(2)}, {c.out(0)});
}

}  // namespace

void add_linalg_emitters(EmitTable& t) {
  t[&op_mm()] = {emit_matmul};
  t[&op_bmm()] = {emit_matmul};
  t[&op_matmul()] = {emit_matmul};
  t[&op_addmm()] = {emit_addmm};
  t[&op_linear()] = {emit_linear};
}

}  // namespace ath::onnx::detail
