// select_view (inference only): index_select of one constant index along a dim — what exporters
// write for "take part i" (Gather with a constant scalar index) — becomes slice(dim, i, i + 1),
// a view: no copy is made, and the readers read the selected part where it lies.
//
// Legal where the view can stand for the copy: every view node reading the result (through
// further views) must still be a view of the strided slice — a reshape that would need the copy's
// contiguous layout keeps the index_select; the other readers are kernels, which read inputs of
// any strides. The result must not be a graph output (the caller would get a view into a buffer
// it does not own). The recorded strides of the slice and of the views over it are updated.
//
// Bit-identical: the same elements are read.
#include <unordered_map>

#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/views.h"
#include "graph_edit.h"

namespace ath::graph {

namespace {

using detail::ValueUses;

// An empty tensor laid out as v (its storage just large enough).
Tensor stand_in(const Value& v) {
  int64_t extent = 1;
  for (std::size_t d = 0; d < v.meta.shape.size(); ++d) {
    if (v.meta.shape[d] == 0) return empty(v.meta.shape, v.meta.dtype);
    extent += (v.meta.shape[d] - 1) * v.strides[d];
  }
  return empty({extent}, v.meta.dtype).as_strided(v.meta.shape, v.strides);
}

// The new strides of the views reading `out` (transitively) when out is laid out as `t`; false
// when one of them cannot be a view of it.
bool relayout_views(const Graph& g, const ValueUses& uses, ValueId out, const Tensor& t,
                    std::unordered_map<ValueId, Strides>& strides) {
  strides[out] = t.strides();
  for (int32_t k : uses.of(out)) {
    const Node& n = g.nodes[static_cast<std::size_t>(k)];
    if (n.op->kind != OpKind::View) continue;  // a kernel: reads any strides
    if (n.inputs.size() != 1 || n.outputs.size() != 1 || n.attr_source) return false;
    Tensor v;
    try {
      v = n.op->run(TensorSpan(&t, 1), n.attrs.get())[0];
    } catch (const Error&) {
      return false;
    }
    if (v.shape() != g.value(n.outputs[0]).meta.shape ||
        uses.pinned[static_cast<std::size_t>(n.outputs[0])] ||
        !relayout_views(g, uses, n.outputs[0], v, strides))
      return false;
  }
  return true;
}

}  // namespace

int convert_selects_to_views(Graph& g) {
  if (g.nodes.empty() || detail::writes_memory(g)) return 0;
  const ValueUses uses = detail::value_uses(g);
  int changed = 0;
  for (Node& n : g.nodes) {
    if (n.op != &op_index_select() || n.inputs.size() != 2 || n.attr_source) continue;
    const Tensor idx = detail::constant_value(g, n.inputs[1]);
    const Value& x = g.value(n.inputs[0]);
    const ValueId out = n.outputs[0];
    if (!idx.defined() || idx.numel() != 1 || x.meta.shape.empty() ||
        uses.pinned[static_cast<std::size_t>(out)])
      continue;
    const int64_t dim = static_cast<const DimAttrs*>(n.attrs.get())->dim;
    const int64_t i = idx.to(kInt64).reshape({1}).to_vector<int64_t>()[0];
    if (i < 0 || i >= x.meta.shape[static_cast<std::size_t>(dim)]) continue;  // left to the kernel
    const SliceAttrs a{.dim = dim, .start = i, .end = i + 1, .step = 1};
    const Tensor sliced = op_slice().run(TensorSpan(std::vector<Tensor>{stand_in(x)}), &a)[0];
    std::unordered_map<ValueId, Strides> strides;
    if (!relayout_views(g, uses, out, sliced, strides)) continue;
    n.op = &op_slice();
    n.attrs = op_slice().clone_attrs(&a);
    n.inputs.resize(1);
    for (const auto& [v, s] : strides) {
      Value& val = g.values[static_cast<std::size_t>(v)];
      val.strides = s;
      val.storage = x.storage;
    }
    ++changed;
  }
  return changed;
}

}  // namespace ath::graph
