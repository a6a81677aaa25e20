// heads (inference only): multi-head attention's layout shuffles become split_heads and
// merge_heads (ops/attention.h), one dense copy each:
//
// - split: the operands of an attention matrix product — q, k^T (k transposed), v, each
//   [B, H, L, d] — that are cut out of one projection Y by chains of layout nodes (views,
//   permutes, slices, clones, index_select of a one-element constant index: what exporters emit
//   for "unflatten, transpose, take part i, reshape to heads") become the outputs of one
//   split_heads(Y viewed [d0, d1, parts * H * d]), so the parts are written once, dense, where
//   the chains made up to two copies each (the index_select, then the product's own copy of a
//   batch-permuted operand);
// - merge: the input of a linear (or constant-weight product) that is a chain of layout nodes
//   over an attention output O [B, H, L, d] ending in a copy (permute -> clone -> view) becomes
//   merge_heads(O) viewed as that input.
//
// A chain qualifies when the element it reads for each index is exactly the one split_heads (or
// merge_heads) reads: the pass checks this by running the chain and the heads op on a tensor of
// element numbers (arange over the base's shape) and comparing, for both the batch-first
// ([B, L, ...]) and the sequence-first ([L, B, ...]) layout. So any order of views an exporter
// produces is recognized, and nothing is rewritten that is not the same copy.
//
// Bit-identical: the same elements are copied; products read the same values (dense now, where
// they were copied densely before).
#include <map>
#include <tuple>

#include "athanor/ops/attention.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/views.h"
#include "athanor/tensor/grad_mode.h"
#include "graph_edit.h"
#include "layout_chain.h"

namespace ath::graph {

namespace {

using detail::Chain;
using detail::element_numbers;
using detail::GraphEdit;
using detail::layout_chain;
using detail::run_chain;
using detail::same_numbers;

struct SplitKey {
  ValueId base;
  bool batch_first;
  int64_t batch, len, heads, parts;
  auto operator<=>(const SplitKey&) const = default;
};

struct SplitUse {
  int32_t node;
  std::size_t slot;
  int64_t part;
  bool transposed;
};

class Heads {
 public:
  explicit Heads(Graph& g) : g_(g), edit_(g) {}

  int run() {
    NoGradGuard no_grad;
    const std::size_t n = g_.nodes.size();
    for (std::size_t k = 0; k < n; ++k) {
      const Node& node = g_.nodes[k];
      if (node.op == &op_matmul() || node.op == &op_bmm()) {
        for (std::size_t slot = 0; slot < 2 && node.inputs.size() == 2; ++slot)
          find_split(static_cast<int32_t>(k), slot);
      }
    }
    for (std::size_t k = 0; k < n; ++k) {
      const Node& node = g_.nodes[k];
      const bool product =
          node.op == &op_linear() || node.op == &op_mm() || node.op == &op_matmul();
      if (product && node.inputs.size() >= 2 && detail::constant_tensor(g_, node.inputs[1]))
        find_merge(static_cast<int32_t>(k));
    }
    for (const auto& [key, uses] : splits_) emit_split(key, uses);
    edit_.finish();
    return changed_;
  }

 private:
  const Value& val(ValueId v) const { return g_.value(v); }

  // Operand `slot` of product node k as a part of a split (q, v: as is; k^T: transposed).
  void find_split(int32_t k, std::size_t slot) {
    const ValueId u = g_.nodes[static_cast<std::size_t>(k)].inputs[slot];
    const Value& uv = val(u);
    if (uv.meta.shape.size() != 4) return;
    const Chain c = layout_chain(g_, u);
    const Value& base = val(c.base);
    if (!c.copies || numel(base.meta.shape) > detail::kMaxNumbered ||
        base.origin != ValueOrigin::Node || base.storage != c.base ||
        base.strides != contiguous_strides(base.meta.shape))
      return;
    Tensor numbers;
    for (const bool transposed : {false, true}) {
      if (transposed && slot == 0) continue;
      Shape s = uv.meta.shape;  // [B, H, L, d] of the part
      if (transposed) std::swap(s[2], s[3]);
      const int64_t b = s[0], h = s[1], len = s[2], d = s[3];
      const int64_t rows = b * len;
      if (rows * h * d == 0 || numel(base.meta.shape) % (rows * h * d) != 0) continue;
      const int64_t parts = numel(base.meta.shape) / (rows * h * d);
      if (parts < 1 || parts > 3) continue;
      if (!numbers.defined()) numbers = run_chain(g_, c);
      const Tensor mine = transposed ? numbers.transpose(2, 3) : numbers;
      for (const bool bf : {true, false}) {
        const SplitKey key{c.base, bf, b, len, h, parts};
        const std::vector<Tensor>& want = expected_split(key);
        for (int64_t p = 0; p < parts; ++p) {
          if (same_numbers(mine, want[static_cast<std::size_t>(p)])) {
            splits_[key].push_back({k, slot, p, transposed});
            return;
          }
        }
      }
    }
  }

