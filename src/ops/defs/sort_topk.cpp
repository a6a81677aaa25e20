// sort, argsort and topk: definitions, shape rules, backward formulas.
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/indexing.h"
#include "index_checks.h"

namespace ath {

using detail::check_dim;
using detail::index_size;

namespace {
// Both ops route the values' gradient back to where each value came from. The indices of one
// slice are distinct, so scatter_add into zeros places every gradient element exactly once.
void scatter_back(BackwardContext& ctx, int64_t dim) {
  const Tensor& g = ctx.grad_output(0);
  Tensor z = zeros(ctx.input_meta(0).shape, g.dtype());
  ctx.set_grad_input(0, scatter_add(z, dim, ctx.output(1), g));
}
}  // namespace

const Op<SortAttrs>& op_sort() {
  static const auto& op = define_op<SortAttrs>({
      .name = "sort",
      .kind = OpKind::Opaque,
      .num_outputs = 2,
      .save_outputs = 0b10,
      .infer =
          [](TensorSpan in, const SortAttrs& a) {
            check_dim(a.dim, in[0]);
            const Shape& s = in[0].shape();
            return OutputSpec{{{s, in[0].dtype()}, {s, kInt64}}, in[0].dtype()};
          },
      .backward = [](BackwardContext& ctx, const SortAttrs& a) { scatter_back(ctx, a.dim); },
  });
  return op;
}

const Op<TopkAttrs>& op_topk() {
  static const auto& op = define_op<TopkAttrs>({
      .name = "topk",
      .kind = OpKind::Opaque,
      .num_outputs = 2,
      .save_outputs = 0b10,
      .infer =
          [](TensorSpan in, const TopkAttrs& a) {
            const Tensor& x = in[0];
            check_dim(a.dim, x);
            int64_t n = index_size(x, a.dim);
            ATH_CHECK(a.k >= 0 && a.k <= n, IndexError,
                      "k ({}) is out of range for dimension {} of size {}", a.k, a.dim, n);
            Shape s = x.shape();
            if (x.dim() > 0) s[a.dim] = a.k;
            return OutputSpec{{{s, x.dtype()}, {s, kInt64}}, x.dtype()};
          },
      .backward = [](BackwardContext& ctx, const TopkAttrs& a) { scatter_back(ctx, a.dim); },
  });
  return op;
}

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool /*stable*/) {
  int64_t d = with_op_context(op_sort(), [&] { return normalize_dim(dim, x.dim()); });
  Tensor in[1] = {x};
  Outputs out = call(op_sort(), TensorSpan(in), SortAttrs{.dim = d, .descending = descending});
  return {std::move(out[0]), std::move(out[1])};
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  return sort(x, dim, descending, stable).second;
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest,
                               bool /*sorted*/) {
  int64_t d = with_op_context(op_topk(), [&] { return normalize_dim(dim, x.dim()); });
  Tensor in[1] = {x};
  Outputs out = call(op_topk(), TensorSpan(in), TopkAttrs{.k = k, .dim = d, .largest = largest});
  return {std::move(out[0]), std::move(out[1])};
}

}  // namespace ath
