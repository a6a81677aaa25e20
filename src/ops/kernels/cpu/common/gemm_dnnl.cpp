// The oneDNN matrix product (float32, bfloat16): see gemm.h for the contract.
//
// Operands go to oneDNN with their own strides, so a transposed right operand (w.t() in
// linear, b.t() in a backward pass) costs nothing; batch dims broadcast as size-1 dims
// (oneDNN's own broadcasting: a stride-0 dim would send it to its reference kernel). Copied
// first: a matrix that is neither row- nor column-major, and any layout for which oneDNN does
// not pick its brgemm kernel. With row-major left operands brgemm splits only M and N across
// threads, so every output element sums over K in one fixed order. Primitives are cached
// (dnnl_utils.h).
//
// A column-major left operand (the weight gradient's g.t() @ x, x.t() @ g) would make brgemm
// split K across threads, so the sums would depend on the thread count. It runs as the fixed
// blocks below instead, each a single-threaded call that reads the transposed operand in
// place: for x.t() @ g at W4's shapes (K = 2048 rows, M x N = 128 x 128-512) 319-350 GFLOP/s
// against 242-285 for a transposed copy and a two-thread brgemm (AVX-512 host; on AVX2, where
// the copy's product ran as blocks already, both 155-169).
//
// Where oneDNN has no brgemm kernel (AVX2 hosts, where it picks gemm:jit; odd layouts) its
// GEMM splits K across threads whenever M and N are small next to K, and the sums then depend
// on the thread count. There the output is cut into blocks of batches, rows or columns whose
// size follows from the shape alone, and each block is one single-threaded
// oneDNN call; the blocks run in parallel. Every element is then summed in the same order
// whatever the thread count (see fixed_split()).
//
// Bias: with alpha == beta == 1 it is oneDNN's bias argument (fused, no extra pass);
// otherwise c is prefilled with the broadcast bias and the primitive computes
// alpha * a @ b + beta * c through an output scale and a sum post-op.
#include <algorithm>
#include <cstring>
#include <optional>

#include "athanor/core/parallel.h"
#include "athanor/ops/activations.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/pointwise.h"
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

