// oneDNN kernels of the blocked-layout inference ops (conv_blocked.h): forward_inference
// convolutions on nChw16c / nChw8c activations with weights packed once, the layout reorders,
// and pooling. Each primitive is built once per geometry and cached (dnnl_utils.h).
//
// Memory contract: inputs are only read. Outputs are written once, whole — padding channels of
// a blocked output included (oneDNN zeroes them) — except conv_blocked with a residual: the
// residual is copied into the output first (skipped when the memory plan already placed the
// output over it) and the convolution adds to it (oneDNN's sum post-op); and a pooled
// conv_blocked (ConvBlockedAttrs::pool), whose convolution writes a temporary of the unpooled
// size from athanor's allocator (not the graph's arena: at batch 1 it is a few tens of KB), read
// once by the pool.
#include "conv_blocked_dnnl.h"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "athanor/core/parallel.h"
#include "athanor/ops/conv_blocked.h"
#include "athanor/ops/creation.h"
#include "common/dnnl_utils.h"
#include "common/register.h"
#include "packed_weight_header.h"
#include "pool_blocked_max.h"

namespace ath::kernels {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

memory::desc activation_md(int64_t n, int64_t c, int64_t h, int64_t w, ActivationLayout layout) {
  tag t = tag::nchw;
  switch (layout) {
    case ActivationLayout::Nchw:
      break;
    case ActivationLayout::Nhwc:
      t = tag::nhwc;
      break;
    case ActivationLayout::Blocked8:
      t = tag::nChw8c;
      break;
    case ActivationLayout::Blocked16:
      t = tag::nChw16c;
      break;
  }
  return memory::desc({n, c, h, w}, kF32, t);
}

int64_t extent(int64_t kernel, int64_t dilation) { return dilation * (kernel - 1) + 1; }

double conv_macs(const ConvBlockedAttrs& a) {
  const auto [oh, ow] = conv_blocked_output_size(a);
  const auto& w = a.weight_shape;
  return static_cast<double>(a.src_shape[0]) * static_cast<double>(oh * ow) *
         static_cast<double>(w[0] * w[1] * w[2] * w[3]);
}

// 1 when the convolution is small enough to run on one thread (inference_threads), else 0 (all).
int conv_threads(const ConvBlockedAttrs& a) {
  return inference_threads(conv_macs(a), kSingleThreadMacs);
}

// Into how many output-channel shares a convolution is split, one thread each (1: not split).
// At batch 1 oneDNN's convolutions scale poorly over two threads (W2's second layer, Winograd,
// 32 -> 64 channels at 14x14: 28-34 us on two threads, 35-41 on one), while half the output
// channels on one thread take half the time (15-20 us): so each thread runs a one-thread
// primitive over its share of the output channels, reading the whole input. Needs a blocked
// output whose channel blocks divide evenly (a share is then one contiguous run of blocks).
// Only small convolutions: ResNet-18's at batch 1 (~100M multiply-adds each), which oneDNN
// splits well itself, took 13-16 ms split against 10-12 whole.
// From the attributes and the thread count alone, so packing and running agree (the thread
// count is part of a saved plan's key, and batch-parallel streams pack and run on one thread).
// ATH_CONV_SPLIT=0 turns it off (for comparisons).
constexpr double kSplitMaxMacs = 16.0e6;

int conv_parts(const ConvBlockedAttrs& a) {
  static const bool enabled = [] {
    const char* e = std::getenv("ATH_CONV_SPLIT");
    return e == nullptr || std::string(e) != "0";
  }();
  const int threads = get_num_threads();
  if (!enabled || threads < 2 || a.src_shape[0] != 1 || conv_threads(a) == 1 ||
      conv_macs(a) > kSplitMaxMacs)
    return 1;
  const int64_t block = a.dst_layout == ActivationLayout::Blocked16  ? 16
                        : a.dst_layout == ActivationLayout::Blocked8 ? 8
                                                                     : 0;
  if (block == 0 || a.weight_shape[0] % (threads * block) != 0) return 1;
  return threads;
}

// The convolution one share computes: the output channels divided by `parts`.
ConvBlockedAttrs share_attrs(const ConvBlockedAttrs& a, int parts) {
  ConvBlockedAttrs s = a;
  s.weight_shape[0] /= parts;
  return s;
}

// The entry is built (and must run) with `threads` threads (0: all): the packed weight's format
// may depend on the thread count, so packing and running agree by computing it from `a` alone
// (conv_threads, conv_parts).
std::shared_ptr<const PackedEntry> conv_entry(const ConvBlockedAttrs& a, int threads) {
  std::optional<SingleThreadBuild> one;
  if (threads == 1) one.emplace();
  PrimitiveKey key(PrimKind::ConvBlocked, threads);
  for (int64_t v : a.src_shape) key.add(v);
  for (int64_t v : a.weight_shape) key.add(v);
  for (int i = 0; i < 2; ++i) {
    const auto u = static_cast<std::size_t>(i);
    key.add(a.conv.stride[u]).add(a.conv.pad_l[u]).add(a.conv.pad_r[u]).add(a.conv.dilation[u]);
  }
  key.add(static_cast<int64_t>(a.src_layout)).add(static_cast<int64_t>(a.dst_layout));
  key.add(static_cast<int64_t>(a.with_bias));
  key.add(static_cast<int64_t>(a.residual)).add(static_cast<int64_t>(a.relu));
  key.add(static_cast<int64_t>(a.winograd));
  return cached_primitive<PackedEntry>(key, [&] {
    const auto& s = a.src_shape;
    const auto& w = a.weight_shape;
    const auto [oh, ow] = conv_blocked_output_size(a);
    auto e = std::make_shared<PackedEntry>();
    e->src = activation_md(s[0], s[1], s[2], s[3], a.src_layout);
    e->dst = activation_md(s[0], w[0], oh, ow, a.dst_layout);
    e->plain_weights = memory::desc({w[0], w[1], w[2], w[3]}, kF32, tag::oihw);
    e->bias = memory::desc({w[0]}, kF32, tag::x);
    const memory::desc any_weights({w[0], w[1], w[2], w[3]}, kF32, tag::any);
    const ConvAttrs& c = a.conv;
    const int64_t out[2] = {oh, ow};
    memory::dims pad_r(2);
    for (std::size_t i = 0; i < 2; ++i) {
      // The exact right padding that gives the output size (ONNX's may exceed it by less than
      // a stride; oneDNN wants it exact).
      pad_r[i] =
          (out[i] - 1) * c.stride[i] + extent(w[2 + i], c.dilation[i]) - s[2 + i] - c.pad_l[i];
    }
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops ops;
    if (a.residual) ops.append_sum(1.0f);
    if (a.relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
    const memory::dims strides{c.stride[0], c.stride[1]};
    const memory::dims dil{c.dilation[0] - 1, c.dilation[1] - 1};
    const memory::dims pad_l{c.pad_l[0], c.pad_l[1]};
    try {
      const auto prop = dnnl::prop_kind::forward_inference;
      const auto algo =
          a.winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
      auto desc = a.with_bias
                      ? dnnl::convolution_forward::desc(prop, algo, e->src, any_weights, e->bias,
                                                        e->dst, strides, dil, pad_l, pad_r)
                      : dnnl::convolution_forward::desc(prop, algo, e->src, any_weights, e->dst,
                                                        strides, dil, pad_l, pad_r);
      dnnl::convolution_forward::primitive_desc pd(desc, attr, cpu_engine());
      e->prim = dnnl::convolution_forward(pd);
      e->finish(pd);
    } catch (const dnnl::error& err) {
      throw_dnnl_error(err, "blocked convolution");
    }
    return e;
  });
}

// The entry of the whole convolution, or of one share when it is split (conv_parts).
std::shared_ptr<const PackedEntry> conv_entry(const ConvBlockedAttrs& a) {
  const int parts = conv_parts(a);
  return parts > 1 ? conv_entry(share_attrs(a, parts), 1) : conv_entry(a, conv_threads(a));
}

// A split convolution's packed weight: the header, then each share's weight (its output
// channels' rows of the [O, C, kh, kw] weight) in the share primitive's format.
void pack_shares(const PackedEntry& e, const Tensor& weight, Tensor& out, const ConvBlockedAttrs& a,
                 int parts) {
  const Tensor w = weight.contiguous();
  const auto* src = static_cast<const float*>(w.data_ptr());
  const int64_t share_elems = w.numel() / parts;
  const std::size_t share_bytes = e.weights.get_size();
  write_packed_header(out.data_ptr(), a, e.weights);
  dnnl::stream& s = cpu_stream();
  for (int p = 0; p < parts; ++p) {
    dnnl::memory from = make_memory(e.plain_weights, src + p * share_elems);
    dnnl::memory to = make_memory(e.weights, packed_data(out.data_ptr()) + p * share_bytes);
    e.pack.execute(s, from, to);
  }
  s.wait();
}

void pack_weight_kernel(TensorSpan in, std::span<Tensor> out, const ConvBlockedAttrs& a) {
  const int parts = conv_parts(a);
  std::optional<SingleThreadBuild> one;
  if (parts > 1 || conv_threads(a) == 1) one.emplace();
  if (parts > 1) return pack_shares(*conv_entry(a), in[0], out[0], a, parts);
  pack_weight(*conv_entry(a), in[0], out[0], a);
}

// Pools the convolution output at c (a run of `planes` blocked [oh, ow, block] planes) into y
// when the convolution is pooled (ConvBlockedAttrs::pool).
void pool_planes(const ConvBlockedAttrs& a, const float* c, float* y, int64_t planes) {
  const auto [oh, ow] = conv_blocked_output_size(a);
  max_pool_blocked_planes(c, y, planes, oh, ow, a.pool[0], a.pool[1],
                          static_cast<int64_t>(a.dst_layout));
}

bool pooled(const ConvBlockedAttrs& a) { return a.pool[0] != 1 || a.pool[1] != 1; }

// A split convolution: thread p runs the share primitive on the whole input, share p of the
// weight and bias, into share p of the output (N = 1: a contiguous run of channel blocks) — or,
// pooled, into share p of `conv` and then pools it into share p of y, from its own cache.
void run_shares(const std::shared_ptr<const PackedEntry>& e, const ConvBlockedAttrs& a, int parts,
                const Tensor& x, const Tensor& packed_weight, Tensor& conv, Tensor& y,
                const float* bias) {
  const std::size_t share_bytes = e->weights.get_size();
  const auto bytes = static_cast<int64_t>(packed_weight.nbytes());
  ATH_CHECK(packed_weight.is_contiguous() &&
                bytes == static_cast<int64_t>(parts * share_bytes) + kPackedHeaderBytes,
            ShapeError, "conv_blocked: a packed weight of {} bytes was packed for another shape",
            bytes);
  check_packed_header(packed_weight.data_ptr(), a, e->weights, "conv_blocked");
  const int64_t share = a.weight_shape[0] / parts;
  const int64_t share_conv = conv.numel() / parts, share_y = y.numel() / parts;
  const int64_t share_planes = share / static_cast<int64_t>(a.dst_layout);
  const char* weights = packed_data(packed_weight.data_ptr());
  auto* c = static_cast<float*>(conv.data_ptr());
  auto* out = static_cast<float*>(y.data_ptr());
  parallel_for(0, parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      CallArgs& args = thread_call_args(e);
      bind_arg(args, DNNL_ARG_SRC, e->src, x.data_ptr());
      bind_arg(args, DNNL_ARG_WEIGHTS, e->weights, weights + p * share_bytes);
      bind_arg(args, DNNL_ARG_DST, e->dst, c + p * share_conv);
      if (bias != nullptr) bind_arg(args, DNNL_ARG_BIAS, e->bias, bias + p * share);
      bind_scratchpad(args, e->scratchpad);
      execute(e->prim, args);
      if (pooled(a)) pool_planes(a, c + p * share_conv, out + p * share_y, share_planes);
    }
  });
}

