// self_attention (inference only): a whole attention core over one packed projection becomes one
// self_attention node (ops/attention.h), whose kernel keeps each head's scores in cache and reads
// q, k, v from the projection in place:
//
//   q, k, v = split_heads(y, H, 3, bf)
//   merge_heads(matmul(attention_softmax(matmul(q, permute(k, [0, 1, 3, 2])), s, causal), v), bf)
//     -> self_attention(y, H, s, causal, bf)
//
// (a plain softmax over the last dim counts as attention_softmax with scale 1, no mask). What the
// attention and heads passes leave of an exported multi-head attention. Every intermediate must
// be read only by the next node, and the merge must use the split's heads and layout.
//
// Not bit-identical: the kernel's products sum in their own order (within a few ulp).
#include "athanor/ops/attention.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/nn_functional.h"
#include "athanor/ops/views.h"
#include "graph_edit.h"

namespace ath::graph {

namespace {

using detail::GraphEdit;
using detail::ValueUses;

class Matcher {
 public:
  Matcher(const Graph& g, const ValueUses& uses) : g_(g), uses_(uses) {}

  // The nodes of the pattern ending at merge_heads node k (the split first), with the softmax's
  // attributes; empty when it does not match.
  std::vector<int32_t> match(int32_t k, AttentionSoftmaxAttrs& sa, HeadsAttrs& ha) const {
    const Node& merge = at(k);
    ha = *static_cast<const HeadsAttrs*>(merge.attrs.get());
    if (merge.inputs.size() != 1 || ha.parts != 1) return {};
    const Node* pv = only_producer(merge.inputs[0], k, &op_matmul());
    if (pv == nullptr) return {};
    const int32_t pv_k = node_of(merge.inputs[0]);
    const Node* sm = only_producer(pv->inputs[0], pv_k, &op_attention_softmax());
    const int32_t sm_k = node_of(pv->inputs[0]);
    if (sm != nullptr) {
      sa = *static_cast<const AttentionSoftmaxAttrs*>(sm->attrs.get());
    } else {
      sm = only_producer(pv->inputs[0], pv_k, &op_softmax());
      if (sm == nullptr || !last_dim_softmax(*sm)) return {};
      sa = {};
    }
    const Node* qk = only_producer(sm->inputs[0], sm_k, &op_matmul());
    if (qk == nullptr) return {};
    const int32_t qk_k = node_of(sm->inputs[0]);
    const Node* kt = only_producer(qk->inputs[1], qk_k, &op_permute());
    if (kt == nullptr ||
        static_cast<const PermuteAttrs*>(kt->attrs.get())->dims != DimList{0, 1, 3, 2})
      return {};
    const int32_t kt_k = node_of(qk->inputs[1]);
    // q, k, v: outputs 0, 1, 2 of one split_heads, each read once, by its place in the pattern.
    const ValueId q = qk->inputs[0], k_part = kt->inputs[0], v = pv->inputs[1];
    const Node* split = detail::producer(g_, q);
    if (split == nullptr || split->op != &op_split_heads() ||
        detail::producer(g_, k_part) != split || detail::producer(g_, v) != split ||
        split->outputs[0] != q || split->outputs[1] != k_part || split->outputs[2] != v)
      return {};
    if (!uses_.only(q, qk_k) || !uses_.only(k_part, kt_k) || !uses_.only(v, pv_k)) return {};
    const HeadsAttrs& s = *static_cast<const HeadsAttrs*>(split->attrs.get());
    if (s.parts != 3 || s.heads != ha.heads || s.batch_first != ha.batch_first) return {};
    return {node_of(q), kt_k, qk_k, sm_k, pv_k};
  }

 private:
  const Node& at(int32_t k) const { return g_.nodes[static_cast<std::size_t>(k)]; }
  int32_t node_of(ValueId v) const { return g_.value(v).node; }

  // v's producer when it is `op`, without attribute sources, and v is read by `reader` alone.
  const Node* only_producer(ValueId v, int32_t reader, const OpDef* op) const {
    if (!uses_.only(v, reader)) return nullptr;
    const Node* p = detail::producer(g_, v);
    return p != nullptr && p->op == op && !p->attr_source && p->outputs.size() == 1 ? p : nullptr;
  }

  bool last_dim_softmax(const Node& n) const {
    const int64_t dim = static_cast<const SoftmaxAttrs*>(n.attrs.get())->dim;
    return dim == -1 || dim == static_cast<int64_t>(g_.value(n.inputs[0]).meta.shape.size()) - 1;
  }

  const Graph& g_;
  const ValueUses& uses_;
};

}  // namespace

int fuse_self_attention(Graph& g) {
  if (g.nodes.empty() || detail::writes_memory(g)) return 0;
  const ValueUses uses = detail::value_uses(g);
  const Matcher matcher(g, uses);
  GraphEdit edit(g);
  int changed = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    if (g.nodes[k].op != &op_merge_heads() || g.nodes[k].attr_source) continue;
    AttentionSoftmaxAttrs sa;
    HeadsAttrs ha;
    const std::vector<int32_t> nodes = matcher.match(static_cast<int32_t>(k), sa, ha);
    if (nodes.empty()) continue;
    const ValueId y = g.nodes[static_cast<std::size_t>(nodes[0])].inputs[0];
    for (int32_t n : nodes) edit.remove(n);
    Node& merge = edit.node(static_cast<int32_t>(k));
    const SelfAttentionAttrs a{
        .heads = ha.heads, .scale = sa.scale, .causal = sa.causal, .batch_first = ha.batch_first};
    merge.op = &op_self_attention();
    merge.attrs = op_self_attention().clone_attrs(&a);
    merge.inputs = {y};
    ++changed;
  }
  edit.finish();
  return changed;
}

}  // namespace ath::graph
