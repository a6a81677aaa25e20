#include "emitters.h"

namespace ath::onnx::detail {

const EmitTable& emit_table() {
  static const EmitTable table = [] {
    EmitTable t;
    add_elementwise_emitters(t);
    add_activation_emitters(t);
    add_linalg_emitters(t);
    add_nn_emitters(t);
    add_shape_emitters(t);
    add_reduce_emitters(t);
    add_attention_emitters(t);
    add_rnn_emitters(t);
    return t;
  }();
  return table;
}

void emit_same_type(EmitContext& c, const std::string& onnx_op) {
  const DType t = c.out_meta(0).dtype;
  std::vector<std::string> inputs;
  for (int i = 0; i < c.num_inputs(); ++i) inputs.push_back(c.in_as(i, t));
  c.add(onnx_op, inputs, {c.out(0)});
}

}  // namespace ath::onnx::detail
