// cat (the one variadic op) and what builds on it or undoes it: stack, split, chunk.
#include <numeric>

#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/shaping.h"
#include "athanor/ops/views.h"
#include "index_checks.h"

namespace ath {

namespace {

// torch's legacy rule: a 1-D tensor with no elements joins any cat and contributes nothing.
bool skipped(const Tensor& t) { return t.dim() == 1 && t.shape()[0] == 0; }

// The first input that takes part, or -1 when all are skipped.
int64_t first_kept(TensorSpan in) {
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!skipped(in[i])) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace

const Op<CatAttrs>& op_cat() {
  static const auto& op = define_op<CatAttrs>({
      .name = "cat",
      .kind = OpKind::Opaque,
      .num_inputs = -1,
      .infer =
          [](TensorSpan in, const CatAttrs& a) {
            ATH_CHECK(!in.empty(), ValueError, "expected a non-empty list of tensors");
            DType t = in[0].dtype();
            for (const Tensor& x : in) t = promote_types(t, x.dtype());
            int64_t ref = first_kept(in);
            if (ref < 0) return OutputSpec{{{Shape{0}, t}}, t};
            const Tensor& r = in[static_cast<std::size_t>(ref)];
            ATH_CHECK(r.dim() > 0, ShapeError,
                      "a 0-dim tensor (at position {}) can't be concatenated", ref);
            ATH_CHECK(a.dim >= 0 && a.dim < r.dim(), IndexError,
                      "dim {} is out of range for tensors of {} dims", a.dim, r.dim());
            Shape out = r.shape();
            out[a.dim] = 0;
            for (std::size_t i = 0; i < in.size(); ++i) {
              const Tensor& x = in[i];
              if (skipped(x)) continue;
              ATH_CHECK(x.dim() == r.dim(), ShapeError,
                        "tensors must have the same number of dims: got {} at position {} and {} "
                        "at position {}",
                        r.dim(), ref, x.dim(), i);
              for (int64_t d = 0; d < r.dim(); ++d) {
                ATH_CHECK(d == a.dim || x.shape()[d] == r.shape()[d], ShapeError,
                          "sizes of tensors must match except in dim {}: expected size {} but "
                          "got size {} at dim {} for the tensor at position {} (shape {})",
                          a.dim, r.shape()[d], x.shape()[d], d, i, to_string(x.shape()));
              }
              out[a.dim] += x.shape()[a.dim];
            }
            return OutputSpec{{{out, t}}, t};
          },
      .backward =
          [](BackwardContext& ctx, const CatAttrs& a) {
            const Tensor& g = ctx.grad_output(0);
            int64_t offset = 0;
            for (int i = 0; i < ctx.num_inputs(); ++i) {
              const Shape& s = ctx.input_meta(i).shape;
              bool skip = s.size() == 1 && s[0] == 0;
              int64_t len = skip ? 0 : s[static_cast<std::size_t>(a.dim)];
              if (ctx.needs_grad(i)) {
                ctx.set_grad_input(i, skip ? zeros(s, g.dtype()) : narrow(g, a.dim, offset, len));
              }
              offset += len;
            }
          },
  });
  return op;
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  TensorSpan in(tensors);
  int64_t d = with_op_context(op_cat(), [&] {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      ATH_CHECK(tensors[i].defined(), ValueError, "tensor {} is undefined", i);
    }
    int64_t ref = first_kept(in);
    if (ref < 0) return int64_t{0};
    const Tensor& r = tensors[static_cast<std::size_t>(ref)];
    ATH_CHECK(r.dim() > 0, ShapeError, "a 0-dim tensor (at position {}) can't be concatenated",
              ref);
    return normalize_dim(dim, r.dim());
  });
  return call1(op_cat(), in, CatAttrs{.dim = d});
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  ATH_CHECK(!tensors.empty(), ValueError, "stack: expected a non-empty list of tensors");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    ATH_CHECK(tensors[i].defined(), ValueError, "stack: tensor {} is undefined", i);
    ATH_CHECK(tensors[i].shape() == tensors[0].shape(), ShapeError,
              "stack: expects each tensor to be equal size, but got {} at entry 0 and {} at "
              "entry {}",
              to_string(tensors[0].shape()), to_string(tensors[i].shape()), i);
  }
  int64_t d = detail::normalize_dim_for("stack", dim, tensors[0].dim() + 1);
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(unsqueeze(t, d));
  return cat(parts, d);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  ATH_CHECK(x.dim() > 0, ShapeError, "split: a 0-dim tensor can't be split");
  int64_t d = detail::normalize_dim_for("split", dim, x.dim());
  int64_t total = 0;
  for (int64_t s : sizes) {
    ATH_CHECK(s >= 0, ValueError, "split: sizes must be non-negative, got {}", s);
    total += s;
  }
  ATH_CHECK(total == x.shape()[d], ValueError,
            "split: sizes must sum exactly to {} (the size of dim {}), but they sum to {}",
            x.shape()[d], d, total);
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, d, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  ATH_CHECK(x.dim() > 0, ShapeError, "split: a 0-dim tensor can't be split");
  int64_t d = detail::normalize_dim_for("split", dim, x.dim());
  const int64_t n = x.shape()[d];
  ATH_CHECK(split_size > 0 || (split_size == 0 && n == 0), ValueError,
            "split: split_size must be positive (or 0 for an empty dim), got {} for size {}",
            split_size, n);
  std::vector<int64_t> sizes;
  if (n == 0) sizes.push_back(0);
  for (int64_t start = 0; start < n; start += split_size) {
    sizes.push_back(std::min(split_size, n - start));
  }
  return split(x, sizes, d);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  ATH_CHECK(chunks > 0, ValueError, "chunk: chunks must be greater than 0, got {}", chunks);
  ATH_CHECK(x.dim() > 0, ShapeError, "chunk: a 0-dim tensor can't be chunked");
  int64_t d = detail::normalize_dim_for("chunk", dim, x.dim());
  const int64_t n = x.shape()[d];
  if (n == 0) return split(x, std::vector<int64_t>(static_cast<std::size_t>(chunks), 0), d);
  return split(x, (n + chunks - 1) / chunks, d);
}

}  // namespace ath
