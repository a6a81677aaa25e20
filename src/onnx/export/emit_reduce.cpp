// Reductions. Up to opset 17 ReduceSum takes its axes as an input (since opset 13) and the
// other reductions as an attribute; no axes reduce every dim, as athanor's empty dim list.
#include "athanor/ops/reduction.h"
#include "emitters.h"

namespace ath::onnx::detail {

namespace {

template <const char* Name>
void emit_reduce(EmitContext& c) {
  const ReduceAttrs& a = c.attrs<ReduceAttrs>();
  const std::vector<int64_t> axes(a.dims.begin(), a.dims.end());
  const std::string x = c.in_as(0, c.out_meta(0).dtype);
  const bool sum = std::string_view(Name) == "ReduceSum";
  std::vector<std::string> inputs{x};
  if (sum && !axes.empty()) inputs.push_back(c.ints(axes));
  ::onnx::NodeProto& n = c.add(Name, inputs, {c.out(0)});
  if (!sum && !axes.empty()) attr_ints(n, "axes", axes);
  attr_i(n, "keepdims", a.keepdim ? 1 : 0);
}
constexpr char kSum[] = "ReduceSum", kMean[] = "ReduceMean", kProd[] = "ReduceProd",
               kMax[] = "ReduceMax", kMin[] = "ReduceMin", kLogSumExp[] = "ReduceLogSumExp";

// argmax/argmin over one dim, or over the flattened tensor when none is given.
template <const char* Name>
void emit_arg(EmitContext& c) {
  const ArgAttrs& a = c.attrs<ArgAttrs>();
  std::string x = c.in(0);
  int64_t axis = 0;
  if (a.dim) {
    axis = *a.dim;
  } else {
    if (a.keepdim) c.unsupported("over every dim with keepdim");
    x = c.op("Reshape", {x, c.ints({-1})});
  }
  ::onnx::NodeProto& n = c.add(Name, {x}, {c.out(0)});
  attr_i(n, "axis", axis);
  attr_i(n, "keepdims", a.keepdim ? 1 : 0);
}
constexpr char kArgMax[] = "ArgMax", kArgMin[] = "ArgMin";

// max_dim / min_dim: (values, indices) along one dim.
template <const char* Reduce, const char* Arg>
void emit_dim_extreme(EmitContext& c) {
  const DimKeepAttrs& a = c.attrs<DimKeepAttrs>();
  ::onnx::NodeProto& v = c.add(Reduce, {c.in(0)}, {c.out(0)});
  attr_ints(v, "axes", {a.dim});
  attr_i(v, "keepdims", a.keepdim ? 1 : 0);
  if (!c.out_used(1)) return;
  ::onnx::NodeProto& i = c.add(Arg, {c.in(0)}, {c.out(1)});
  attr_i(i, "axis", a.dim);
  attr_i(i, "keepdims", a.keepdim ? 1 : 0);
}

}  // namespace

void add_reduce_emitters(EmitTable& t) {
  t[&op_sum()] = {emit_reduce<kSum>};
  t[&op_mean()] = {emit_reduce<kMean>};
  t[&op_prod()] = {emit_reduce<kProd>};
  t[&op_amax()] = {emit_reduce<kMax>};
  t[&op_amin()] = {emit_reduce<kMin>};
  t[&op_logsumexp()] = {emit_reduce<kLogSumExp>};
  t[&op_argmax()] = {emit_arg<kArgMax>};
  t[&op_argmin()] = {emit_arg<kArgMin>};
  t[&op_max_dim()] = {emit_dim_extreme<kMax, kArgMax>};
  t[&op_min_dim()] = {emit_dim_extreme<kMin, kArgMin>};
}

}  // namespace ath::onnx::detail
