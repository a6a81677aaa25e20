// Views and shaping. ONNX tensors have no strides: a recorded view is the logical operation
// (a view keeps row-major element order, so Reshape; permute is Transpose). Target shapes that
// the batch size went into are written so that another batch size still fits: -1 in a Reshape,
// the input's dim 0 read at run time for Expand, the end of a full slice of the batch dim as
// "to the end".
#include <limits>

#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/shaping.h"
#include "athanor/ops/views.h"
#include "emitters.h"

namespace ath::onnx::detail {

namespace {

constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();

void emit_view(EmitContext& c) {
  c.add("Reshape", {c.in(0), c.reshape_target(c.out_value(0))}, {c.out(0)});
}

void emit_permute(EmitContext& c) {
  const DimList& dims = c.attrs<PermuteAttrs>().dims;
  attr_ints(c.add("Transpose", {c.in(0)}, {c.out(0)}), "perm",
            std::vector<int64_t>(dims.begin(), dims.end()));
}

void emit_expand(EmitContext& c) {
  c.add("Expand", {c.in(0), c.runtime_shape(c.out_value(0))}, {c.out(0)});
}

void emit_slice(EmitContext& c) {
  const SliceAttrs& a = c.attrs<SliceAttrs>();
  int64_t end = a.end;
  if (c.attrs_vary()) {
    // Only a slice that runs to the end of a batch-sized dim can follow the batch size.
    const SliceAttrs& b = c.other_attrs<SliceAttrs>();
    const auto dim = static_cast<std::size_t>(a.dim);
    const ValueId x = c.in_value(0);
    const bool to_end = a.dim == b.dim && a.start == b.start && a.step == b.step &&
                        c.varies(x, dim) && a.end == c.meta(x).shape[dim];
    if (!to_end) c.unsupported("a slice whose bounds depend on the batch size");
    end = kToEnd;
  }
  c.add("Slice", {c.in(0), c.ints({a.start}), c.ints({end}), c.ints({a.dim}), c.ints({a.step})},
        {c.out(0)});
}

void emit_select(EmitContext& c) {
  const SelectAttrs& a = c.attrs<SelectAttrs>();
  attr_i(
      c.add("Gather", {c.in(0), c.constant(scalar_tensor(a.index, kInt64), "index")}, {c.out(0)}),
      "axis", a.dim);
}

void emit_cat(EmitContext& c) {
  std::vector<std::string> inputs;
  const std::size_t rank = c.out_meta(0).shape.size();
  for (int i = 0; i < c.num_inputs(); ++i) {
    // cat skips 1-D empty inputs beside tensors of another rank (PyTorch's legacy rule).
    if (c.is_absent(i) && rank != 1) continue;
    inputs.push_back(c.in(i));
  }
  if (inputs.size() == 1) {
    c.add("Identity", inputs, {c.out(0)});
    return;
  }
  attr_i(c.add("Concat", inputs, {c.out(0)}), "axis", c.attrs<CatAttrs>().dim);
}

template <bool Upper>
void emit_tri(EmitContext& c) {
  if (c.opset() < 14) c.unsupported("tril/triu below opset 14 (Trilu)");
  ::onnx::NodeProto& n =
      c.add("Trilu", {c.in(0), c.constant(scalar_tensor(c.attrs<TriAttrs>().diagonal, kInt64))},
            {c.out(0)});
  attr_i(n, "upper", Upper ? 1 : 0);
}

void emit_flip(EmitContext& c) {
  const DimList& dims = c.attrs<FlipAttrs>().dims;
  const std::vector<int64_t> axes(dims.begin(), dims.end());
  const std::vector<int64_t> starts(axes.size(), -1), steps(axes.size(), -1);
  const std::vector<int64_t> ends(axes.size(), std::numeric_limits<int64_t>::min());
  c.add("Slice", {c.in(0), c.ints(starts), c.ints(ends), c.ints(axes), c.ints(steps)}, {c.out(0)});
}

void emit_index_select(EmitContext& c) {
  attr_i(c.add("Gather", {c.in(0), c.in(1)}, {c.out(0)}), "axis", c.attrs<DimAttrs>().dim);
}

void emit_gather(EmitContext& c) {
  attr_i(c.add("GatherElements", {c.in(0), c.in(1)}, {c.out(0)}), "axis", c.attrs<DimAttrs>().dim);
}

// arange has no inputs: the exporter folds it into a constant, unless its length follows the
// batch size.
void emit_arange(EmitContext& c) { c.unsupported("arange whose length depends on the batch size"); }

}  // namespace

void add_shape_emitters(EmitTable& t) {
  t[&op_view()] = {emit_view, true};
  t[&op_permute()] = {emit_permute};
  t[&op_expand()] = {emit_expand, true};
  t[&op_slice()] = {emit_slice, true};
  t[&op_select()] = {emit_select};
  t[&op_cat()] = {emit_cat};
  t[&op_tril()] = {emit_tri<false>};
  t[&op_triu()] = {emit_tri<true>};
  t[&op_flip()] = {emit_flip};
  t[&op_index_select()] = {emit_index_select};
  t[&op_gather()] = {emit_gather};
  t[&op_arange()] = {emit_arange, true};
}

}  // namespace ath::onnx::detail
