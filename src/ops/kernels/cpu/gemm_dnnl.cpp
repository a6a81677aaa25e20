// The oneDNN matrix product (float32, bfloat16): see gemm.h for the contract.
//
// Operands go to oneDNN with their own strides, so a transposed right operand (w.t() in
// linear, b.t() in a backward pass) costs nothing; batch dims broadcast as size-1 dims
// (oneDNN's own broadcasting: a stride-0 dim would send it to its reference kernel). Copied
// first: a column-major left operand (oneDNN's brgemm then splits K across threads, so the
// sums would depend on the thread count; the copy is O(M K) next to O(M N K)), a matrix that
// is neither row- nor column-major, and any layout for which oneDNN does not pick its brgemm
// kernel. With row-major left operands brgemm splits only M and N across threads, so every
// output element sums over K in one fixed order. Primitives are cached (dnnl_utils.h).
//
// Bias: with alpha == beta == 1 it is oneDNN's bias argument (fused, no extra pass);
// otherwise c is prefilled with the broadcast bias and the primitive computes
// alpha * a @ b + beta * c through an output scale and a sum post-op.
#include <cstring>
#include <optional>

#include "athanor/ops/copy.h"
#include "athanor/ops/pointwise.h"
#include "athanor/tensor/grad_mode.h"
#include "dnnl_utils.h"
#include "gemm.h"

namespace ath::kernels {

namespace {

struct Layout {
  Shape sizes;
  Strides strides;
};

// Fills the strides of size-1 dims so the layout reads as dense to oneDNN's format checks.
void tidy_unit_dims(Layout& l, std::size_t first, std::size_t last) {
  int64_t outer = 1;
  for (std::size_t d = 0; d < l.sizes.size(); ++d)
    if (l.sizes[d] != 1) outer = std::max(outer, l.strides[d] * l.sizes[d]);
  for (std::size_t d = first; d < last; ++d)
    if (l.sizes[d] == 1) l.strides[d] = outer;
}

// t's layout in nd dims (batch right-aligned), or nullopt when its matrix dims need a copy.
// The left operand must be row-major: oneDNN splits K across threads for a column-major one,
// which makes the result depend on the thread count.
std::optional<Layout> operand_layout(const Tensor& t, std::size_t nd, bool allow_col_major) {
  Layout l{Shape(nd, 1), Strides(nd, 0)};
  const std::size_t off = nd - static_cast<std::size_t>(t.dim());
  for (std::size_t d = 0; d < static_cast<std::size_t>(t.dim()); ++d) {
    l.sizes[off + d] = t.shape()[d];
    l.strides[off + d] = t.strides()[d];
  }
  for (std::size_t d = 0; d + 2 < nd; ++d)
    if (l.strides[d] == 0) l.sizes[d] = 1;  // an expanded batch dim: let oneDNN broadcast it
  int64_t& sr = l.strides[nd - 2];
  int64_t& sc = l.strides[nd - 1];
  const int64_t rows = l.sizes[nd - 2], cols = l.sizes[nd - 1];
  const bool row_major = (cols == 1 || sc == 1) && (rows == 1 || sr >= cols);
  const bool col_major = allow_col_major && (rows == 1 || sr == 1) && (cols == 1 || sc >= rows);
  if (row_major) {
    if (cols == 1) sc = 1;
    if (rows == 1) sr = cols;
  } else if (col_major) {
    if (rows == 1) sr = 1;
    if (cols == 1) sc = rows;
  } else {
    return std::nullopt;
  }
  tidy_unit_dims(l, 0, nd - 2);
  return l;
}

Layout bias_layout(const Tensor& bias, const Shape& c_shape) {
  const std::size_t nd = c_shape.size();
  Layout l{Shape(nd, 1), Strides(nd, 0)};
  const std::size_t off = nd - static_cast<std::size_t>(bias.dim());
  for (std::size_t d = 0; d < static_cast<std::size_t>(bias.dim()); ++d) {
    const bool broadcast = bias.shape()[d] == 1 || bias.strides()[d] == 0;
    l.sizes[off + d] = broadcast ? 1 : c_shape[off + d];
    l.strides[off + d] = broadcast ? 0 : bias.strides()[d];
  }
  tidy_unit_dims(l, 0, nd);
  return l;
}

enum class BiasMode : int64_t { None, Fused, Prefilled };

struct MatmulEntry : CachedPrimitive {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c, bias;
  dnnl::memory::desc scratchpad;   // user-managed: allocated per call from athanor's allocator
  BiasMode mode = BiasMode::None;  // how this primitive takes the bias (see the file comment)
  bool brgemm = false;             // oneDNN's fast kernel (else ref or gemm:jit, see gemm_dnnl)
};

void build(MatmulEntry& e, DType t, BiasMode mode, const Layout* bias, double alpha, double beta) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha != 1.0) attr.set_output_scales(0, {static_cast<float>(alpha)});
  if (mode == BiasMode::Prefilled) {
    dnnl::post_ops ops;
    ops.append_sum(static_cast<float>(beta));
    attr.set_post_ops(ops);
  }
  try {
    dnnl::matmul::primitive_desc pd;
    if (mode == BiasMode::Fused) {
      e.bias = strided_md(bias->sizes, bias->strides, t);
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(e.a, e.b, e.bias, e.c), attr,
                                        cpu_engine());
    } else {
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(e.a, e.b, e.c), attr, cpu_engine());
    }
    e.mode = mode;
    e.brgemm = std::strncmp(pd.impl_info_str(), "brg", 3) == 0;
    e.scratchpad = pd.scratchpad_desc();
    e.prim = dnnl::matmul(pd);
  } catch (const dnnl::error& err) {
    throw_dnnl_error(err, "matrix product");
  }
}

