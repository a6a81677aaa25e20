// Mask-driven ops: where, masked_fill, masked_select, masked_scatter and nonzero.
// masked_select and nonzero have data-dependent shapes: their shape rules read the mask/input.
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/shaping.h"
#include "index_checks.h"

namespace ath {

using detail::check_bool_mask;

namespace {

template <class T>
bool is_nonzero(T v) {  // NaN counts as nonzero, as in torch
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(v) != 0.0f;
  } else {
    return v != T(0);
  }
}

// Number of nonzero elements of t broadcast to `shape` (t's strides; a broadcast dim reads its
// one element repeatedly, as the kernels do).
int64_t count_nonzero(const Tensor& t, const Shape& shape) {
  const int64_t n = numel(shape);
  if (n == 0) return 0;
  Strides st(shape.size(), 0);
  const std::size_t lead = shape.size() - static_cast<std::size_t>(t.dim());
  for (std::size_t d = 0; d < static_cast<std::size_t>(t.dim()); ++d) {
    st[lead + d] = t.shape()[d] == 1 ? 0 : t.strides()[d];
  }
  return dispatch_dtype(t.dtype(), [&]<class T>() {
    const T* p = static_cast<const T*>(t.data_ptr());
    int64_t count = 0;
    Shape idx(shape.size(), 0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t off = 0;
      for (std::size_t d = 0; d < shape.size(); ++d) off += idx[d] * st[d];
      if (is_nonzero(p[off])) ++count;
      for (std::size_t d = shape.size(); d-- > 0;) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    return count;
  });
}

Tensor zero_like_scalar(const Tensor& g) { return zeros({}, g.dtype()); }

}  // namespace

const Op<NoAttrs>& op_where() {
  static const auto& op = define_op<NoAttrs>({
      .name = "where",
      .kind = OpKind::Pointwise,
      .num_inputs = 3,
      .save_inputs = 0b001,
      .promote_inputs = 0b110,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            check_bool_mask(in[0], "condition");
            Shape s =
                broadcast_shapes(broadcast_shapes(in[0].shape(), in[1].shape()), in[2].shape());
            DType t = promote_types(in[1].dtype(), in[2].dtype());
            return OutputSpec{{{s, t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            const Tensor& g = ctx.grad_output(0);
            const Tensor& cond = ctx.input(0);
            Tensor zero = zero_like_scalar(g);
            if (ctx.needs_grad(1)) {
              ctx.set_grad_input(1, sum_to(where(cond, g, zero), ctx.input_meta(1).shape));
            }
            if (ctx.needs_grad(2)) {
              ctx.set_grad_input(2, sum_to(where(cond, zero, g), ctx.input_meta(2).shape));
            }
          },
  });
  return op;
}

const Op<NoAttrs>& op_masked_fill() {
  static const auto& op = define_op<NoAttrs>({
      .name = "masked_fill",
      .kind = OpKind::Pointwise,
      .num_inputs = 3,
      .save_inputs = 0b010,
      .promote_inputs = 0b101,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            check_bool_mask(in[1], "mask");
            ATH_CHECK(in[2].dim() == 0, ShapeError,
                      "only a 0-dim value tensor is supported, got shape {}",
                      to_string(in[2].shape()));
            Shape s = broadcast_shapes(in[0].shape(), in[1].shape());
            return OutputSpec{{{s, in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            const Tensor& g = ctx.grad_output(0);
            const Tensor& mask = ctx.input(1);
            Tensor zero = zero_like_scalar(g);
            if (ctx.needs_grad(0)) {
              ctx.set_grad_input(0, sum_to(where(mask, zero, g), ctx.input_meta(0).shape));
            }
            if (ctx.needs_grad(2)) ctx.set_grad_input(2, sum(where(mask, g, zero)));
          },
  });
  return op;
}

const Op<NoAttrs>& op_masked_select() {
  static const auto& op = define_op<NoAttrs>({
      .name = "masked_select",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .save_inputs = 0b10,
      .promote_inputs = 0b01,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            check_bool_mask(in[1], "mask");
            Shape s = broadcast_shapes(in[0].shape(), in[1].shape());
            return OutputSpec{{{Shape{count_nonzero(in[1], s)}, in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            const Tensor& g = ctx.grad_output(0);
            const Tensor& mask = ctx.input(1);
            const Shape& xs = ctx.input_meta(0).shape;
            Tensor z = zeros(broadcast_shapes(xs, mask.shape()), g.dtype());
            ctx.set_grad_input(0, sum_to(masked_scatter(z, mask, g), xs));
          },
  });
  return op;
}

const Op<NoAttrs>& op_masked_scatter() {
  static const auto& op = define_op<NoAttrs>({
      .name = "masked_scatter",
      .kind = OpKind::Opaque,
      .num_inputs = 3,
      .save_inputs = 0b010,
      .promote_inputs = 0b101,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            check_bool_mask(in[1], "mask");
            ATH_CHECK(in[2].dtype() == in[0].dtype(), DTypeError,
                      "self ({}) and source ({}) must have the same dtype",
                      dtype_name(in[0].dtype()), dtype_name(in[2].dtype()));
            Shape s = broadcast_shapes(in[0].shape(), in[1].shape());
            return OutputSpec{{{s, in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const NoAttrs&) {
            const Tensor& g = ctx.grad_output(0);
            const Tensor& mask = ctx.input(1);
            if (ctx.needs_grad(0)) {
              ctx.set_grad_input(
                  0, sum_to(where(mask, zero_like_scalar(g), g), ctx.input_meta(0).shape));
            }
            if (ctx.needs_grad(2)) {
              // Source elements past the mask's count were never read: zero gradient.
              const Shape& ss = ctx.input_meta(2).shape;
              Tensor used = masked_select(g, mask);
              int64_t rest = numel(ss) - used.numel();
              Tensor flat = rest == 0 ? used : cat({used, zeros({rest}, g.dtype())});
              ctx.set_grad_input(2, flat.view(ss));
            }
          },
  });
  return op;
}

const Op<NoAttrs>& op_nonzero() {
  static const auto& op = define_op<NoAttrs>({
      .name = "nonzero",
      .kind = OpKind::Opaque,
      .promote_inputs = 0,
      .infer =
          [](TensorSpan in, const NoAttrs&) {
            int64_t n = count_nonzero(in[0], in[0].shape());
            return OutputSpec{{{Shape{n, in[0].dim()}, kInt64}}, in[0].dtype()};
          },
      .not_differentiable = "returns integer indices",
  });
  return op;
}

// ---- public functions ----------------------------------------------------------------------

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return call1(op_where(), {cond, a, b});
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) {
  return where(cond, a, wrap_scalar(b, a));
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) {
  return where(cond, wrap_scalar(a, b), b);
}
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b) {
  Tensor ta = scalar_tensor(a);
  return where(cond, ta, wrap_scalar(b, ta));
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  return masked_fill(x, mask, scalar_tensor(value, x.dtype()));
}
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  return call1(op_masked_fill(), {x, mask, value});
}
Tensor masked_select(const Tensor& x, const Tensor& mask) {
  return call1(op_masked_select(), {x, mask});
}
Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  return call1(op_masked_scatter(), {self, mask, source});
}
Tensor nonzero(const Tensor& x) { return call1(op_nonzero(), {x}); }

}  // namespace ath