void conv_blocked_kernel(TensorSpan in, std::span<Tensor> out, const ConvBlockedAttrs& a) {
  const int parts = conv_parts(a);
  std::optional<SingleThreadBuild> one;
  if (parts == 1 && conv_threads(a) == 1) one.emplace();
  auto e = conv_entry(a);
  const Tensor x = in[0].contiguous();
  Tensor& y = out[0];
  if (a.residual) {
    const Tensor r = in.back().contiguous();
    if (r.data_ptr() != y.data_ptr()) std::memcpy(y.data_ptr(), r.data_ptr(), r.nbytes());
  }
  const Tensor bias = a.with_bias ? in[2].contiguous() : Tensor();
  // Pooled: the convolution's own output is a temporary of this call.
  const auto [oh, ow] = conv_blocked_output_size(a);
  Tensor conv = pooled(a)
                    ? empty(layout_shape({a.src_shape[0], a.weight_shape[0], oh, ow}, a.dst_layout))
                    : y;
  if (parts > 1) {
    run_shares(e, a, parts, x, in[1], conv, y,
               a.with_bias ? static_cast<const float*>(bias.data_ptr()) : nullptr);
    return;
  }
  run_packed(e, a, "conv_blocked", x.data_ptr(), in[1], conv.data_ptr(),
             a.with_bias ? bias.data_ptr() : nullptr);
  if (pooled(a))
    pool_planes(a, static_cast<const float*>(conv.data_ptr()), static_cast<float*>(y.data_ptr()),
                conv.size(0) * conv.size(1));
}

