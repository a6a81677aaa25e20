// prod: definition and backward formula (exact with zeros in the input).
#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/views.h"
#include "reduce_common.h"

namespace ath {

namespace {

// For each element, the product of the other elements of its reduction: the exclusive cumprod
// from the front times the exclusive cumprod from the back, over the reduced dims flattened.
// No division, so zeros are exact (PyTorch's prod_safe_zeros_backward).
Tensor product_of_others(const Tensor& x, const DimList& dims) {
  if (x.dim() == 0) return ones_like(x);
  DimList reduced = detail::explicit_dims(dims, x.dim());
  DimList perm;
  Shape flat;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) {
      perm.push_back(d);
      flat.push_back(x.shape()[d]);
    }
  }
  for (int64_t d : reduced) perm.push_back(d);
  flat.push_back(reduced_count(x.shape(), reduced));
  Tensor xp = x.permute(perm);
  Tensor xf = xp.reshape(flat);
  const int64_t last = static_cast<int64_t>(flat.size()) - 1;
  Tensor front = cumprod(xf, ScanAttrs{.dim = last, .exclusive = true});
  Tensor back = cumprod(xf, ScanAttrs{.dim = last, .reverse = true, .exclusive = true});
  DimList inverse(perm.size(), 0);
  for (std::size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<std::size_t>(perm[i])] = int64_t(i);
  return mul(front, back).reshape(xp.shape()).permute(inverse);
}

}  // namespace

const Op<ReduceAttrs>& op_prod() {
  static const auto& op = define_op<ReduceAttrs>({
      .name = "prod",
      .kind = OpKind::Reduce,
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b1,
      .save_outputs = 0b1,
      .infer =
          [](TensorSpan in, const ReduceAttrs& a) {
            detail::check_dims_in_range(a.dims, in[0].dim());
            DType t = in[0].dtype();
            DType out_t = a.dtype.value_or(is_floating(t) ? t : kInt64);
            ATH_CHECK(out_t != kBool, DTypeError, "a bool result is not supported");
            return OutputSpec{{{reduced_shape(in[0].shape(), a.dims, a.keepdim), out_t}}, out_t};
          },
      .backward =
          [](BackwardContext& ctx, const ReduceAttrs& a) {
            // Both formulas, chosen per reduced group with no read of the data on the host (a
            // replayed graph must not branch on values): g*y/x where the group has no zero
            // (PyTorch's), the product of the others where it has one. The division sees 1 for
            // x in groups it does not serve, so it never makes 0/0, nor does its gradient.
            const Tensor& x = ctx.input(0);
            Tensor g = keepdim_view(ctx.grad_output(0), x.shape(), a.dims, a.keepdim);
            Tensor y = keepdim_view(
                detail::output_for_backward(ctx, 0, [&] { return call1(op_prod(), {x}, a); }),
                x.shape(), a.dims, a.keepdim);
            Tensor zero_group = logical_not(all(x, a.dims, /*keepdim=*/true));
            Tensor divided = div(mul(g, y), where(zero_group, 1.0, x));
            Tensor exact = mul(g, product_of_others(x, a.dims));
            ctx.set_grad_input(0, where(zero_group, exact, divided));
          },
  });
  return op;
}

Tensor prod(const Tensor& x, const DimList& dims, bool keepdim, std::optional<DType> dtype) {
  ReduceAttrs a = with_op_context(op_prod(), [&] {
    return ReduceAttrs{.dims = normalize_dims(dims, x.dim()), .keepdim = keepdim, .dtype = dtype};
  });
  return call1(op_prod(), {x}, a);
}

}  // namespace ath
