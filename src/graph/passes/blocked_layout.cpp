// blocked_layout (inference only): float32 convolutions become conv_blocked nodes on the
// activation layout this host's oneDNN kernels run fastest on (ops/conv_blocked.h: NHWC with
// AVX-512, nChw8c with AVX2), so that from one convolution to the next the activations stay in
// that layout, and each weight is packed into oneDNN's format once, here, instead of reordered
// at every call:
//
//   conv(x, w, b) [-> relu]                 -> conv_blocked(xb, pack(w), b) {relu}
//   relu(add(conv(x, w, b), r))             -> conv_blocked(xb, pack(w), b, rb) {sum, relu}
//   max_pool2d(y) (indices unread)          -> pool_blocked(yb) {max}
//   max_pool2d(conv(x, w, b)) (batch 1, kernel = stride, no padding, y read by the pool alone)
//                                           -> conv_blocked(xb, pack(w), b) {pool}
//   conv_relu_max_pool(x, w, b)             -> conv_relu_max_pool(x, w, b) {writes the layout}
//   mean(y, dims {2, 3}, keepdim)           -> pool_blocked(yb) {average over H x W}
//   linear(flatten(y), W)                   -> linear(flatten(yb), W's columns in yb's order)
//
// A value is converted into the blocked layout (to_blocked) where a convolution first needs it
// blocked, and back (from_blocked) where anything else reads it — once each, at the first such
// read. The residual form runs where the add ran (the convolution's only reader), so a residual
// computed after the convolution in the original order is ready by then.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "athanor/graph/passes.h"
#include "athanor/ops/activations.h"
#include "athanor/ops/conv.h"
#include "athanor/ops/conv_blocked.h"
#include "athanor/ops/conv_pool.h"
#include "athanor/ops/epilogue.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/views.h"
#include "buffer_uses.h"
#include "constant_value.h"

namespace ath::graph {

namespace {

bool is_f32_4d(const Value& v) { return v.meta.dtype == kFloat32 && v.meta.shape.size() == 4; }

std::array<int64_t, 4> weight_shape(const Shape& s) { return {s[0], s[1], s[2], s[3]}; }

class BlockedLayout {
 public:
  explicit BlockedLayout(Graph& g)
      : g_(g),
        layout_(inference_activation_layout()),
        uses_(detail::buffer_uses(g)),
        blocked_(g.values.size(), kNoValue),
        gone_(g.values.size(), false),
        plain_(g.values.size(), kNoValue) {}

  int run() {
    // Winograd's kernels exist for nChw16c only: a graph that has convolutions it can run takes
    // that layout (its other convolutions run oneDNN's direct nChw16c kernels).
    for (const Node& n : g_.nodes) {
      if (convertible_conv(n) &&
          winograd_eligible(*conv_attrs(n), weight_shape(g_.value(n.inputs[1]).meta.shape))) {
        layout_ = ActivationLayout::Blocked16;
        break;
      }
    }
    nodes_at_start_ = g_.nodes;
    std::vector<Node> old = std::move(g_.nodes);
    g_.nodes.clear();
    // Convolutions whose residual add runs them: by the add's node index.
    std::vector<int32_t> deferred_to(old.size(), -1);
    std::vector<bool> absorbed(old.size(), false);  // adds and relus folded into a conv
    // Moving a convolution to its add is safe only where nothing writes memory in between;
    // inference graphs write nothing, so residual fusion is simply off for graphs that do.
    const bool writes = std::any_of(old.begin(), old.end(),
                                    [](const Node& n) { return n.write != WriteKind::None; });
    for (std::size_t k = 0; k < old.size() && !writes; ++k)
      find_residual(old, k, deferred_to, absorbed);
    for (std::size_t k = 0; k < old.size() && !writes; ++k)
      find_pool(old, k, deferred_to, absorbed);
    for (std::size_t k = 0; k < old.size(); ++k) {
      Node& n = old[k];
      if (deferred_to[k] >= 0) continue;  // runs at its add
      if (absorbed[k]) {
        if (const auto it = residual_conv_.find(static_cast<int32_t>(k));
            it != residual_conv_.end())
          emit_conv(old[static_cast<std::size_t>(it->second.conv)], it->second);
        continue;
      }
      if (convertible_conv(n)) {
        const auto pool = pooled_conv_.find(static_cast<int32_t>(k));
        emit_conv(
            n, {},
            pool == pooled_conv_.end() ? nullptr : &old[static_cast<std::size_t>(pool->second)]);
        continue;
      }
      if (try_pool(n)) continue;
      if (try_conv_pool(n)) continue;
      if (try_flatten_into_linear(old, k)) continue;
      for (ValueId& in : n.inputs) in = plain_of(in);
      for (auto& w : n.writes) w.first = plain_of(w.first);
      nodes_.push_back(std::move(n));
    }
    for (ValueId& o : g_.outputs) o = plain_of(o);
    // A view of a value that is now made by from_blocked shares that value's buffer.
    for (Value& v : g_.values) {
      const auto s = static_cast<std::size_t>(v.storage);
      if (v.storage != kNoValue && s < gone_.size() && gone_[s] && plain_[s] != kNoValue)
        v.storage = plain_[s];
    }
    g_.nodes = std::move(nodes_);
    rewrite(g_, std::vector<bool>(g_.nodes.size(), true),
            std::vector<ValueId>(g_.values.size(), kNoValue));
    return changed_;
  }

