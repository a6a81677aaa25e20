// Multi-head attention's fused pieces as ONNX's plain ops: split_heads is Split + Reshape +
// Transpose, merge_heads the inverse, attention_softmax a scaled Softmax with the causal mask
// added as a constant [L, S] matrix of 0 and -inf (the sequence length is fixed at export; only
// the batch size may vary).
#include <limits>

#include "athanor/ops/attention.h"
#include "athanor/ops/creation.h"
#include "emitters.h"

namespace ath::onnx::detail {

namespace {

// x [B, L, parts*heads*d] ([L, B, ...] without batch_first) -> parts x [B, heads, L, d].
void emit_split_heads(EmitContext& c) {
  const HeadsAttrs& a = c.attrs<HeadsAttrs>();
  const int64_t d = c.out_meta(0).shape[3], e = a.heads * d;
  for (int p = a.parts; p < 3; ++p) {
    if (c.out_used(p)) c.unsupported("a placeholder output of split_heads read by the model");
  }
  std::vector<std::string> parts;
  if (a.parts == 1) {
    parts.push_back(c.in(0));
  } else {
    for (int p = 0; p < a.parts; ++p) parts.push_back(c.fresh("part"));
    attr_i(c.add("Split", {c.in(0), c.ints(std::vector<int64_t>(a.parts, e))}, parts), "axis", -1);
  }
  for (int p = 0; p < a.parts; ++p) {
    if (!c.out_used(p)) continue;
    const std::string heads = c.op("Reshape", {parts[p], c.ints({0, 0, a.heads, d})});
    attr_ints(c.add("Transpose", {heads}, {c.out(p)}), "perm",
              a.batch_first ? std::vector<int64_t>{0, 2, 1, 3} : std::vector<int64_t>{1, 2, 0, 3});
  }
}

// parts x [B, heads, L, d] -> [B, L, parts*heads*d] ([L, B, ...] without batch_first).
void emit_merge_heads(EmitContext& c) {
  const HeadsAttrs& a = c.attrs<HeadsAttrs>();
  std::vector<std::string> merged;
  for (int p = 0; p < c.num_inputs(); ++p) {
    const Shape& s = c.in_meta(p).shape;
    ::onnx::NodeProto* t = nullptr;
    const std::string seq = c.op("Transpose", {c.in(p)}, &t);
    attr_ints(*t, "perm",
              a.batch_first ? std::vector<int64_t>{0, 2, 1, 3} : std::vector<int64_t>{2, 0, 1, 3});
    const std::string flat = c.ints({0, 0, s[1] * s[3]});
    if (c.num_inputs() == 1) {
      c.add("Reshape", {seq, flat}, {c.out(0)});
      return;
    }
    merged.push_back(c.op("Reshape", {seq, flat}));
  }
  attr_i(c.add("Concat", merged, {c.out(0)}), "axis", -1);
}

// softmax over the last dim of scale * x; with causal, row i of each [L, S] matrix keeps only
// columns j <= i.
void emit_attention_softmax(EmitContext& c) {
  const AttentionSoftmaxAttrs& a = c.attrs<AttentionSoftmaxAttrs>();
  const DType t = c.in_meta(0).dtype;
  std::string x = c.in(0);
  if (a.scale != 1) x = c.op("Mul", {x, c.scalar(a.scale, t)});
  if (a.causal) {
    const ValueId v = c.in_value(0);
    const std::size_t rank = c.meta(v).shape.size();
    if (rank < 2 || c.varies(v, rank - 1) || c.varies(v, rank - 2))
      c.unsupported("a causal mask over a dim that follows the batch size");
    const int64_t l = c.meta(v).shape[rank - 2], s = c.meta(v).shape[rank - 1];
    std::vector<float> mask(static_cast<std::size_t>(l * s), 0.0f);
    for (int64_t i = 0; i < l; ++i) {
      for (int64_t j = i + 1; j < s; ++j)
        mask[static_cast<std::size_t>(i * s + j)] = -std::numeric_limits<float>::infinity();
    }
    x = c.op("Add", {x, c.constant(from_vector(mask, {l, s}).to(t), "causal_mask")});
  }
  attr_i(c.add("Softmax", {x}, {c.out(0)}), "axis", -1);
}

}  // namespace

void add_attention_emitters(EmitTable& t) {
  t[&op_split_heads()] = {emit_split_heads};
  t[&op_merge_heads()] = {emit_merge_heads};
  t[&op_attention_softmax()] = {emit_attention_softmax};
}

}  // namespace ath::onnx::detail
