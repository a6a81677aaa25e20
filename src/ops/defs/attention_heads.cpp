// split_heads and merge_heads: multi-head attention's layout changes as single copies, each the
// other's backward (so gradients flow as one dense tensor, never scattered into zeros per part).
#include "athanor/ops/attention.h"
#include "athanor/ops/dispatch.h"

namespace ath {

namespace {

constexpr int kMaxParts = 3;

void check_heads(const HeadsAttrs& a, int64_t parts) {
  ATH_CHECK(a.heads >= 1, ValueError, "heads must be at least 1, got {}", a.heads);
  ATH_CHECK(parts >= 1 && parts <= kMaxParts, ValueError, "parts must be 1, 2 or 3, got {}", parts);
}

OutputSpec split_spec(TensorSpan in, const HeadsAttrs& a) {
  check_heads(a, a.parts);
  const Tensor& x = in[0];
  ATH_CHECK(x.dim() == 3, ShapeError, "expected a 3-D projection [d0, d1, features], got shape {}",
            to_string(x.shape()));
  ATH_CHECK(x.size(2) % (a.parts * a.heads) == 0, ShapeError,
            "features {} do not split into {} parts of {} heads (shape {})", x.size(2), a.parts,
            a.heads, to_string(x.shape()));
  const int64_t b = a.batch_first ? x.size(0) : x.size(1);
  const int64_t len = a.batch_first ? x.size(1) : x.size(0);
  const int64_t d = x.size(2) / (a.parts * a.heads);
  OutputSpec spec;
  for (int i = 0; i < kMaxParts; ++i) {
    spec.outputs.push_back({i < a.parts ? Shape{b, a.heads, len, d} : Shape{0}, x.dtype()});
  }
  spec.kernel_dtype = x.dtype();
  return spec;
}

OutputSpec merge_spec(TensorSpan in, const HeadsAttrs& a) {
  const int64_t parts = static_cast<int64_t>(in.size());
  check_heads(a, parts);
  const Tensor& p0 = in[0];
  ATH_CHECK(p0.dim() == 4 && p0.size(1) == a.heads, ShapeError,
            "expected parts [B, heads = {}, L, d], got shape {}", a.heads, to_string(p0.shape()));
  for (const Tensor& p : in) {
    ATH_CHECK(p.shape() == p0.shape() && p.dtype() == p0.dtype(), ShapeError,
              "parts differ: {} ({}) and {} ({})", to_string(p0.shape()), dtype_name(p0.dtype()),
              to_string(p.shape()), dtype_name(p.dtype()));
  }
  const int64_t b = p0.size(0), len = p0.size(2), w = parts * a.heads * p0.size(3);
  Shape out = a.batch_first ? Shape{b, len, w} : Shape{len, b, w};
  return OutputSpec{{{out, p0.dtype()}}, p0.dtype()};
}

}  // namespace

const Op<HeadsAttrs>& op_split_heads() {
  static const auto& op = define_op<HeadsAttrs>({
      .name = "split_heads",
      .kind = OpKind::Opaque,
      .num_outputs = kMaxParts,
      .infer = split_spec,
      .backward =
          [](BackwardContext& ctx, const HeadsAttrs& a) {
            std::vector<Tensor> grads;
            for (int i = 0; i < a.parts; ++i) grads.push_back(ctx.grad_output(i));
            ctx.set_grad_input(0, merge_heads(grads, a.batch_first));
          },
  });
  return op;
}

const Op<HeadsAttrs>& op_merge_heads() {
  static const auto& op = define_op<HeadsAttrs>({
      .name = "merge_heads",
      .kind = OpKind::Opaque,
      .num_inputs = -1,
      .infer = merge_spec,
      .backward =
          [](BackwardContext& ctx, const HeadsAttrs& a) {
            HeadsAttrs split = a;
            split.parts = ctx.num_inputs();
            const Tensor gout[1] = {ctx.grad_output(0)};
            Outputs g = call(op_split_heads(), TensorSpan(gout), split);
            for (int i = 0; i < ctx.num_inputs(); ++i) {
              if (ctx.needs_grad(i)) ctx.set_grad_input(i, g[static_cast<std::size_t>(i)]);
            }
          },
  });
  return op;
}

std::vector<Tensor> split_heads(const Tensor& x, int64_t heads, int64_t parts, bool batch_first) {
  const Tensor in[1] = {x};
  Outputs out = call(op_split_heads(), TensorSpan(in),
                     HeadsAttrs{.heads = heads, .parts = parts, .batch_first = batch_first});
  return std::vector<Tensor>(out.begin(), out.begin() + parts);
}

Tensor merge_heads(const std::vector<Tensor>& parts, bool batch_first) {
  const int64_t heads = with_op_context(op_merge_heads(), [&] {
    ATH_CHECK(!parts.empty() && parts[0].dim() == 4, ShapeError,
              "expected 1 to 3 parts of shape [B, heads, L, d]");
    return parts[0].size(1);
  });
  return call1(
      op_merge_heads(), TensorSpan(parts),
      HeadsAttrs{
          .heads = heads, .parts = static_cast<int64_t>(parts.size()), .batch_first = batch_first});
}

}  // namespace ath