struct ReorderEntry : CachedPrimitive {
  dnnl::reorder prim;
  memory::desc src, dst;
};

// Plain [N, C, H, W] <-> `layout`, one direction per entry.
void layout_kernel(const Tensor& in, Tensor& out, const Shape& plain, ActivationLayout layout,
                   bool to_layout) {
  const int threads = inference_threads(static_cast<double>(numel(plain)), kSingleThreadElements);
  std::optional<SingleThreadBuild> one;
  if (threads == 1) one.emplace();
  PrimitiveKey key(PrimKind::LayoutReorder, threads);
  key.add(plain).add(static_cast<int64_t>(layout)).add(static_cast<int64_t>(to_layout));
  auto e = cached_primitive<ReorderEntry>(key, [&] {
    auto r = std::make_shared<ReorderEntry>();
    const memory::desc p =
        activation_md(plain[0], plain[1], plain[2], plain[3], ActivationLayout::Nchw);
    const memory::desc l = activation_md(plain[0], plain[1], plain[2], plain[3], layout);
    r->src = to_layout ? p : l;
    r->dst = to_layout ? l : p;
    r->prim =
        dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), r->src, cpu_engine(), r->dst));
    return r;
  });
  const Tensor x = in.contiguous();
  CallArgs& args = thread_call_args(e);
  bind_arg(args, DNNL_ARG_SRC, e->src, x.data_ptr());
  bind_arg(args, DNNL_ARG_DST, e->dst, out.data_ptr());
  execute(e->prim, args);
}

