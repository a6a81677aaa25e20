// oneDNN convolutions (float32, bfloat16): see conv_kernels.h for the contract.
//
// Tensors stay in plain NCHW / OIHW memory. Each primitive either reads that memory directly
// (ConvLayout::Plain: oneDNN's im2col + GEMM kernels) or lets oneDNN pick its blocked formats
// (ConvLayout::Blocked: its direct JIT kernels) with reorders in and out around it; both the
// primitive and its reorders are built once per geometry and cached (dnnl_utils.h). Which one
// is faster depends on the shape: see conv_layout() and bench/bench_conv.cpp.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "athanor/core/parallel.h"
#include "athanor/ops/creation.h"
#include "common/dnnl_utils.h"
#include "conv_kernels.h"

namespace ath::kernels {

namespace {

using dnnl::memory;
using tag = memory::format_tag;

enum class ConvLayout : int64_t { Plain, Blocked };

// Batch chunks of the weight gradient (fixed, so results do not depend on the thread count).
constexpr int64_t kWeightGradChunks = 8;

// ATH_CONV_LAYOUT=plain|blocked overrides the choice (for benchmarking).
std::optional<ConvLayout> layout_override() {
  static const std::optional<ConvLayout> v = []() -> std::optional<ConvLayout> {
    const char* e = std::getenv("ATH_CONV_LAYOUT");
    if (e == nullptr) return std::nullopt;
    if (std::strcmp(e, "plain") == 0) return ConvLayout::Plain;
    if (std::strcmp(e, "blocked") == 0) return ConvLayout::Blocked;
    return std::nullopt;
  }();
  return v;
}

// Blocked formats pad channels to multiples of 16: an output (forward) or input gradient
// (backward data) with only a few channels per group would be mostly padding, and oneDNN's
// im2col path on plain memory wins by 5-8x there (W2's first layer: 1 input channel). Elsewhere
// the blocked direct kernels win (W2's second layer: ~1.5x over plain, all three passes).
ConvLayout conv_layout(PrimKind kind, const ConvGeometry& g) {
  if (auto o = layout_override()) return *o;
  const int64_t produced = kind == PrimKind::ConvFwd       ? g.o / g.attrs.groups
                           : kind == PrimKind::ConvBwdData ? g.c / g.attrs.groups
                                                           : 16;
  return produced < 8 ? ConvLayout::Plain : ConvLayout::Blocked;
}

// oneDNN's geometry check: (src + pad_l + pad_r - range) / stride + 1 == dst with pad_r >
// -stride. Any pad_r in [exact, exact + stride - 1] describes the same convolution; a
// transposed convolution's pad_r absorbs its output_padding and may fall below -stride, then
// the largest value in the range is taken (nullopt: oneDNN cannot express it).
std::optional<memory::dims> dnnl_pad_r(const ConvGeometry& g) {
  memory::dims r(2);
  const int64_t k[2] = {g.kh, g.kw}, in[2] = {g.h, g.w}, out[2] = {g.oh, g.ow};
  const ConvAttrs& a = g.attrs;
  for (std::size_t i = 0; i < 2; ++i) {
    const int64_t range = a.dilation[i] * (k[i] - 1) + 1;
    const int64_t exact = (out[i] - 1) * a.stride[i] + range - in[i] - a.pad_l[i];
    int64_t pr = a.pad_r[i];
    if (pr < exact || pr > exact + a.stride[i] - 1 || pr + a.stride[i] <= 0)
      pr = exact + a.stride[i] - 1;
    if (pr + a.stride[i] <= 0) return std::nullopt;
    r[i] = pr;
  }
  return r;
}

struct Arg {
  int id = 0;
  memory::desc user, prim;
  bool output = false;
  std::optional<dnnl::reorder> reorder;  // user <-> prim when the formats differ
};

struct ConvEntry : CachedPrimitive {
  dnnl::primitive prim;
  memory::desc scratchpad;  // user-managed: allocated per run from athanor's allocator
  std::vector<Arg> args;
};

memory::desc plain_md(const memory::dims& d, DType t) {
  static const tag tags[] = {tag::undef, tag::x, tag::nc, tag::ncw, tag::nchw, tag::goihw};
  return memory::desc(d, dnnl_type(t), tags[d.size()]);
}

Arg make_arg(int id, const memory::desc& user, const memory::desc& prim, bool output) {
  Arg a{.id = id, .user = user, .prim = prim, .output = output};
  if (user != prim) {
    a.reorder =
        output
            ? dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), prim, cpu_engine(), user))
            : dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), user, cpu_engine(), prim));
  }
  return a;
}