// t's layout in nd dims (batch right-aligned), or nullopt when its matrix dims need a copy:
// row-major or column-major matrices keep their strides.
std::optional<Layout> operand_layout(const Tensor& t, std::size_t nd) {
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
  const bool col_major = (rows == 1 || sr == 1) && (cols == 1 || sc >= rows);
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

// The fixed partition of the output for the non-brgemm path, into `count` blocks of `block`
// along one dim (the last block may be shorter): the outermost batch dim when there is a batch
// (whole matrices per call, nothing packed twice), else rows (dim nd-2) or, for an output wider
// than tall, columns (nd-1). Everything here follows from the shape, never from the thread
// count. Products under kBlockWork multiply-adds stay one block (a single-threaded call is as
// fast as two threads there); larger ones get 2 blocks, 4 when blocks keep >= kMinExtent rows
// (columns). Blocks must be large: each single-threaded oneDNN call packs the whole other
// operand again, and 128-row blocks of a 1024^3 product halved the rate (43 vs 85 GFLOP/s on
// one thread); 512-row blocks of W4's 2048x128x512 ran 25% under 1024-row ones.
struct Split {
  std::size_t dim = 0;
  int64_t block = 0, count = 0;
};
constexpr double kBlockWork = 1 << 20;
constexpr int64_t kMinExtent = 1024;

Split fixed_split(const Shape& cs, int64_t k) {
  const std::size_t nd = cs.size();
  const std::size_t dim = nd > 2 && cs[0] > 1 ? 0 : cs[nd - 2] >= cs[nd - 1] ? nd - 2 : nd - 1;
  const int64_t extent = cs[dim];
  const double work = static_cast<double>(numel(cs)) * static_cast<double>(k);
  int64_t count = work < kBlockWork ? 1 : extent >= 4 * kMinExtent ? 4 : 2;
  int64_t block = (extent + count - 1) / count;
  if (dim != 0) block = std::min(extent, (block + 7) / 8 * 8);  // whole vectors of rows/columns
  count = (extent + block - 1) / block;
  return {dim, block, count};
}

// Which operands a split along `dim` cuts: rows cut a, columns cut b, a batch dim cuts each
// operand that is not broadcast along it (size 1 there).
bool splits(const Layout& l, std::size_t dim, std::size_t nd, bool is_a) {
  if (dim == nd - 2) return is_a;
  if (dim == nd - 1) return !is_a;
  return l.sizes[dim] != 1;
}

struct MatmulEntry;

// A non-brgemm product as fixed blocks: single-threaded primitives for a full block and the
// last one, which take a bias by a prefilled output (mode None or Prefilled).
struct Blocks {
  Split split;
  std::shared_ptr<const MatmulEntry> full, tail;
};

struct MatmulEntry : CachedPrimitive {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c, bias;
  dnnl::memory::desc scratchpad;   // user-managed: allocated per call from athanor's allocator
  BiasMode mode = BiasMode::None;  // how this primitive takes the bias (see the file comment)
  bool brgemm = false;             // oneDNN's fast kernel (else ref or gemm:jit, see gemm_dnnl)
  std::optional<Blocks> blocks;    // set when !brgemm: how gemm_dnnl runs it
};

void build(MatmulEntry& e, DType t, BiasMode mode, const Layout* bias, double alpha, double beta,
           bool relu) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha != 1.0) attr.set_output_scales(0, {static_cast<float>(alpha)});
  dnnl::post_ops ops;
  if (mode == BiasMode::Prefilled) ops.append_sum(static_cast<float>(beta));
  if (relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  if (ops.len() > 0) attr.set_post_ops(ops);
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

// One primitive for a @ b -> c (c_shape with c_strides: contiguous, or one block of a larger
// output).
std::shared_ptr<MatmulEntry> make_entry(DType t, const Layout& a, const Layout& b,
                                        const Shape& c_shape, const Strides& c_strides,
                                        const Layout* bias, BiasMode mode, double alpha,
                                        double beta, bool relu) {
  auto e = std::make_shared<MatmulEntry>();
  e->a = strided_md(a.sizes, a.strides, t);
  e->b = strided_md(b.sizes, b.strides, t);
  e->c = strided_md(c_shape, c_strides, t);
  build(*e, t, mode, bias, alpha, beta, relu);
  // oneDNN's fast kernels take a per-column bias only; for others a prefilled output and a
  // sum post-op beat its reference kernel by orders of magnitude.
  if (!e->brgemm && mode == BiasMode::Fused)
    build(*e, t, BiasMode::Prefilled, bias, alpha, 1.0, relu);
  return e;
}

Blocks make_blocks(DType t, const Layout& a, const Layout& b, const Shape& cs, BiasMode mode,
                   double alpha, double beta, bool relu) {
  const std::size_t nd = cs.size();
  Blocks blocks{.split = fixed_split(cs, a.sizes[nd - 1])};
  const Split& split = blocks.split;
  const BiasMode block_mode = mode == BiasMode::None ? BiasMode::None : BiasMode::Prefilled;
  const double block_beta = mode == BiasMode::Fused ? 1.0 : beta;
  SingleThreadBuild one_thread;
  auto entry_for = [&](int64_t extent) {
    Layout sa = a, sb = b;
    Shape sc = cs;
    sc[split.dim] = extent;
    if (splits(a, split.dim, nd, true)) sa.sizes[split.dim] = extent;
    if (splits(b, split.dim, nd, false)) sb.sizes[split.dim] = extent;
    return make_entry(t, sa, sb, sc, contiguous_strides(cs), nullptr, block_mode, alpha, block_beta,
                      relu);
  };
  blocks.full = entry_for(split.block);
  const int64_t tail = cs[split.dim] - (split.count - 1) * split.block;
  blocks.tail = tail == split.block ? blocks.full : entry_for(tail);
  return blocks;
}

// A column-major left operand, one that is not a single row (the layout operand_layout gave).
bool is_col_major(const Layout& l) {
  const std::size_t nd = l.sizes.size();
  return l.sizes[nd - 2] > 1 && l.strides[nd - 2] == 1 && l.sizes[nd - 1] > 1;
}

std::shared_ptr<const MatmulEntry> get_primitive(DType t, const Layout& a, const Layout& b,
                                                 const Shape& c_shape, const Layout* bias,
                                                 BiasMode mode, double alpha, double beta,
                                                 bool relu) {
  PrimitiveKey key(PrimKind::Matmul);
  key.add(t).add(a.sizes).add(a.strides).add(b.sizes).add(b.strides).add(c_shape);
  key.add(static_cast<int64_t>(mode)).add(alpha).add(beta).add(static_cast<int64_t>(relu));
  if (bias != nullptr) key.add(bias->sizes).add(bias->strides);
  return cached_primitive<MatmulEntry>(key, [&] {
    auto e =
        make_entry(t, a, b, c_shape, contiguous_strides(c_shape), bias, mode, alpha, beta, relu);
    if (!e->brgemm || is_col_major(a))
      e->blocks = make_blocks(t, a, b, c_shape, mode, alpha, beta, relu);
    return e;
  });
}

// Runs one primitive on a, b, c (and a fused bias).
void execute(const MatmulEntry& e, const void* a, const void* b, void* c, const void* bias) {
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, make_memory(e.a, a)},
                                             {DNNL_ARG_WEIGHTS, make_memory(e.b, b)},
                                             {DNNL_ARG_DST, make_memory(e.c, c)}};
  if (e.mode == BiasMode::Fused) args.emplace(DNNL_ARG_BIAS, make_memory(e.bias, bias));
  Tensor scratch;
  if (e.scratchpad.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad_memory(e.scratchpad, scratch));
  }
  dnnl::stream& s = cpu_stream();
  e.prim.execute(s, args);
  s.wait();
}

