// The ONNX ops the importer supports: per op type, the lowering (athanor ops over the node's
// inputs), which inputs must be known when the graph is built, and the opsets and element types
// it handles. One family per file in ops/; op_table.cpp gathers them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "node_context.h"

namespace ath::onnx::detail {

using LowerFn = void (*)(NodeContext&);

// Element-type sets, as bit masks over ONNX TensorProto.DataType values.
inline constexpr uint32_t type_bit(int t) { return uint32_t{1} << t; }
inline constexpr uint32_t kFloatTypes =
    type_bit(1) | type_bit(10) | type_bit(11) | type_bit(16);  // float, float16, double, bfloat16
inline constexpr uint32_t kIntTypes = type_bit(2) | type_bit(6) | type_bit(7);  // u8, i32, i64
inline constexpr uint32_t kNumericTypes = kFloatTypes | kIntTypes;
inline constexpr uint32_t kAllTypes = kNumericTypes | type_bit(9);  // and bool

struct OnnxOp {
  LowerFn lower = nullptr;
  uint32_t host_inputs = 0;    // bit i: input i is read on the host (shapes, axes, pads...)
  int min_opset = 1;           // the first opset whose semantics the lowering implements
  uint32_t types = kAllTypes;  // element types accepted for input 0 (or output 0 without inputs)
  // The outputs depend only on the inputs' shapes (Shape, Size): known when the graph is built,
  // whatever the inputs' values.
  bool shape_only = false;
};

using OpTable = std::map<std::string, OnnxOp, std::less<>>;

const OpTable& op_table();

// Each family adds its ops (ops/*.cpp).
void add_elementwise_ops(OpTable& t);
void add_activation_ops(OpTable& t);
void add_shape_ops(OpTable& t);
void add_indexing_ops(OpTable& t);
void add_reduce_ops(OpTable& t);
void add_nn_ops(OpTable& t);
void add_pad_ops(OpTable& t);
void add_loss_ops(OpTable& t);
void add_resize_ops(OpTable& t);
void add_rnn_ops(OpTable& t);
void add_signal_ops(OpTable& t);
void add_quantize_ops(OpTable& t);
void add_einsum_ops(OpTable& t);
void add_integer_ops(OpTable& t);
void add_grid_sample_ops(OpTable& t);
void add_det_ops(OpTable& t);
void add_unique_ops(OpTable& t);
void add_nms_ops(OpTable& t);

// x padded along axis d: `before`/`after` elements (negative: cropped), mode "constant"
// (with `value`), "edge" or "reflect".
Tensor pad_axis(const Tensor& x, int64_t d, int64_t before, int64_t after, const std::string& mode,
                const Scalar& value);

// Conv's computation with the node's geometry attributes (auto_pad, pads, strides, dilations,
// group), for Conv and the integer convolutions.
Tensor conv_node(NodeContext& c, const Tensor& x, const Tensor& w, std::optional<Tensor> bias);

// Checks a shape computed from a model's data (ConstantOfShape, Expand, Tile, Resize, Range...)
// before anything is allocated: non-negative dims, at most 2^31 elements (ValueError).
void check_output_size(const Shape& shape);

// r converted to x's element type (ONNX keeps the input type where athanor promotes).
Tensor like_type(const Tensor& r, const Tensor& x);

// The largest opset the importer knows (ONNX 1.12: 17).
inline constexpr int kMaxOpset = 17;

}  // namespace ath::onnx::detail
