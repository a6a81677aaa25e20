// Epilogue fusion: a linear or (forward) convolution whose only reader is a relu becomes
// linear_relu / convolution_relu (ops/epilogue.h): oneDNN applies the ReLU to each output block
// as it writes it, so the pre-activation is never written to memory nor read back. The relu's
// backward already reads the relu's output (its mask is y > 0), which the fused node now makes,
// so the backward is unchanged.
#include "athanor/graph/passes.h"
#include "athanor/ops/activations.h"
#include "athanor/ops/conv.h"
#include "athanor/ops/epilogue.h"
#include "athanor/ops/linalg.h"
#include "buffer_uses.h"

namespace ath::graph {

namespace {

// The fused form of a producer node, or null when it has none.
const OpDef* fused_form(const Node& n) {
  if (n.op == &op_linear()) return &op_linear_relu();
  if (n.op == &op_convolution()) {
    const auto* a = static_cast<const ConvAttrs*>(n.attrs.get());
    if (!a->transposed) return &op_convolution_relu();
  }
  return nullptr;
}

}  // namespace

int fuse_epilogues(Graph& g) {
  const detail::BufferUses uses = detail::buffer_uses(g);
  std::vector<bool> keep(g.nodes.size(), true);
  int fused = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    Node& relu_node = g.nodes[k];
    if (relu_node.op != &op_relu()) continue;
    const ValueId pre = relu_node.inputs[0];
    const Value& v = g.value(pre);
    // The pre-activation must be the producer's own fresh result, read by this relu alone.
    if (v.origin != ValueOrigin::Node || g.storage_of(pre) != pre) continue;
    if (!uses.private_to_one_reader(g, pre)) continue;
    Node& producer = g.nodes[static_cast<std::size_t>(v.node)];
    const OpDef* fused_op = fused_form(producer);
    if (fused_op == nullptr || producer.outputs.size() != 1 || producer.attr_source) continue;
    // Same type in and out (relu keeps the dtype), so the fused node makes the relu's value.
    const ValueId post = relu_node.outputs[0];
    producer.op = fused_op;
    producer.outputs[0] = post;
    g.values[static_cast<std::size_t>(post)].node = v.node;
    keep[k] = false;
    ++fused;
  }
  if (fused > 0) rewrite(g, keep, std::vector<ValueId>(g.values.size(), kNoValue));
  return fused;
}

}  // namespace ath::graph