 private:
  struct Residual {
    int32_t conv = -1;
    ValueId residual = kNoValue;  // the add's other operand
    ValueId result = kNoValue;    // the value the fused node makes (the relu's, or the add's)
    bool relu = false;
  };

  const ConvAttrs* conv_attrs(const Node& n) const {
    if (n.op != &op_convolution() && n.op != &op_convolution_relu()) return nullptr;
    return static_cast<const ConvAttrs*>(n.attrs.get());
  }

  bool constant(ValueId v) const { return g_.value(v).origin == ValueOrigin::Constant; }

  bool convertible_conv(const Node& n) const {
    const ConvAttrs* a = conv_attrs(n);
    if (a == nullptr || a->groups != 1 || a->transposed || n.attr_source ||
        n.write != WriteKind::None || n.outputs.size() != 1)
      return false;
    if (!is_f32_4d(g_.value(n.inputs[0])) || !is_f32_4d(g_.value(n.outputs[0]))) return false;
    if (!constant(n.inputs[1]) || g_.value(n.inputs[1]).meta.dtype != kFloat32) return false;
    return n.inputs.size() == 2 || constant(n.inputs[2]);
  }

  // conv -> add (its only reader) [-> relu (the add's only reader)]: fused at the add.
  void find_residual(const std::vector<Node>& old, std::size_t k, std::vector<int32_t>& deferred_to,
                     std::vector<bool>& absorbed) {
    const Node& c = old[k];
    if (!convertible_conv(c) || c.op != &op_convolution()) return;
    const ValueId y = c.outputs[0];
    if (!uses_.private_to_one_reader(g_, y) || g_.storage_of(y) != y) return;
    const int32_t add_k = uses_.readers[static_cast<std::size_t>(y)][0];
    const Node& add = old[static_cast<std::size_t>(add_k)];
    if (absorbed[static_cast<std::size_t>(add_k)]) return;  // the add's other operand took it
    if (add.op != &op_add() || add.write != WriteKind::None || add.inputs.size() != 2) return;
    if (!(static_cast<const AlphaAttrs*>(add.attrs.get())->alpha == Scalar(1))) return;
    const ValueId r = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
    if (r == y || g_.value(r).meta.shape != g_.value(y).meta.shape ||
        g_.value(r).meta.dtype != kFloat32 ||
        g_.value(add.outputs[0]).meta.shape != g_.value(y).meta.shape)
      return;
    Residual res{.conv = static_cast<int32_t>(k), .residual = r, .result = add.outputs[0]};
    int32_t at = add_k;
    const ValueId s = add.outputs[0];
    if (uses_.private_to_one_reader(g_, s) && g_.storage_of(s) == s) {
      const int32_t relu_k = uses_.readers[static_cast<std::size_t>(s)][0];
      const Node& relu = old[static_cast<std::size_t>(relu_k)];
      if (relu.op == &op_relu() && relu.write == WriteKind::None) {
        absorbed[static_cast<std::size_t>(add_k)] = true;
        res.relu = true;
        res.result = relu.outputs[0];
        at = relu_k;
      }
    }
    deferred_to[k] = at;
    absorbed[static_cast<std::size_t>(at)] = true;
    residual_conv_[at] = res;
  }