std::shared_ptr<const MatmulEntry> get_primitive(DType t, const Layout& a, const Layout& b,
                                                 const Shape& c_shape, const Layout* bias,
                                                 BiasMode mode, double alpha, double beta) {
  PrimitiveKey key(PrimKind::Matmul);
  key.add(t).add(a.sizes).add(a.strides).add(b.sizes).add(b.strides).add(c_shape);
  key.add(static_cast<int64_t>(mode)).add(alpha).add(beta);
  if (bias != nullptr) key.add(bias->sizes).add(bias->strides);
  return cached_primitive<MatmulEntry>(key, [&] {
    auto e = std::make_shared<MatmulEntry>();
    e->a = strided_md(a.sizes, a.strides, t);
    e->b = strided_md(b.sizes, b.strides, t);
    e->c = strided_md(c_shape, contiguous_strides(c_shape), t);
    build(*e, t, mode, bias, alpha, beta);
    // oneDNN's fast kernels take a per-column bias only; for others a prefilled output and a
    // sum post-op beat its reference kernel by orders of magnitude.
    if (!e->brgemm && mode == BiasMode::Fused) build(*e, t, BiasMode::Prefilled, bias, alpha, 1.0);
    return e;
  });
}

}  // namespace

void gemm_dnnl(const GemmArgs& g) {
  const Shape& cs = g.c.shape();
  const std::size_t nd = cs.size();
  const DType t = g.c.dtype();
  NoGradGuard no_grad;  // scratch copies and prefills are not part of any graph
  const double beta = g.bias.defined() ? g.beta : 0.0;
  if (g.a.shape()[g.a.dim() - 1] == 0) {  // empty sum: c = beta * bias
    if (beta == 0) {
      Tensor(g.c).zero_();
    } else {
      Tensor(g.c).copy_(g.bias);
      if (beta != 1) Tensor(g.c).mul_(beta);
    }
    return;
  }
  Tensor a = g.a, b = g.b;
  std::optional<Layout> la = operand_layout(a, nd, false), lb = operand_layout(b, nd, true);
  if (!la) la = operand_layout(a = a.contiguous(), nd, false);
  if (!lb) lb = operand_layout(b = b.contiguous(), nd, true);
  BiasMode mode = beta == 0                     ? BiasMode::None
                  : (g.alpha == 1 && beta == 1) ? BiasMode::Fused
                                                : BiasMode::Prefilled;
  std::optional<Layout> lbias;
  if (mode == BiasMode::Fused) lbias = bias_layout(g.bias, cs);
  auto entry = get_primitive(t, *la, *lb, cs, lbias ? &*lbias : nullptr, mode, g.alpha,
                             mode == BiasMode::Prefilled ? beta : 0.0);
  if (!entry->brgemm && !(a.is_contiguous() && b.is_contiguous())) {
    // Padded rows or permuted batches send oneDNN to its reference or gemm:jit kernels,
    // which are slower and split K across threads: dense copies avoid both.
    GemmArgs dense = g;
    dense.a = a.contiguous();
    dense.b = b.contiguous();
    if (g.bias.defined()) dense.bias = g.bias.contiguous();
    gemm_dnnl(dense);
    return;
  }
  if (entry->mode == BiasMode::Prefilled) Tensor(g.c).copy_(g.bias);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, make_memory(entry->a, a.data_ptr())},
      {DNNL_ARG_WEIGHTS, make_memory(entry->b, b.data_ptr())},
      {DNNL_ARG_DST, make_memory(entry->c, g.c.data_ptr())}};
  if (entry->mode == BiasMode::Fused)
    args.emplace(DNNL_ARG_BIAS, make_memory(entry->bias, g.bias.data_ptr()));
  Tensor scratch;
  if (entry->scratchpad.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad_memory(entry->scratchpad, scratch));
  }
  dnnl::stream& s = cpu_stream();
  entry->prim.execute(s, args);
  s.wait();
}

void gemm(const GemmArgs& args) {
  if (args.c.numel() == 0) return;
  GemmArgs g = args;
  if (g.beta == 0) g.bias = Tensor();  // beta 0 ignores bias, NaN included (as PyTorch)
  const DType t = g.c.dtype();
  if (t == kFloat32 || t == kBFloat16) return gemm_dnnl(g);
  if (t == kFloat64) return gemm_blocked(g);
  ATH_CHECK(t == kFloat16, NotImplementedError, "matrix products take floating dtypes, not {}",
            dtype_name(t));
  NoGradGuard no_grad;
  GemmArgs f = g;  // float16: compute in float32, round once
  f.a = g.a.to(kFloat32);
  f.b = g.b.to(kFloat32);
  if (g.bias.defined()) f.bias = g.bias.to(kFloat32);
  f.c = empty(g.c.shape(), kFloat32);
  gemm_dnnl(f);
  Tensor(g.c).copy_(f.c);
}

}  // namespace ath::kernels
