// tril, triu and flip (ops with kernels), and repeat and roll (compositions of expand, reshape,
// narrow and cat: their gradients follow from those).
#include "athanor/ops/shaping.h"

#include <algorithm>

#include "athanor/ops/copy.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/views.h"
#include "index_checks.h"

namespace ath {

namespace {
OutputSpec triangle_spec(TensorSpan in, const TriAttrs&) {
  ATH_CHECK(in[0].dim() >= 2, ShapeError, "expected a tensor with >= 2 dims, got shape {}",
            to_string(in[0].shape()));
  return OutputSpec{{{in[0].shape(), in[0].dtype()}}, in[0].dtype()};
}
}  // namespace

const Op<TriAttrs>& op_tril() {
  static const auto& op = define_op<TriAttrs>({
      .name = "tril",
      .kind = OpKind::Pointwise,
      .infer = triangle_spec,
      .backward =
          [](BackwardContext& ctx, const TriAttrs& a) {
            ctx.set_grad_input(0, tril(ctx.grad_output(0), a.diagonal));
          },
  });
  return op;
}

const Op<TriAttrs>& op_triu() {
  static const auto& op = define_op<TriAttrs>({
      .name = "triu",
      .kind = OpKind::Pointwise,
      .infer = triangle_spec,
      .backward =
          [](BackwardContext& ctx, const TriAttrs& a) {
            ctx.set_grad_input(0, triu(ctx.grad_output(0), a.diagonal));
          },
  });
  return op;
}

const Op<FlipAttrs>& op_flip() {
  static const auto& op = define_op<FlipAttrs>({
      .name = "flip",
      .kind = OpKind::Opaque,
      .infer =
          [](TensorSpan in, const FlipAttrs& a) {
            for (std::size_t i = 0; i < a.dims.size(); ++i) {
              int64_t d = a.dims[i];
              ATH_CHECK(d >= 0 && d < std::max<int64_t>(in[0].dim(), 1), IndexError,
                        "dim {} is out of range for a tensor of {} dims", d, in[0].dim());
              // The kernel negates each listed stride once: a repeat would read out of bounds.
              ATH_CHECK(std::find(a.dims.begin(), a.dims.begin() + i, d) == a.dims.begin() + i,
                        ValueError, "dim {} appears multiple times in the list of dims", d);
            }
            return OutputSpec{{{in[0].shape(), in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const FlipAttrs& a) {
            ctx.set_grad_input(0, flip(ctx.grad_output(0), a.dims));
          },
  });
  return op;
}

Tensor tril(const Tensor& x, int64_t diagonal) {
  return call1(op_tril(), {x}, TriAttrs{.diagonal = diagonal});
}
Tensor triu(const Tensor& x, int64_t diagonal) {
  return call1(op_triu(), {x}, TriAttrs{.diagonal = diagonal});
}

Tensor flip(const Tensor& x, const DimList& dims) {
  FlipAttrs a = with_op_context(op_flip(), [&] {
    FlipAttrs r;
    for (int64_t d : dims) {
      int64_t n = normalize_dim(d, x.dim());
      ATH_CHECK(std::find(r.dims.begin(), r.dims.end(), n) == r.dims.end(), ValueError,
                "dim {} appears multiple times in the list of dims", n);
      r.dims.push_back(n);
    }
    return r;
  });
  return call1(op_flip(), {x}, a);
}

Tensor repeat(const Tensor& x, const Shape& repeats) {
  const int64_t nr = static_cast<int64_t>(repeats.size());
  ATH_CHECK(nr >= x.dim(), ShapeError,
            "repeat: the number of repeat dims ({}) can't be smaller than the tensor's dims ({})",
            nr, x.dim());
  for (int64_t r : repeats) {
    ATH_CHECK(r >= 0, ValueError, "repeat: repeats must be non-negative, got {}",
              to_string(repeats));
  }
  Shape padded(static_cast<std::size_t>(nr - x.dim()), 1);
  for (int64_t s : x.shape()) padded.push_back(s);
  Tensor y = reshape(x, padded);
  bool copied = false;
  // Tile one dim at a time: [.., s, ..] -> [.., 1, s, ..] expanded to [.., r, s, ..], then
  // merged. Each step adds one dim only, so any shape that fits kMaxDims - 1 dims works.
  for (int64_t d = 0; d < nr; ++d) {
    int64_t r = repeats[static_cast<std::size_t>(d)];
    if (r == 1) continue;
    Shape grown = y.shape();
    grown.insert(grown.begin() + d, r);
    Shape merged = y.shape();
    merged[d] *= r;
    y = reshape(expand(unsqueeze(y, d), grown), merged);
    copied = true;
  }
  return copied ? y : clone(y);  // always a new tensor, as in torch
}

Tensor roll(const Tensor& x, const DimList& shifts, const DimList& dims) {
  if (dims.empty()) {
    ATH_CHECK(shifts.size() == 1, ValueError,
              "roll: without dims, expected exactly one shift, got {}", shifts.size());
    return reshape(roll(flatten(x), shifts, {0}), x.shape());
  }
  ATH_CHECK(shifts.size() == dims.size(), ValueError,
            "roll: shifts ({} of them) and dims ({}) must align", shifts.size(), dims.size());
  Tensor y = x;
  bool copied = false;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    int64_t d = detail::normalize_dim_for("roll", dims[i], x.dim());
    int64_t n = x.dim() == 0 ? 1 : x.shape()[d];
    if (n == 0 || x.dim() == 0) continue;
    int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    // The last s elements move to the front.
    y = cat({narrow(y, d, n - s, s), narrow(y, d, 0, n - s)}, d);
    copied = true;
  }
  return copied ? y : clone(y);
}

}  // namespace ath