  // conv (no residual) -> max_pool2d (its only reader; indices unread; kernel = stride, no
  // padding, floor) at batch 1 in a blocked layout: one conv_blocked with the pool
  // (ConvBlockedAttrs::pool), which pools each thread's share of the channels where that thread
  // computed it, instead of one thread reading back what the other core wrote (W2's second pool
  // at batch 1: 3.2-4.5 us as its own node).
  void find_pool(const std::vector<Node>& old, std::size_t k,
                 const std::vector<int32_t>& deferred_to, std::vector<bool>& absorbed) {
    const Node& c = old[k];
    if (!convertible_conv(c) || deferred_to[k] >= 0 || absorbed[k]) return;
    if (layout_ != ActivationLayout::Blocked8 && layout_ != ActivationLayout::Blocked16) return;
    const ValueId y = c.outputs[0];
    if (g_.value(y).meta.shape[0] != 1) return;
    if (!uses_.private_to_one_reader(g_, y) || g_.storage_of(y) != y) return;
    const int32_t pool_k = uses_.readers[static_cast<std::size_t>(y)][0];
    const Node& pool = old[static_cast<std::size_t>(pool_k)];
    if (pool.op != &op_max_pool2d() || pool.write != WriteKind::None || pool.attr_source ||
        absorbed[static_cast<std::size_t>(pool_k)])
      return;
    const auto& m = *static_cast<const MaxPool2dAttrs*>(pool.attrs.get());
    const ValueId idx = g_.storage_of(pool.outputs[1]);
    if (!uses_.readers[static_cast<std::size_t>(idx)].empty() ||
        uses_.pinned[static_cast<std::size_t>(idx)] || m.ceil_mode)
      return;
    for (std::size_t i = 0; i < 2; ++i) {
      if (m.dilation[i] != 1 || m.padding[i] != 0 || m.kernel[i] != m.stride[i]) return;
    }
    absorbed[static_cast<std::size_t>(pool_k)] = true;
    pooled_conv_[static_cast<int32_t>(k)] = pool_k;
  }

  ValueId emit(const OpDef& op, std::shared_ptr<const void> attrs, std::vector<ValueId> inputs) {
    const std::vector<ValueId> out = g_.add_node_erased(op, std::move(attrs), std::move(inputs));
    nodes_.push_back(std::move(g_.nodes.back()));
    g_.nodes.pop_back();
    grow();
    return out[0];
  }

  void grow() {
    blocked_.resize(g_.values.size(), kNoValue);
    gone_.resize(g_.values.size(), false);
    plain_.resize(g_.values.size(), kNoValue);
  }

  ValueId blocked_of(ValueId v) {
    const auto i = static_cast<std::size_t>(v);
    if (blocked_[i] == kNoValue) {
      const BlockedLayoutAttrs a{.layout = layout_};
      blocked_[i] = emit(op_to_blocked(), op_to_blocked().clone_attrs(&a), {plain_of(v)});
    }
    return blocked_[i];
  }

  ValueId plain_of(ValueId v) {
    const auto i = static_cast<std::size_t>(v);
    if (i >= gone_.size() || !gone_[i]) return v;
    if (plain_[i] == kNoValue) {
      const BlockedLayoutAttrs a{.layout = layout_, .channels = g_.value(v).meta.shape[1]};
      plain_[i] = emit(op_from_blocked(), op_from_blocked().clone_attrs(&a), {blocked_[i]});
    }
    return plain_[i];
  }