// c = alpha * a @ b (+ beta * bias) as the entry's fixed blocks of single-threaded oneDNN
// calls, run in parallel (see the file comment); la, lb are a's and b's layouts.
void run_blocks(const Blocks& blocks, const GemmArgs& g, const Tensor& a, const Tensor& b,
                const Layout& la, const Layout& lb) {
  const std::size_t nd = g.c.shape().size();
  const Split& split = blocks.split;
  if (blocks.full->mode == BiasMode::Prefilled) Tensor(g.c).copy_(g.bias);
  const int64_t a_step = splits(la, split.dim, nd, true) ? la.strides[split.dim] : 0;
  const int64_t b_step = splits(lb, split.dim, nd, false) ? lb.strides[split.dim] : 0;
  const int64_t c_step = contiguous_strides(g.c.shape())[split.dim];
  const std::size_t esize = g.c.element_size();
  const auto* ap = static_cast<const char*>(a.data_ptr());
  const auto* bp = static_cast<const char*>(b.data_ptr());
  auto* cp = static_cast<char*>(g.c.data_ptr());
  parallel_for(0, split.count, 1, [&](int64_t begin, int64_t end) {
    SingleThreadBuild one_thread;  // oneDNN reads the thread count at run time too
    for (int64_t i = begin; i < end; ++i) {
      const auto off = static_cast<std::size_t>(i * split.block);
      const MatmulEntry& e = i + 1 == split.count ? *blocks.tail : *blocks.full;
      execute(e, ap + off * static_cast<std::size_t>(a_step) * esize,
              bp + off * static_cast<std::size_t>(b_step) * esize,
              cp + off * static_cast<std::size_t>(c_step) * esize, nullptr);
    }
  });
}

}  // namespace