  // [d0, d1, parts * heads * d]: the packed projection split_heads reads.
  Shape packed_shape(const SplitKey& key) const {
    const int64_t width = numel(val(key.base).meta.shape) / (key.batch * key.len);
    return key.batch_first ? Shape{key.batch, key.len, width} : Shape{key.len, key.batch, width};
  }

  const std::vector<Tensor>& expected_split(const SplitKey& key) {
    auto it = expected_.find(key);
    if (it != expected_.end()) return it->second;
    return expected_[key] = split_heads(element_numbers(packed_shape(key)), key.heads, key.parts,
                                        key.batch_first);
  }

  void emit_split(const SplitKey& key, const std::vector<SplitUse>& uses) {
    int32_t first = uses[0].node;
    for (const SplitUse& u : uses) first = std::min(first, u.node);
    const Shape packed = packed_shape(key);
    ValueId y = key.base;
    if (val(y).meta.shape != packed) y = edit_.insert(first, op_view(), ShapeAttrs{packed}, {y})[0];
    const HeadsAttrs a{.heads = key.heads, .parts = key.parts, .batch_first = key.batch_first};
    const std::vector<ValueId> outs = edit_.insert(first, op_split_heads(), a, {y});
    std::map<std::pair<int32_t, int64_t>, ValueId> transposes;  // by (node, part)
    for (const SplitUse& u : uses) {
      ValueId v = outs[static_cast<std::size_t>(u.part)];
      if (u.transposed) {
        const PermuteAttrs t{.dims = {0, 1, 3, 2}};
        v = edit_.insert(u.node, op_permute(), t, {v})[0];
      }
      edit_.node(u.node).inputs[u.slot] = v;
      ++changed_;
    }
  }

  // Input 0 of product node k as merge_heads of an attention output.
  void find_merge(int32_t k) {
    const ValueId x = g_.nodes[static_cast<std::size_t>(k)].inputs[0];
    const Chain c = layout_chain(g_, x);
    const Shape s = val(c.base).meta.shape;  // [B, H, L, d]
    const Shape xs = val(x).meta.shape;
    if (!c.copies || s.size() != 4 || numel(s) != numel(xs) || numel(s) > detail::kMaxNumbered)
      return;
    const Tensor numbers = run_chain(g_, c);
    for (const bool bf : {true, false}) {
      const Tensor want = merge_heads({element_numbers(s)}, bf);
      if (!same_numbers(numbers, want.reshape(xs))) continue;
      const HeadsAttrs a{.heads = s[1], .parts = 1, .batch_first = bf};
      ValueId m = edit_.insert(k, op_merge_heads(), a, {c.base})[0];
      if (val(m).meta.shape != xs) m = edit_.insert(k, op_view(), ShapeAttrs{xs}, {m})[0];
      edit_.node(k).inputs[0] = m;
      ++changed_;
      return;
    }
  }

  Graph& g_;
  GraphEdit edit_;
  std::map<SplitKey, std::vector<SplitUse>> splits_;
  std::map<SplitKey, std::vector<Tensor>> expected_;
  int changed_ = 0;
};

}  // namespace

namespace detail {
int heads_batch_first(Graph& g);  // heads_batch_first.cpp
}

int convert_attention_heads(Graph& g) {
  if (g.nodes.empty() || detail::writes_memory(g)) return 0;
  const int changed = Heads(g).run();
  if (changed == 0) return 0;
  // The chains the heads ops replaced go first: the batch-first step asks who reads what.
  eliminate_dead_code(g);
  if (detail::heads_batch_first(g) > 0) eliminate_dead_code(g);
  return changed;
}

}  // namespace ath::graph
