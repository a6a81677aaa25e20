// View ops: shape rules (the `view` functions build aliasing outputs) and backward formulas.
#include "athanor/ops/views.h"

#include <algorithm>
#include <numeric>

#include "athanor/ops/copy.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/reduction.h"

namespace ath {

Shape infer_view_shape(const Shape& shape, int64_t n) {
  Shape out = shape;
  int64_t known = 1;
  std::optional<std::size_t> infer_at;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      ATH_CHECK(!infer_at, ShapeError, "only one dimension can be inferred (-1) in shape {}",
                to_string(shape));
      infer_at = i;
    } else {
      ATH_CHECK(out[i] >= 0, ShapeError, "invalid size {} in shape {}", out[i], to_string(shape));
      known *= out[i];
    }
  }
  if (infer_at) {
    ATH_CHECK(known != 0 && n % known == 0, ShapeError, "shape {} is invalid for input of size {}",
              to_string(shape), n);
    out[*infer_at] = n / known;
  } else {
    ATH_CHECK(known == n, ShapeError, "shape {} is invalid for input of size {}", to_string(shape),
              n);
  }
  return out;
}

std::optional<Strides> view_strides(const Shape& old_shape, const Strides& old_strides,
                                    const Shape& new_shape) {
  Strides new_strides(new_shape.size(), 0);
  if (old_shape.empty()) {  // a 0-dim tensor views as any all-ones shape
    for (auto& s : new_strides) s = 1;
    return new_strides;
  }
  if (numel(old_shape) == 0) return contiguous_strides(new_shape);
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_shape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_shape[tensor_d];
    // At the start of a chunk of dims that are contiguous with each other:
    if (tensor_d == 0 || (old_shape[tensor_d - 1] != 1 &&
                          old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

namespace {

// Gradient of a slicing view of an input with `shape`: the grad placed into zeros of `shape`.
Tensor scatter_into_zeros(const Tensor& grad, const Shape& shape, const Shape& size,
                          const Strides& stride, int64_t offset) {
  return call1(
      op_view_scatter(), {grad},
      ViewScatterAttrs{.base_shape = shape, .size = size, .stride = stride, .offset = offset});
}

}  // namespace

const Op<ShapeAttrs>& op_view() {
  static const auto& op = define_op<ShapeAttrs>({
      .name = "view",
      .kind = OpKind::View,
      .view =
          [](const Tensor& x, const ShapeAttrs& a) {
            Shape shape = infer_view_shape(a.shape, x.numel());
            auto strides = view_strides(x.shape(), x.strides(), shape);
            ATH_CHECK(strides.has_value(), ShapeError,
                      "view size {} is not compatible with input size {} and strides {}: at least "
                      "one dimension spans across two contiguous subspaces; use reshape instead",
                      to_string(shape), to_string(x.shape()), to_string(x.strides()));
            return make_view(x, shape, *strides, x.storage_offset());
          },
      .backward =
          [](BackwardContext& ctx, const ShapeAttrs&) {
            ctx.set_grad_input(0, reshape(ctx.grad_output(0), ctx.input_meta(0).shape));
          },
  });
  return op;
}

const Op<PermuteAttrs>& op_permute() {
  static const auto& op = define_op<PermuteAttrs>({
      .name = "permute",
      .kind = OpKind::View,
      .view =
          [](const Tensor& x, const PermuteAttrs& a) {
            ATH_CHECK(static_cast<int64_t>(a.dims.size()) == x.dim(), ShapeError,
                      "number of dims {} doesn't match the tensor's {} dims", a.dims.size(),
                      x.dim());
            Shape sizes;
            Strides strides;
            SmallVec<bool, kMaxDims> seen(static_cast<std::size_t>(x.dim()), false);
            for (int64_t d : a.dims) {
              int64_t n = normalize_dim(d, x.dim());
              ATH_CHECK(!seen[n], IndexError, "dim {} repeats in permutation", d);
              seen[n] = true;
              sizes.push_back(x.shape()[n]);
              strides.push_back(x.strides()[n]);
            }
            return make_view(x, sizes, strides, x.storage_offset());
          },
      .backward =
          [](BackwardContext& ctx, const PermuteAttrs& a) {
            int64_t nd = static_cast<int64_t>(a.dims.size());
            DimList inverse(a.dims.size());
            for (int64_t i = 0; i < nd; ++i) inverse[normalize_dim(a.dims[i], nd)] = i;
            ctx.set_grad_input(0, permute(ctx.grad_output(0), inverse));
          },
  });
  return op;
}

const Op<SliceAttrs>& op_slice() {
  static const auto& op = define_op<SliceAttrs>({
      .name = "slice",
      .kind = OpKind::View,
      .view =
          [](const Tensor& x, const SliceAttrs& a) {
            Shape sizes = x.shape();
            Strides strides = x.strides();
            int64_t len = a.end > a.start ? (a.end - a.start + a.step - 1) / a.step : 0;
            sizes[a.dim] = len;
            strides[a.dim] *= a.step;
            return make_view(x, sizes, strides, x.storage_offset() + a.start * x.strides()[a.dim]);
          },
      .backward =
          [](BackwardContext& ctx, const SliceAttrs& a) {
            const Shape& shape = ctx.input_meta(0).shape;
            Strides cs = contiguous_strides(shape);
            Shape size = shape;
            size[a.dim] = ctx.grad_output(0).shape()[a.dim];
            Strides st = cs;
            st[a.dim] *= a.step;
            ctx.set_grad_input(
                0, scatter_into_zeros(ctx.grad_output(0), shape, size, st, a.start * cs[a.dim]));
          },
  });
  return op;
}

const Op<SelectAttrs>& op_select() {
  static const auto& op = define_op<SelectAttrs>({
      .name = "select",
      .kind = OpKind::View,
      .view =
          [](const Tensor& x, const SelectAttrs& a) {
            Shape sizes = x.shape();
            Strides strides = x.strides();
            sizes.erase(sizes.begin() + a.dim);
            strides.erase(strides.begin() + a.dim);
            return make_view(x, sizes, strides, x.storage_offset() + a.index * x.strides()[a.dim]);
          },
      .backward =
          [](BackwardContext& ctx, const SelectAttrs& a) {
            const Shape& shape = ctx.input_meta(0).shape;
            Strides cs = contiguous_strides(shape);
            Shape size = shape;
            Strides st = cs;
            size.erase(size.begin() + a.dim);
            st.erase(st.begin() + a.dim);
            ctx.set_grad_input(
                0, scatter_into_zeros(ctx.grad_output(0), shape, size, st, a.index * cs[a.dim]));
          },
  });
  return op;
}

const Op<ShapeAttrs>& op_expand() {
  static const auto& op = define_op<ShapeAttrs>({
      .name = "expand",
      .kind = OpKind::View,
      .view =
          [](const Tensor& x, const ShapeAttrs& a) {
            const int64_t nd = static_cast<int64_t>(a.shape.size());
            ATH_CHECK(nd >= x.dim(), ShapeError,
                      "the number of sizes provided ({}) must be greater or equal to the number of "
                      "dimensions in the tensor ({})",
                      nd, x.dim());
            Shape sizes(a.shape.size());
            Strides strides(a.shape.size());
            for (int64_t i = nd - 1; i >= 0; --i) {
              int64_t xi = i - (nd - x.dim());
              int64_t want = a.shape[i];
              if (xi < 0) {
                ATH_CHECK(want >= 0, ShapeError,
                          "expand: size -1 not allowed in a new leading dim {}", i);
                sizes[i] = want;
                strides[i] = 0;
              } else {
                int64_t have = x.shape()[xi];
                if (want == -1) want = have;
                ATH_CHECK(
                    have == want || have == 1, ShapeError,
                    "the expanded size of the tensor ({}) must match the existing size ({}) at "
                    "non-singleton dimension {}; target sizes {}, tensor sizes {}",
                    want, have, i, to_string(a.shape), to_string(x.shape()));
                sizes[i] = want;
                strides[i] = have == want ? x.strides()[xi] : 0;
              }
            }
            return make_view(x, sizes, strides, x.storage_offset());
          },
      .backward =
          [](BackwardContext& ctx, const ShapeAttrs&) {
            ctx.set_grad_input(0, sum_to(ctx.grad_output(0), ctx.input_meta(0).shape));
          },
  });
  return op;
}

const Op<AsStridedAttrs>& op_as_strided() {
  static const auto& op = define_op<AsStridedAttrs>({
      .name = "as_strided",
      .kind = OpKind::View,
      .view =
          [](const Tensor& x, const AsStridedAttrs& a) {
            ATH_CHECK(a.size.size() == a.stride.size(), ShapeError,
                      "mismatch in length of size ({}) and stride ({})", a.size.size(),
                      a.stride.size());
            int64_t offset = x.storage_offset() + a.offset;
            ATH_CHECK(offset >= 0, IndexError, "negative storage offset {}", offset);
            int64_t max_index = offset;
            bool empty = false;
            for (std::size_t i = 0; i < a.size.size(); ++i) {
              ATH_CHECK(a.size[i] >= 0 && a.stride[i] >= 0, ShapeError,
                        "negative size or stride: size {}, stride {}", to_string(a.size),
                        to_string(a.stride));
              if (a.size[i] == 0)
                empty = true;
              else
                max_index += (a.size[i] - 1) * a.stride[i];
            }
            int64_t capacity = static_cast<int64_t>(x.impl()->storage->nbytes / x.element_size());
            ATH_CHECK(empty || max_index < capacity, IndexError,
                      "size {} with stride {} and offset {} reaches element {} of a storage of {} "
                      "elements",
                      to_string(a.size), to_string(a.stride), offset, max_index, capacity);
            return make_view(x, a.size, a.stride, offset);
          },
      .backward =
          [](BackwardContext& ctx, const AsStridedAttrs& a) {
            // Geometry relative to a contiguous input of the same shape; overlapping positions add.
            ctx.set_grad_input(0, scatter_into_zeros(ctx.grad_output(0), ctx.input_meta(0).shape,
                                                     a.size, a.stride, a.offset));
          },
  });
  return op;
}

const Op<ViewScatterAttrs>& op_view_scatter() {
  static const auto& op = define_op<ViewScatterAttrs>({
      .name = "view_scatter",
      .kind = OpKind::Opaque,
      .infer =
          [](TensorSpan in, const ViewScatterAttrs& a) {
            ATH_CHECK(in[0].shape() == a.size, ShapeError,
                      "grad shape {} doesn't match view size {}", to_string(in[0].shape()),
                      to_string(a.size));
            return OutputSpec{{{a.base_shape, in[0].dtype()}}, in[0].dtype()};
          },
      .backward =
          [](BackwardContext& ctx, const ViewScatterAttrs& a) {
            Tensor g = contiguous(ctx.grad_output(0));
            ctx.set_grad_input(0, as_strided(g, a.size, a.stride, a.offset));
          },
  });
  return op;
}

// View ops have no kernel, so no KernelRegistrar defines them while the library loads, as it
// does every other op; without this they would enter the registry on first call, and all_ops()
// would depend on what ran before.
namespace {
[[maybe_unused]] const bool g_view_ops_registered =
    (op_view(), op_permute(), op_slice(), op_select(), op_expand(), op_as_strided(),
     op_view_scatter(), true);
}  // namespace

// ---- public functions ----------------------------------------------------------------------

Tensor view(const Tensor& x, const Shape& shape) {
  return call1(op_view(), {x}, ShapeAttrs{.shape = shape});
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape s = infer_view_shape(shape, x.numel());
  if (view_strides(x.shape(), x.strides(), s)) return view(x, s);
  return view(clone(x), s);
}

Tensor permute(const Tensor& x, const DimList& dims) {
  return call1(op_permute(), {x}, PermuteAttrs{.dims = dims});
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  int64_t a = normalize_dim(d0, x.dim()), b = normalize_dim(d1, x.dim());
  if (x.dim() == 0) return x;
  DimList p(static_cast<std::size_t>(x.dim()));
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[a], p[b]);
  return permute(x, p);
}

Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
             int64_t step) {
  return with_op_context(op_slice(), [&] {
    ATH_CHECK(x.dim() > 0, IndexError, "slice: cannot slice a 0-dim tensor");
    ATH_CHECK(step > 0, ValueError, "slice: step must be positive, got {}", step);
    int64_t d = normalize_dim(dim, x.dim());
    int64_t n = x.shape()[d];
    auto clamp_index = [n](int64_t i) {
      if (i < 0) i += n;
      return std::clamp<int64_t>(i, 0, n);
    };
    int64_t s = clamp_index(start.value_or(0));
    int64_t e = clamp_index(end.value_or(n));
    return call1(op_slice(), {x},
                 SliceAttrs{.dim = d, .start = s, .end = std::max(e, s), .step = step});
  });
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  return with_op_context(op_slice(), [&] {
    ATH_CHECK(x.dim() > 0, IndexError, "narrow: cannot narrow a 0-dim tensor");
    int64_t d = normalize_dim(dim, x.dim());
    int64_t n = x.shape()[d];
    ATH_CHECK(start >= -n && start <= n, IndexError,
              "narrow: start {} out of range for dim {} of size {}", start, dim, n);
    if (start < 0) start += n;
    ATH_CHECK(length >= 0 && start + length <= n, IndexError,
              "narrow: start ({}) + length ({}) exceeds dimension size ({})", start, length, n);
    return call1(op_slice(), {x},
                 SliceAttrs{.dim = d, .start = start, .end = start + length, .step = 1});
  });
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  return with_op_context(op_select(), [&] {
    ATH_CHECK(x.dim() > 0, IndexError, "select: cannot select from a 0-dim tensor");
    int64_t d = normalize_dim(dim, x.dim());
    int64_t n = x.shape()[d];
    ATH_CHECK(index >= -n && index < n, IndexError,
              "select: index {} out of range for dimension {} of size {}", index, dim, n);
    return call1(op_select(), {x}, SelectAttrs{.dim = d, .index = index < 0 ? index + n : index});
  });
}

Tensor expand(const Tensor& x, const Shape& shape) {
  if (shape == x.shape()) return x;
  return call1(op_expand(), {x}, ShapeAttrs{.shape = shape});
}

Tensor squeeze(const Tensor& x) {
  Shape s;
  for (int64_t d : x.shape())
    if (d != 1) s.push_back(d);
  return view(x, s);
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  int64_t d = normalize_dim(dim, x.dim());
  if (x.dim() == 0 || x.shape()[d] != 1) return view(x, x.shape());
  Shape s = x.shape();
  s.erase(s.begin() + d);
  return view(x, s);
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  int64_t d = normalize_dim(dim, x.dim() + 1);
  Shape s = x.shape();
  s.insert(s.begin() + d, 1);
  return view(x, s);
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  if (x.dim() == 0) return reshape(x, {1});
  int64_t s = normalize_dim(start_dim, x.dim()), e = normalize_dim(end_dim, x.dim());
  ATH_CHECK(s <= e, IndexError, "flatten: start_dim {} comes after end_dim {}", start_dim, end_dim);
  Shape shape;
  for (int64_t d = 0; d < s; ++d) shape.push_back(x.shape()[d]);
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= x.shape()[d];
  shape.push_back(n);
  for (int64_t d = e + 1; d < x.dim(); ++d) shape.push_back(x.shape()[d]);
  return reshape(x, shape);
}

Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes) {
  int64_t d = normalize_dim(dim, x.dim());
  Shape inner = infer_view_shape(sizes, x.shape()[d]);
  Shape shape;
  for (int64_t i = 0; i < d; ++i) shape.push_back(x.shape()[i]);
  for (int64_t s : inner) shape.push_back(s);
  for (int64_t i = d + 1; i < x.dim(); ++i) shape.push_back(x.shape()[i]);
  return view(x, shape);
}