void gemm_dnnl(const GemmArgs& g) {
  const Shape& cs = g.c.shape();
  const std::size_t nd = cs.size();
  const DType t = g.c.dtype();
  const double beta = g.bias.defined() ? g.beta : 0.0;
  if (g.a.shape()[g.a.dim() - 1] == 0) {  // empty sum: c = beta * bias
    if (beta == 0) {
      Tensor(g.c).zero_();
    } else {
      Tensor(g.c).copy_(g.bias);
      if (beta != 1) Tensor(g.c).mul_(beta);
      if (g.relu) Tensor(g.c).copy_(ath::relu(g.c));
    }
    return;
  }
  Tensor a = g.a, b = g.b;
  std::optional<Layout> la = operand_layout(a, nd), lb = operand_layout(b, nd);
  if (!la) la = operand_layout(a = a.contiguous(), nd);
  if (!lb) lb = operand_layout(b = b.contiguous(), nd);
  const bool batched = std::any_of(cs.begin(), cs.end() - 2, [](int64_t d) { return d > 1; });
  // Batched, a column-major left operand is still copied: its batch strides may be permuted,
  // which sends a single-threaded oneDNN call to its reference kernel.
  if (batched && is_col_major(*la)) la = operand_layout(a = a.contiguous(), nd);
  BiasMode mode = beta == 0                     ? BiasMode::None
                  : (g.alpha == 1 && beta == 1) ? BiasMode::Fused
                                                : BiasMode::Prefilled;
  std::optional<Layout> lbias;
  if (mode == BiasMode::Fused) lbias = bias_layout(g.bias, cs);
  auto entry = get_primitive(t, *la, *lb, cs, lbias ? &*lbias : nullptr, mode, g.alpha,
                             mode == BiasMode::Prefilled ? beta : 0.0, g.relu);
  if (!entry->brgemm && !is_col_major(*la) && !(a.is_contiguous() && b.is_contiguous())) {
    // Padded rows or permuted batches send oneDNN to its reference or gemm:jit kernels,
    // which are slower and split K across threads: dense copies avoid both.
    GemmArgs dense = g;
    dense.a = a.contiguous();
    dense.b = b.contiguous();
    if (g.bias.defined()) dense.bias = g.bias.contiguous();
    gemm_dnnl(dense);
    return;
  }
  if (entry->blocks) return run_blocks(*entry->blocks, g, a, b, *la, *lb);
  if (entry->mode == BiasMode::Prefilled) Tensor(g.c).copy_(g.bias);
  execute(*entry, a.data_ptr(), b.data_ptr(), g.c.data_ptr(),
          g.bias.defined() ? g.bias.data_ptr() : nullptr);
}

void gemm(const GemmArgs& args) {
  if (args.c.numel() == 0) return;
  GemmArgs g = args;
  if (g.beta == 0) g.bias = Tensor();  // beta 0 ignores bias, NaN included (as PyTorch)
  const DType t = g.c.dtype();
  if (dnnl_supports(t)) return gemm_dnnl(g);
  if (t == kFloat64) {
    gemm_blocked(g);
    if (g.relu) Tensor(g.c).copy_(ath::relu(g.c));  // the float64 reference path: a second pass
    return;
  }
  ATH_CHECK(t == kFloat16 || t == kBFloat16, NotImplementedError,
            "matrix products take floating dtypes, not {}", dtype_name(t));
  // float16, and bfloat16 where oneDNN has no kernel for it (AVX2 hosts): compute in float32
  // and round once, the contract oneDNN's own bfloat16 kernels keep (float32 accumulation).
  GemmArgs f = g;
  f.a = g.a.to(kFloat32);
  f.b = g.b.to(kFloat32);
  if (g.bias.defined()) f.bias = g.bias.to(kFloat32);
  f.c = empty(g.c.shape(), kFloat32);
  gemm_dnnl(f);
  Tensor(g.c).copy_(f.c);
}

}  // namespace ath::kernels