void to_blocked_kernel(TensorSpan in, std::span<Tensor> out, const BlockedLayoutAttrs& a) {
  layout_kernel(in[0], out[0], in[0].shape(), a.layout, true);
}

void from_blocked_kernel(TensorSpan in, std::span<Tensor> out, const BlockedLayoutAttrs& a) {
  layout_kernel(in[0], out[0], out[0].shape(), a.layout, false);
}

struct PoolEntry : CachedPrimitive {
  dnnl::pooling_forward prim;
  memory::desc src, dst, scratchpad;
};

void pool_blocked_kernel(TensorSpan in, std::span<Tensor> out, const PoolBlockedAttrs& a) {
  // Small non-overlapping max pools directly (pool_blocked_max.h): W2's second pool at batch 1
  // took 3.2-3.4 us a call in the graph against oneDNN's 3.6-4.8.
  if (pool_blocked_max_direct(in[0].contiguous(), out[0], a)) return;
  const Shape &xs = in[0].shape(), &ys = out[0].shape();
  const ActivationLayout layout = a.layout;
  // Logical [N, C, H, W] of both (blocked: the padded channel count; its padding pools to zero
  // like the other channels: max of zeros, mean of zeros).
  auto logical = [&](const Shape& s) -> std::array<int64_t, 4> {
    if (layout == ActivationLayout::Nhwc) return {s[0], s[3], s[1], s[2]};
    if (s.size() == 5) return {s[0], s[1] * s[4], s[2], s[3]};
    return {s[0], s[1], s[2], s[3]};
  };
  const auto xl = logical(xs), yl = logical(ys);
  const int threads = inference_threads(static_cast<double>(numel(xs)), kSingleThreadElements);
  std::optional<SingleThreadBuild> one;
  if (threads == 1) one.emplace();
  PrimitiveKey key(PrimKind::PoolBlocked, threads);
  key.add(xs).add(ys).add(static_cast<int64_t>(a.max)).add(static_cast<int64_t>(layout));
  for (std::size_t i = 0; i < 2; ++i)
    key.add(a.kernel[i]).add(a.stride[i]).add(a.pad_l[i]).add(a.pad_r[i]);
  auto e = cached_primitive<PoolEntry>(key, [&] {
    auto p = std::make_shared<PoolEntry>();
    p->src = activation_md(xl[0], xl[1], xl[2], xl[3], layout);
    p->dst = activation_md(yl[0], yl[1], yl[2], yl[3], layout);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    memory::dims pad_r(2);
    for (std::size_t i = 0; i < 2; ++i)
      pad_r[i] = (yl[2 + i] - 1) * a.stride[i] + a.kernel[i] - xl[2 + i] - a.pad_l[i];
    try {
      dnnl::pooling_forward::primitive_desc pd(
          dnnl::pooling_forward::desc(
              dnnl::prop_kind::forward_inference,
              a.max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding,
              p->src, p->dst, {a.stride[0], a.stride[1]}, {a.kernel[0], a.kernel[1]},
              {a.pad_l[0], a.pad_l[1]}, pad_r),
          attr, cpu_engine());
      p->prim = dnnl::pooling_forward(pd);
      p->scratchpad = pd.scratchpad_desc();
    } catch (const dnnl::error& err) {
      throw_dnnl_error(err, "blocked pooling");
    }
    return p;
  });
  const Tensor x = in[0].contiguous();
  CallArgs& args = thread_call_args(e);
  bind_arg(args, DNNL_ARG_SRC, e->src, x.data_ptr());
  bind_arg(args, DNNL_ARG_DST, e->dst, out[0].data_ptr());
  bind_scratchpad(args, e->scratchpad);
  execute(e->prim, args);
}