Tensor as_strided(const Tensor& x, const Shape& size, const Strides& stride,
                  std::optional<int64_t> storage_offset) {
  // storage_offset is absolute, as in PyTorch; the op stores it relative to x.
  int64_t rel = storage_offset ? *storage_offset - x.storage_offset() : 0;
  return call1(op_as_strided(), {x}, AsStridedAttrs{.size = size, .stride = stride, .offset = rel});
}

// ---- Tensor methods ------------------------------------------------------------------------

Tensor Tensor::view(const Shape& s) const { return ath::view(*this, s); }
Tensor Tensor::reshape(const Shape& s) const { return ath::reshape(*this, s); }
Tensor Tensor::permute(const DimList& d) const { return ath::permute(*this, d); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return ath::transpose(*this, a, b); }
Tensor Tensor::t() const {
  ATH_CHECK(dim() <= 2, ShapeError, "t() expects a tensor with <= 2 dimensions, got {}", dim());
  return dim() < 2 ? *this : ath::transpose(*this, 0, 1);
}
Tensor Tensor::mT() const {
  ATH_CHECK(dim() >= 2, ShapeError, "mT expects a tensor with >= 2 dimensions, got {}", dim());
  return ath::transpose(*this, -2, -1);
}
Tensor Tensor::narrow(int64_t d, int64_t s, int64_t l) const { return ath::narrow(*this, d, s, l); }
Tensor Tensor::slice(int64_t d, std::optional<int64_t> s, std::optional<int64_t> e,
                     int64_t st) const {
  return ath::slice(*this, d, s, e, st);
}
Tensor Tensor::select(int64_t d, int64_t i) const { return ath::select(*this, d, i); }
Tensor Tensor::expand(const Shape& s) const { return ath::expand(*this, s); }
Tensor Tensor::expand_as(const Tensor& o) const { return ath::expand(*this, o.shape()); }
Tensor Tensor::squeeze() const { return ath::squeeze(*this); }
Tensor Tensor::squeeze(int64_t d) const { return ath::squeeze(*this, d); }
Tensor Tensor::unsqueeze(int64_t d) const { return ath::unsqueeze(*this, d); }
Tensor Tensor::flatten(int64_t s, int64_t e) const { return ath::flatten(*this, s, e); }
Tensor Tensor::unflatten(int64_t d, const Shape& s) const { return ath::unflatten(*this, d, s); }
Tensor Tensor::as_strided(const Shape& s, const Strides& st, std::optional<int64_t> o) const {
  return ath::as_strided(*this, s, st, o);
}

}  // namespace ath
