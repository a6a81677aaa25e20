// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear for uint8 (athanor has no int8
// tensors): float arithmetic, rounding half to even, saturation to [0, 255].
#include "../op_table.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

// A per-axis parameter (1-D, opset 13's axis) reshaped to broadcast along `axis` of x.
Tensor along_axis(NodeContext& c, const Tensor& p, const Tensor& x) {
  if (p.dim() == 0 || p.numel() == 1) return reshape(p, {});
  const int64_t axis = c.axis(c.attr_int("axis", 1), x.dim());
  Shape s(static_cast<std::size_t>(x.dim()), 1);
  s[static_cast<std::size_t>(axis)] = p.numel();
  return reshape(p, s);
}

Tensor saturate_u8(const Tensor& v) {
  return to_dtype(clamp(round(v), std::optional<Scalar>(0.0), std::optional<Scalar>(255.0)),
                  DType::UInt8);
}

void lower_quantize(NodeContext& c) {
  const Tensor& x = c.in(0);
  if (c.has(2) && c.in(2).dtype() != DType::UInt8) c.unsupported("QuantizeLinear to non-uint8");
  Tensor v = div(to_dtype(x, kFloat32), to_dtype(along_axis(c, c.in(1), x), kFloat32));
  if (c.has(2)) v = add(round(v), to_dtype(along_axis(c, c.in(2), x), kFloat32));
  c.out(0, saturate_u8(v));
}

void lower_dequantize(NodeContext& c) {
  const Tensor& x = c.in(0);
  Tensor v = to_dtype(x, kFloat32);
  if (c.has(2)) v = sub(v, to_dtype(along_axis(c, c.in(2), x), kFloat32));
  c.out(0, mul(v, to_dtype(along_axis(c, c.in(1), x), kFloat32)));
}

void lower_dynamic_quantize(NodeContext& c) {
  const Tensor x = to_dtype(c.in(0), kFloat32);
  Tensor zero = zeros({}, kFloat32);
  Tensor hi = maximum(amax(x), zero), lo = minimum(amin(x), zero);
  Tensor scale = div(sub(hi, lo), 255.0);
  Tensor zp = saturate_u8(neg(div(lo, scale)));
  c.out(0, saturate_u8(add(round(div(x, scale)), to_dtype(zp, kFloat32))));
  if (c.wants(1)) c.out(1, scale);
  if (c.wants(2)) c.out(2, zp);
}

}  // namespace

void add_quantize_ops(OpTable& t) {
  t["QuantizeLinear"] = {lower_quantize, 0, 10, kFloatTypes | type_bit(6)};
  t["DequantizeLinear"] = {lower_dequantize, 0, 10, type_bit(2) | type_bit(6)};
  t["DynamicQuantizeLinear"] = {lower_dynamic_quantize, 0, 11, kFloatTypes};
}

}  // namespace ath::onnx::detail