const bool registered = [] {
  register_cpu<float>(op_conv_pack_weight(), []<class T>() { return &pack_weight_kernel; });
  register_cpu<float>(op_conv_blocked(), []<class T>() { return &conv_blocked_kernel; });
  register_cpu<float>(op_to_blocked(), []<class T>() { return &to_blocked_kernel; });
  register_cpu<float>(op_from_blocked(), []<class T>() { return &from_blocked_kernel; });
  register_cpu<float>(op_pool_blocked(), []<class T>() { return &pool_blocked_kernel; });
  return true;
}();

}  // namespace

std::array<int64_t, 2> conv_blocked_output_size(const ConvBlockedAttrs& a) {
  std::array<int64_t, 2> out{};
  for (std::size_t i = 0; i < 2; ++i) {
    const int64_t span = a.src_shape[2 + i] + a.conv.pad_l[i] + a.conv.pad_r[i] -
                         extent(a.weight_shape[2 + i], a.conv.dilation[i]);
    ATH_CHECK(span >= 0 && a.conv.stride[i] >= 1, ShapeError,
              "convolution window larger than the padded input");
    out[i] = span / a.conv.stride[i] + 1;
  }
  return out;
}

int64_t conv_packed_weight_bytes(const ConvBlockedAttrs& a) {
  return conv_parts(a) * static_cast<int64_t>(conv_entry(a)->weights.get_size()) +
         kPackedHeaderBytes;
}

}  // namespace ath::kernels