// single_thread: built for one thread, to run inside athanor's own parallel loop; its weight
// and bias gradients are float32 (partial sums to be reduced).
std::shared_ptr<const ConvEntry> get_entry(PrimKind kind, const ConvGeometry& g, DType t,
                                           bool with_bias, const memory::dims& pad_r,
                                           bool single_thread = false) {
  const ConvLayout layout = conv_layout(kind, g);
  const ConvAttrs& a = g.attrs;
  PrimitiveKey key(kind, single_thread ? 1 : 0);
  key.add(t).add(g.n).add(g.c).add(g.h).add(g.w).add(g.o).add(g.kh).add(g.kw).add(g.oh).add(g.ow);
  for (int i = 0; i < 2; ++i) key.add(a.stride[i]).add(a.pad_l[i]).add(pad_r[i]).add(a.dilation[i]);
  key.add(a.groups).add(static_cast<int64_t>(with_bias)).add(static_cast<int64_t>(layout));
  const bool relu = kind == PrimKind::ConvFwd && g.relu;
  key.add(static_cast<int64_t>(relu));
  return cached_primitive<ConvEntry>(key, [&] {
    std::optional<SingleThreadBuild> one_thread;
    if (single_thread) one_thread.emplace();
    const int64_t grp = a.groups;
    const memory::dims src_d{g.n, g.c, g.h, g.w}, dst_d{g.n, g.o, g.oh, g.ow}, bias_d{g.o};
    const memory::dims wei_d = grp == 1 ? memory::dims{g.o, g.c, g.kh, g.kw}
                                        : memory::dims{grp, g.o / grp, g.c / grp, g.kh, g.kw};
    const memory::desc src = plain_md(src_d, t), dst = plain_md(dst_d, t),
                       bias = plain_md(bias_d, t);
    const memory::desc wei = grp == 1 ? memory::desc(wei_d, dnnl_type(t), tag::oihw)
                                      : memory::desc(wei_d, dnnl_type(t), tag::goihw);
    auto any = [&](const memory::desc& md) {
      return layout == ConvLayout::Blocked ? memory::desc(md.dims(), md.data_type(), tag::any) : md;
    };
    const memory::dims strides{a.stride[0], a.stride[1]};
    const memory::dims dil{a.dilation[0] - 1, a.dilation[1] - 1};
    const memory::dims pad_l{a.pad_l[0], a.pad_l[1]};
    const auto algo = dnnl::algorithm::convolution_direct;
    auto e = std::make_shared<ConvEntry>();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::primitive_attr fwd_attr = attr;  // the backward primitives' hint has no epilogue
    if (relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      fwd_attr.set_post_ops(ops);
    }
    try {
      auto fwd_desc =
          with_bias
              ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, any(src),
                                                any(wei), bias, any(dst), strides, dil, pad_l,
                                                pad_r)
              : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, any(src),
                                                any(wei), any(dst), strides, dil, pad_l, pad_r);
      dnnl::convolution_forward::primitive_desc fwd(fwd_desc, fwd_attr, cpu_engine());
      if (kind == PrimKind::ConvFwd) {
        e->prim = dnnl::convolution_forward(fwd);
        e->scratchpad = fwd.scratchpad_desc();
        e->args = {make_arg(DNNL_ARG_SRC, src, fwd.src_desc(), false),
                   make_arg(DNNL_ARG_WEIGHTS, wei, fwd.weights_desc(), false),
                   make_arg(DNNL_ARG_DST, dst, fwd.dst_desc(), true)};
        if (with_bias) e->args.push_back(make_arg(DNNL_ARG_BIAS, bias, bias, false));
      } else if (kind == PrimKind::ConvBwdData) {
        dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(algo, any(src), any(wei), any(dst), strides, dil,
                                                  pad_l, pad_r),
            attr, cpu_engine(), fwd);
        e->prim = dnnl::convolution_backward_data(pd);
        e->scratchpad = pd.scratchpad_desc();
        e->args = {make_arg(DNNL_ARG_DIFF_DST, dst, pd.diff_dst_desc(), false),
                   make_arg(DNNL_ARG_WEIGHTS, wei, pd.weights_desc(), false),
                   make_arg(DNNL_ARG_DIFF_SRC, src, pd.diff_src_desc(), true)};
      } else {
        const auto f32 = memory::data_type::f32;
        const memory::desc dwei(wei_d, f32, grp == 1 ? tag::oihw : tag::goihw);
        const memory::desc dbias(bias_d, f32, tag::x);
        auto desc =
            with_bias ? dnnl::convolution_backward_weights::desc(
                            algo, any(src), any(dwei), dbias, any(dst), strides, dil, pad_l, pad_r)
                      : dnnl::convolution_backward_weights::desc(
                            algo, any(src), any(dwei), any(dst), strides, dil, pad_l, pad_r);
        dnnl::convolution_backward_weights::primitive_desc pd(desc, attr, cpu_engine(), fwd);
        e->prim = dnnl::convolution_backward_weights(pd);
        e->scratchpad = pd.scratchpad_desc();
        e->args = {make_arg(DNNL_ARG_SRC, src, pd.src_desc(), false),
                   make_arg(DNNL_ARG_DIFF_DST, dst, pd.diff_dst_desc(), false),
                   make_arg(DNNL_ARG_DIFF_WEIGHTS, dwei, pd.diff_weights_desc(), true)};
        if (with_bias) e->args.push_back(make_arg(DNNL_ARG_DIFF_BIAS, dbias, dbias, true));
      }
    } catch (const dnnl::error& err) {
      throw_dnnl_error(err, "convolution");
    }
    return e;
  });
}

