// Integer and quantized linear algebra on uint8 (MatMulInteger, ConvInteger, QLinearMatMul,
// QLinearConv) and BitShift. The products run in float64 on the registry's matmul and
// convolution: every uint8 product and sum of fewer than 2^37 of them is exact there, so the
// int32 results equal integer arithmetic's. Requantization rounds half to even and saturates.
#include "../op_table.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

Tensor f64(const Tensor& t) { return to_dtype(t, kFloat64); }

// x - zero_point in float64; a per-row (matmul A) or per-channel zero point broadcasts along
// `axis` of x.
Tensor centered(NodeContext& c, int x_input, int zp_input, int64_t axis) {
  Tensor x = f64(c.in(x_input));
  if (!c.has(zp_input)) return x;
  Tensor zp = f64(c.in(zp_input));
  if (zp.numel() > 1) {
    Shape s(static_cast<std::size_t>(x.dim()), 1);
    s[static_cast<std::size_t>(c.axis(axis, x.dim()))] = zp.numel();
    zp = reshape(zp, s);
  }
  return sub(x, zp);
}

Tensor requantize(const Tensor& acc, const Tensor& scale, const Tensor& zero_point) {
  Tensor v = add(round(mul(acc, scale)), f64(zero_point));
  return to_dtype(clamp(v, std::optional<Scalar>(0.0), std::optional<Scalar>(255.0)), DType::UInt8);
}

void lower_matmul_integer(NodeContext& c) {
  c.out(0, to_dtype(matmul(centered(c, 0, 2, -2), centered(c, 1, 3, -1)), DType::Int32));
}

void lower_conv_integer(NodeContext& c) {
  c.out(0, to_dtype(conv_node(c, centered(c, 0, 2, 1), centered(c, 1, 3, 0), std::nullopt),
                    DType::Int32));
}

void lower_qlinear_matmul(NodeContext& c) {
  // a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp
  if (c.in(7).dtype() != DType::UInt8) c.unsupported("QLinearMatMul to non-uint8");
  Tensor acc = matmul(centered(c, 0, 2, -2), centered(c, 3, 5, -1));
  Tensor scale = div(mul(f64(c.in(1)), f64(c.in(4))), f64(c.in(6)));
  c.out(0, requantize(acc, scale, c.in(7)));
}

void lower_qlinear_conv(NodeContext& c) {
  // x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B
  if (c.in(7).dtype() != DType::UInt8) c.unsupported("QLinearConv to non-uint8");
  Tensor acc = conv_node(c, centered(c, 0, 2, 1), centered(c, 3, 5, 0), std::nullopt);
  if (c.has(8)) {
    Shape s(static_cast<std::size_t>(acc.dim()), 1);
    s[1] = c.in(8).numel();
    acc = add(acc, reshape(f64(c.in(8)), s));
  }
  Tensor w_scale = f64(c.in(4));
  if (w_scale.numel() > 1) {  // per output channel
    Shape s(static_cast<std::size_t>(acc.dim()), 1);
    s[1] = w_scale.numel();
    w_scale = reshape(w_scale, s);
  }
  c.out(0, requantize(acc, div(mul(f64(c.in(1)), w_scale), f64(c.in(6))), c.in(7)));
}

// uint8 shifts as multiplication and division by 2^y, wrapping left shifts modulo 256.
void lower_bit_shift(NodeContext& c) {
  const Tensor x = to_dtype(c.in(0), kInt64), y = to_dtype(c.in(1), kInt64);
  Tensor p = pow(full({}, 2, kInt64), y);
  const std::string dir = c.attr_string("direction", "");
  Tensor r;
  if (dir == "LEFT") {
    r = remainder(mul(x, p), Scalar(256));
  } else if (dir == "RIGHT") {
    r = trunc(div(x, p));
  } else {
    ATH_THROW(ValueError, "BitShift direction '{}'", dir);
  }
  c.out(0, to_dtype(r, DType::UInt8));
}

}  // namespace

void add_integer_ops(OpTable& t) {
  t["MatMulInteger"] = {lower_matmul_integer, 0, 10, type_bit(2)};
  t["ConvInteger"] = {lower_conv_integer, 0, 10, type_bit(2)};
  t["QLinearMatMul"] = {lower_qlinear_matmul, 0, 10, type_bit(2)};
  t["QLinearConv"] = {lower_qlinear_conv, 0, 10, type_bit(2)};
  t["BitShift"] = {lower_bit_shift, 0, 11, type_bit(2)};
}

}  // namespace ath::onnx::detail