  // `pool`: a max_pool2d of the result to fold in (find_pool), or null.
  void emit_conv(const Node& n, const Residual& res, const Node* pool = nullptr) {
    const ConvAttrs& c = *conv_attrs(n);
    const ValueId x = n.inputs[0];
    const Shape& xs = g_.value(x).meta.shape;
    const Shape& ws = g_.value(n.inputs[1]).meta.shape;
    // A few input channels (an image's 1 or 3) are read plain by a blocked convolution: a
    // blocked copy would be mostly padding, and oneDNN's first-layer kernels read NCHW directly.
    // (An NHWC convolution has no such kernel: its input is converted, a cheap copy.)
    const bool blocked =
        layout_ == ActivationLayout::Blocked8 || layout_ == ActivationLayout::Blocked16;
    const bool plain_src =
        blocked && blocked_[static_cast<std::size_t>(x)] == kNoValue && xs[1] < 4;
    ConvBlockedAttrs a{.conv = c,
                       .src_shape = {xs[0], xs[1], xs[2], xs[3]},
                       .weight_shape = {ws[0], ws[1], ws[2], ws[3]},
                       .src_layout = plain_src ? ActivationLayout::Nchw : layout_,
                       .dst_layout = layout_,
                       .with_bias = n.inputs.size() == 3,
                       .residual = res.conv >= 0,
                       .relu = n.op == &op_convolution_relu() || res.relu};
    if (pool != nullptr) {
      const auto& m = *static_cast<const MaxPool2dAttrs*>(pool->attrs.get());
      a.pool = {m.kernel[0], m.kernel[1]};
    }
    const Tensor& w = g_.constants[static_cast<std::size_t>(g_.value(n.inputs[1]).index)];
    a.winograd = layout_ == ActivationLayout::Blocked16 && !plain_src &&
                 winograd_eligible(a.conv, a.weight_shape);
    Tensor packed;
    try {
      packed = conv_pack_weight(w, a);
    } catch (const NotImplementedError&) {  // a geometry oneDNN's Winograd does not take
      if (!a.winograd) throw;
      a.winograd = false;
      packed = conv_pack_weight(w, a);
    }
    std::vector<ValueId> in{plain_src ? x : blocked_of(x), g_.add_constant(packed)};
    grow();
    if (a.with_bias) in.push_back(n.inputs[2]);
    if (a.residual) in.push_back(blocked_of(res.residual));
    const ValueId y = res.conv >= 0     ? res.result
                      : pool != nullptr ? pool->outputs[0]
                                        : n.outputs[0];
    set_blocked(y, emit(op_conv_blocked(), op_conv_blocked().clone_attrs(&a), std::move(in)));
  }

  void set_blocked(ValueId plain, ValueId blocked) {
    blocked_[static_cast<std::size_t>(plain)] = blocked;
    gone_[static_cast<std::size_t>(plain)] = true;
    ++changed_;
  }

  // max_pool2d whose indices nobody reads, and global average pooling (mean over H and W), of
  // a value that is blocked already.
  bool try_pool(const Node& n) {
    if (n.inputs.empty() || n.write != WriteKind::None || n.attr_source) return false;
    const ValueId x = n.inputs[0];
    if (blocked_[static_cast<std::size_t>(x)] == kNoValue || !is_f32_4d(g_.value(x))) return false;
    const Shape& xs = g_.value(x).meta.shape;
    PoolBlockedAttrs p{.layout = layout_};
    if (n.op == &op_max_pool2d()) {
      const auto& m = *static_cast<const MaxPool2dAttrs*>(n.attrs.get());
      const ValueId idx = n.outputs[1];
      if (!uses_.readers[static_cast<std::size_t>(g_.storage_of(idx))].empty() ||
          uses_.pinned[static_cast<std::size_t>(g_.storage_of(idx))] || m.dilation[0] != 1 ||
          m.dilation[1] != 1 || m.ceil_mode)
        return false;
      for (std::size_t i = 0; i < 2; ++i) {
        if (m.padding[i] >= m.kernel[i]) return false;
        const int64_t out = g_.value(n.outputs[0]).meta.shape[2 + i];
        p.kernel[i] = m.kernel[i];
        p.stride[i] = m.stride[i];
        p.pad_l[i] = m.padding[i];
        p.pad_r[i] = (out - 1) * m.stride[i] + m.kernel[i] - xs[2 + i] - m.padding[i];
        if (p.pad_r[i] < 0 || p.pad_r[i] >= m.kernel[i]) return false;
      }
    } else if (n.op == &op_mean()) {
      const auto& r = *static_cast<const ReduceAttrs*>(n.attrs.get());
      const bool hw = r.dims.size() == 2 && (r.dims[0] == 2 || r.dims[0] == -2) &&
                      (r.dims[1] == 3 || r.dims[1] == -1);
      if (!hw || !r.keepdim || r.dtype.has_value()) return false;
      p = {.layout = layout_, .kernel = {xs[2], xs[3]}, .max = false};
    } else {
      return false;
    }
    set_blocked(n.outputs[0], emit(op_pool_blocked(), op_pool_blocked().clone_attrs(&p),
                                   {blocked_[static_cast<std::size_t>(x)]}));
    return true;
  }