// Runs the entry on user buffers (ptrs in the entry's argument order), staging arguments
// whose primitive format differs through scratch buffers from the caching allocator.
void run(const ConvEntry& e, std::initializer_list<const void*> ptrs) {
  dnnl::stream& s = cpu_stream();
  std::unordered_map<int, memory> args;
  std::vector<std::pair<memory, memory>> outputs;  // (staged, user) to reorder after
  std::vector<Tensor> scratch;
  auto p = ptrs.begin();
  for (const Arg& a : e.args) {
    memory user = make_memory(a.user, *p++);
    if (!a.reorder) {
      args.emplace(a.id, user);
      continue;
    }
    scratch.push_back(empty({static_cast<int64_t>(a.prim.get_size())}, kUInt8));
    memory staged = make_memory(a.prim, scratch.back().data_ptr());
    if (a.output) {
      outputs.emplace_back(staged, user);
    } else {
      a.reorder->execute(s, user, staged);
    }
    args.emplace(a.id, staged);
  }
  if (e.scratchpad.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad_memory(e.scratchpad, scratch.emplace_back()));
  }
  e.prim.execute(s, args);
  std::size_t k = 0;
  for (const Arg& a : e.args) {
    if (a.output && a.reorder) {
      a.reorder->execute(s, outputs[k].first, outputs[k].second);
      ++k;
    }
  }
  s.wait();
}

}  // namespace

// A large batch (inference on 1000 images, say) runs as consecutive sub-batches, so the
// primitive's staging buffers (a blocked-format copy of the output, im2col scratch) stay near
// kForwardChunkBytes instead of growing with the batch: the peak memory of an evaluation pass
// is then the tensors themselves. Images are independent, so this changes no result.
constexpr int64_t kForwardChunkBytes = int64_t{16} << 20;

bool conv_forward_dnnl(const Tensor& src, const Tensor& w, const Tensor* bias, const Tensor& dst,
                       const ConvGeometry& g) {
  auto pad_r = dnnl_pad_r(g);
  if (!pad_r) return false;
  const int64_t elem = static_cast<int64_t>(dst.element_size());
  const int64_t src_image = g.c * g.h * g.w * elem, dst_image = g.o * g.oh * g.ow * elem;
  const int64_t per_image = std::max(src_image, dst_image);
  const int64_t chunk = std::clamp<int64_t>(kForwardChunkBytes / std::max<int64_t>(per_image, 1),
                                            int64_t{64}, std::max<int64_t>(g.n, 1));
  auto* sp = static_cast<const char*>(src.data_ptr());
  auto* dp = static_cast<char*>(dst.data_ptr());
  for (int64_t i = 0; i < g.n; i += chunk) {
    ConvGeometry gc = g;
    gc.n = std::min(chunk, g.n - i);
    auto e = get_entry(PrimKind::ConvFwd, gc, dst.dtype(), bias != nullptr, *pad_r);
    const void* s = sp + i * src_image;
    void* d = dp + i * dst_image;
    if (bias != nullptr) {
      run(*e, {s, w.data_ptr(), d, bias->data_ptr()});
    } else {
      run(*e, {s, w.data_ptr(), d});
    }
  }
  return true;
}

