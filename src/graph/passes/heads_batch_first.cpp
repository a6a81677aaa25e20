// The heads pass's second step: sequence-first attention blocks made batch-first. The
// TorchScript exporter runs nn.MultiheadAttention (batch_first=True) on [L, B, E] rows: it
// transposes x [B, L, E] (a permute and a copy) before the in-projection and transposes the
// out-projection's result back (a strided view every reader then reads). A linear treats rows
// independently, so the same rows can go through it in x's own order:
//
//   split_heads(linear(clone(permute(z))) [L, B, 3E], seq-first)
//       -> split_heads(linear(z) [B, L, 3E], batch-first)              (no copy of z)
//   permute(linear(merge_heads(o, seq-first)) [L, B, N])   read as [B, L, N]
//       -> linear(merge_heads(o, batch-first)) [B, L, N]              (read dense)
//
// The first applies when the linear's input reads z's rows in transposed order and its result
// is read only by the split; the second when every value readers take from the product through
// views is, on the batch-first product, a plain reshape of it (checked by running the views on
// the batch-first position of each element). Bit-identical: the same rows meet the same weights.
#include "athanor/ops/attention.h"
#include "athanor/ops/linalg.h"
#include "layout_chain.h"

namespace ath::graph::detail {

namespace {

const HeadsAttrs& heads_attrs(const Node& n) {
  return *static_cast<const HeadsAttrs*>(n.attrs.get());
}

bool constant_weight_linear(const Graph& g, const Node& n) {
  return n.op == &op_linear() && n.inputs.size() >= 2 && n.outputs.size() == 1 &&
         constant_tensor(g, n.inputs[1]) != nullptr;
}

// split_heads node k, seq-first over linear(x) (through at most one view), x's rows z's rows
// transposed: runs the linear on z and splits batch-first.
bool split_batch_first(const Graph& g, const ValueUses& uses, GraphEdit& edit, int32_t k) {
  // Copies: inserting nodes and values below moves g's vectors.
  const Node s = g.nodes[static_cast<std::size_t>(k)];
  const HeadsAttrs a = heads_attrs(s);
  if (a.batch_first) return false;
  const ValueId packed = s.inputs[0];  // [L, B, W]
  const Shape ps = g.value(packed).meta.shape;
  ValueId y = packed;
  const Node* p = producer(g, y);
  if (p != nullptr && p->op == &op_view() && uses.only(y, k)) {
    y = p->inputs[0];
    p = producer(g, y);
  } else if (!uses.only(y, k)) {
    return false;
  }
  if (p == nullptr || !constant_weight_linear(g, *p) || uses.of(y).size() != 1) return false;
  const std::vector<ValueId> linear_inputs = p->inputs;
  const ValueId x = linear_inputs[0];
  const Chain c = layout_chain(g, x);
  const Shape zs = g.value(c.base).meta.shape;
  const int64_t len = ps[0], batch = ps[1], k_in = g.value(x).meta.shape.back();
  if (!c.copies || numel(zs) != len * batch * k_in || numel(zs) > kMaxNumbered ||
      g.value(c.base).strides != contiguous_strides(zs))
    return false;
  const Tensor rows = element_numbers({batch, len, k_in}).permute({1, 0, 2});
  if (!same_numbers(run_chain(g, c), rows.reshape(g.value(x).meta.shape))) return false;
  const Shape bf{batch, len, k_in};
  ValueId zin = c.base;
  if (zs != bf) zin = edit.insert(k, op_view(), ShapeAttrs{bf}, {zin})[0];
  std::vector<ValueId> lin{zin};
  lin.insert(lin.end(), linear_inputs.begin() + 1, linear_inputs.end());
  const NoAttrs none{};
  const ValueId y2 = edit.insert(k, op_linear(), none, lin)[0];
  HeadsAttrs a2 = a;
  a2.batch_first = true;
  const std::vector<ValueId> parts = edit.insert(k, op_split_heads(), a2, {y2});
  for (std::size_t i = 0; i < parts.size(); ++i) edit.replace(s.outputs[i], parts[i]);
  edit.remove(k);
  return true;  // the old linear and the chain before it are left to dce
}

// Values read from v through views only (none of them an output): the values kernels read.
bool view_exits(const Graph& g, const ValueUses& uses, ValueId v, std::vector<ValueId>& exits) {
  if (uses.pinned[static_cast<std::size_t>(v)]) return false;
  bool read_by_kernel = false;
  for (int32_t r : uses.of(v)) {
    const Node& n = g.nodes[static_cast<std::size_t>(r)];
    if (n.op->kind == OpKind::View && n.inputs.size() == 1 && n.outputs.size() == 1) {
      if (!view_exits(g, uses, n.outputs[0], exits)) return false;
    } else {
      read_by_kernel = true;
    }
  }
  if (read_by_kernel) exits.push_back(v);
  return true;
}

// merge_heads node k, seq-first, read (through at most one view) by a linear alone, whose
// result every reader takes as a reshape of the batch-first product: merges batch-first.
bool merge_batch_first(const Graph& g, const ValueUses& uses, GraphEdit& edit, int32_t k) {
  const Node m = g.nodes[static_cast<std::size_t>(k)];  // copies: inserting moves g's vectors
  const HeadsAttrs a = heads_attrs(m);
  if (a.batch_first || m.inputs.size() != 1) return false;
  const Shape ms = g.value(m.outputs[0]).meta.shape;  // [L, B, E]
  const int64_t len = ms[0], batch = ms[1];
  ValueId x = m.outputs[0];
  int32_t lk = uses.sole_reader(x);
  if (lk < 0) return false;
  if (g.nodes[static_cast<std::size_t>(lk)].op == &op_view()) {
    x = g.nodes[static_cast<std::size_t>(lk)].outputs[0];
    lk = uses.sole_reader(x);
    if (lk < 0) return false;
  }
  const Node lin = g.nodes[static_cast<std::size_t>(lk)];
  if (!constant_weight_linear(g, lin) || lin.inputs[0] != x) return false;
  const ValueId y = lin.outputs[0];
  const int64_t n = g.value(y).meta.shape.back();
  if (numel(g.value(y).meta.shape) > kMaxNumbered) return false;
  std::vector<ValueId> exits;
  if (!view_exits(g, uses, y, exits) || exits.empty()) return false;
  // Where each element of the product lands in the batch-first product.
  const Tensor moved =
      element_numbers({batch, len, n}).permute({1, 0, 2}).contiguous().view(g.value(y).meta.shape);
  std::vector<Shape> shapes;
  for (ValueId e : exits) {
    const Chain c = layout_chain(g, e);
    const Shape& es = g.value(e).meta.shape;
    if (c.base != y || numel(es) != numel(g.value(y).meta.shape)) return false;
    if (!same_numbers(run_chain(g, c, moved), element_numbers(es))) return false;
    shapes.push_back(es);
  }
  HeadsAttrs a2 = a;
  a2.batch_first = true;
  const ValueId merged = edit.insert(lk, op_merge_heads(), a2, {m.inputs[0]})[0];
  std::vector<ValueId> in{merged};
  in.insert(in.end(), lin.inputs.begin() + 1, lin.inputs.end());
  const NoAttrs none{};
  const ValueId y2 = edit.insert(lk, op_linear(), none, in)[0];
  const Shape ys = g.value(y2).meta.shape;
  for (std::size_t i = 0; i < exits.size(); ++i) {
    const ValueId e2 =
        shapes[i] == ys ? y2 : edit.insert(lk, op_view(), ShapeAttrs{shapes[i]}, {y2})[0];
    edit.replace(exits[i], e2);
    edit.remove(g.value(exits[i]).node);  // a replaced value's maker goes with it
  }
  return true;  // the old merge, linear and the views before the exits are left to dce
}

}  // namespace

int heads_batch_first(Graph& g) {
  const ValueUses uses = value_uses(g);
  GraphEdit edit(g);
  int changed = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    const auto at = static_cast<int32_t>(k);
    if (n.op == &op_split_heads() && split_batch_first(g, uses, edit, at)) ++changed;
    if (n.op == &op_merge_heads() && merge_batch_first(g, uses, edit, at)) ++changed;
  }
  edit.finish();
  return changed;
}

}  // namespace ath::graph::detail