  // conv_relu_max_pool (the conv_pool pass) writes the layout itself: its input stays plain (a
  // first layer's image), its output goes straight into the layout the next convolution reads.
  bool try_conv_pool(const Node& n) {
    if (n.op != &op_conv_relu_max_pool() || n.write != WriteKind::None || n.attr_source)
      return false;
    ConvPoolAttrs a = *static_cast<const ConvPoolAttrs*>(n.attrs.get());
    if (a.dst_layout != ActivationLayout::Nchw || !is_f32_4d(g_.value(n.outputs[0]))) return false;
    a.dst_layout = layout_;
    std::vector<ValueId> in = n.inputs;
    for (ValueId& v : in) v = plain_of(v);
    set_blocked(n.outputs[0],
                emit(op_conv_relu_max_pool(), op_conv_relu_max_pool().clone_attrs(&a), in));
    return true;
  }

  Tensor constant_through_views(ValueId v) const {
    return detail::constant_value(g_, nodes_at_start_, v);
  }

  // flatten(value in the layout) read only by linear layers (a CNN's classifier): the tensor is
  // flattened as it is and each linear's constant weight has its columns permuted once, here,
  // from (c, h, w) to the layout's order — (h, w, c) for NHWC, (c / b, h, w, c % b) for a
  // blocked layout without padding channels — instead of converting the activation back to
  // NCHW at every call.
  bool try_flatten_into_linear(std::vector<Node>& old, std::size_t k) {
    const Node& n = old[k];
    if (n.op != &op_view() || n.inputs.size() != 1) return false;
    const ValueId x = n.inputs[0];
    const auto xi = static_cast<std::size_t>(x);
    if (xi >= gone_.size() || !gone_[xi] || plain_[xi] != kNoValue) return false;
    const Shape& xs = g_.value(x).meta.shape;
    const int64_t block = layout_ == ActivationLayout::Nhwc ? 0 : static_cast<int64_t>(layout_);
    if (xs.size() != 4 || (block > 0 && xs[1] % block != 0)) return false;
    const ValueId flat = n.outputs[0];
    const Shape& fs = g_.value(flat).meta.shape;
    if (xs.size() != 4 || fs.size() != 2 || fs[0] != xs[0] || fs[1] != xs[1] * xs[2] * xs[3])
      return false;
    for (ValueId o : g_.outputs)
      if (o == flat) return false;
    std::vector<std::size_t> readers;
    for (std::size_t j = k + 1; j < old.size(); ++j) {
      const Node& r = old[j];
      for (std::size_t i = 0; i < r.inputs.size(); ++i) {
        if (r.inputs[i] != flat) continue;
        const bool linear = (r.op == &op_linear() || r.op == &op_linear_relu()) && i == 0 &&
                            r.write == WriteKind::None && !r.attr_source;
        if (!linear || !constant_through_views(r.inputs[1]).defined()) return false;
        readers.push_back(j);
      }
    }
    if (readers.empty()) return false;
    const ShapeAttrs flat_shape{.shape = fs};
    const ValueId view = emit(op_view(), op_view().clone_attrs(&flat_shape), {blocked_[xi]});
    for (const std::size_t j : readers) {
      Node& r = old[j];
      const Tensor w = constant_through_views(r.inputs[1]);
      const int64_t o = w.shape()[0];
      const Tensor permuted =
          block == 0 ? w.reshape({o, xs[1], xs[2], xs[3]}).permute({0, 2, 3, 1})
                     : w.reshape({o, xs[1] / block, block, xs[2], xs[3]}).permute({0, 1, 3, 4, 2});
      r.inputs[1] = g_.add_constant(permuted.reshape({o, fs[1]}).contiguous());
      r.inputs[0] = view;
      grow();
    }
    ++changed_;
    return true;
  }

  Graph& g_;
  ActivationLayout layout_;
  const detail::BufferUses uses_;
  std::vector<ValueId> blocked_;  // by plain value: its blocked form, once made
  std::vector<bool> gone_;        // by plain value: no longer computed in its plain form
  std::vector<ValueId> plain_;    // by gone value: the from_blocked that makes it again
  std::unordered_map<int32_t, int32_t> pooled_conv_;     // conv node -> the max pool it absorbs
  std::unordered_map<int32_t, Residual> residual_conv_;  // by the node it runs at
  std::vector<Node> nodes_;
  std::vector<Node> nodes_at_start_;  // the graph as it came, for reading producers
  int changed_ = 0;
};

}  // namespace

int convert_to_blocked_layout(Graph& g) {
  if (g.nodes.empty()) return 0;
  return BlockedLayout(g).run();
}

}  // namespace ath::graph