bool conv_backward_data_dnnl(const Tensor& dst_grad, const Tensor& w, const Tensor& src_grad,
                             const ConvGeometry& g) {
  auto pad_r = dnnl_pad_r(g);
  if (!pad_r) return false;
  auto e = get_entry(PrimKind::ConvBwdData, g, src_grad.dtype(), false, *pad_r);
  run(*e, {dst_grad.data_ptr(), w.data_ptr(), src_grad.data_ptr()});
  return true;
}

// The weight gradient sums over the batch. oneDNN splits that sum across threads (so its
// result would depend on the thread count); instead the batch is cut into a fixed number of
// chunks, each chunk's gradient is computed by a single-threaded primitive (chunks run in
// parallel), and the float32 partials are added in chunk order.
bool conv_backward_weights_dnnl(const Tensor& src, const Tensor& dst_grad, const Tensor& w_grad,
                                const Tensor* bias_grad, const ConvGeometry& g) {
  auto pad_r = dnnl_pad_r(g);
  if (!pad_r) return false;
  const DType t = w_grad.dtype();
  const bool with_bias = bias_grad != nullptr;
  const int64_t chunk = (g.n + kWeightGradChunks - 1) / kWeightGradChunks;
  const int64_t parts = (g.n + chunk - 1) / chunk;
  const int64_t wn = w_grad.numel(), bn = with_bias ? g.o : 0;
  ConvGeometry gc = g;
  gc.n = chunk;
  auto full = get_entry(PrimKind::ConvBwdWeights, gc, t, with_bias, *pad_r, true);
  std::shared_ptr<const ConvEntry> tail;
  if (g.n % chunk != 0) {
    gc.n = g.n % chunk;
    tail = get_entry(PrimKind::ConvBwdWeights, gc, t, with_bias, *pad_r, true);
  }
  Tensor partial = empty({parts, wn + bn}, kFloat32);
  float* pp = static_cast<float*>(partial.data_ptr());
  const auto* xs = static_cast<const char*>(src.data_ptr());
  const auto* dys = static_cast<const char*>(dst_grad.data_ptr());
  const std::size_t esize = src.element_size();
  const int64_t x_sample = g.c * g.h * g.w, dy_sample = g.o * g.oh * g.ow;
  parallel_for(0, parts, 1, [&](int64_t begin, int64_t end) {
    // oneDNN reads the thread count at run time too; make it agree with the build (one).
    SingleThreadBuild one_thread;
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n0 = p * chunk;
      const ConvEntry& e = (n0 + chunk <= g.n) ? *full : *tail;
      const void* x = xs + static_cast<std::size_t>(n0 * x_sample) * esize;
      const void* dy = dys + static_cast<std::size_t>(n0 * dy_sample) * esize;
      float* out = pp + p * (wn + bn);
      if (with_bias) {
        run(e, {x, dy, out, out + wn});
      } else {
        run(e, {x, dy, out});
      }
    }
  });
  dispatch_dtype(t, [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
      T* dw = static_cast<T*>(w_grad.data_ptr());
      T* db = with_bias ? static_cast<T*>(bias_grad->data_ptr()) : nullptr;
      parallel_for(0, wn + bn, 16384, [&](int64_t b, int64_t e) {
        for (int64_t j = b; j < e; ++j) {
          float acc = pp[j];
          for (int64_t p = 1; p < parts; ++p) acc += pp[p * (wn + bn) + j];
          if (j < wn) {
            dw[j] = static_cast<T>(acc);
          } else {
            db[j - wn] = static_cast<T>(acc);
          }
        }
      });
    }
  });
  return true;
}

}  // namespace ath::kernels
