// all, any: definitions (bool results for any input dtype; not differentiable).
#include "athanor/ops/dispatch.h"
#include "reduce_common.h"

namespace ath {

namespace {
OutputSpec logic_spec(TensorSpan in, const ReduceAttrs& a) {
  detail::check_dims_in_range(a.dims, in[0].dim());
  return OutputSpec{{{reduced_shape(in[0].shape(), a.dims, a.keepdim), kBool}}, in[0].dtype()};
}
}  // namespace

const Op<ReduceAttrs>& op_all() {
  static const auto& op = define_op<ReduceAttrs>({
      .name = "all",
      .kind = OpKind::Reduce,
      .infer = logic_spec,
      .not_differentiable = "returns bool",
  });
  return op;
}

const Op<ReduceAttrs>& op_any() {
  static const auto& op = define_op<ReduceAttrs>({
      .name = "any",
      .kind = OpKind::Reduce,
      .infer = logic_spec,
      .not_differentiable = "returns bool",
  });
  return op;
}

Tensor all(const Tensor& x, const DimList& dims, bool keepdim) {
  ReduceAttrs a = with_op_context(op_all(), [&] {
    return ReduceAttrs{.dims = normalize_dims(dims, x.dim()), .keepdim = keepdim};
  });
  return call1(op_all(), {x}, a);
}
Tensor any(const Tensor& x, const DimList& dims, bool keepdim) {
  ReduceAttrs a = with_op_context(op_any(), [&] {
    return ReduceAttrs{.dims = normalize_dims(dims, x.dim()), .keepdim = keepdim};
  });
  return call1(op_any(), {x}, a);
}

}  // namespace ath
