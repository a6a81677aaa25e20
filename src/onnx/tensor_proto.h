// TensorProto <-> Tensor: the one place that reads ONNX tensor payloads (initializers, Constant
// attributes, the node tests' input_*.pb / output_*.pb), with every length checked against the
// declared shape before a byte is copied.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "athanor/core/dtype.h"
#include "athanor/tensor/tensor.h"
#include "onnx/onnx_pb.h"

namespace ath::onnx::detail {

// The athanor dtype of an ONNX TensorProto.DataType, or none (int8, uint16..., string, complex).
std::optional<DType> dtype_from_onnx(int elem_type);
int onnx_from_dtype(DType dtype);
// "float", "int8", "string": the ONNX spelling, for messages.
std::string onnx_type_name(int elem_type);

// Converts a TensorProto; `base_dir` resolves external data (a file named relative to the
// model's directory); `what` names the tensor in errors ("initializer 'w' of model.onnx").
// Malformed data (negative or absurd dims, a payload shorter than the shape, an external file
// outside base_dir or too short) throws FormatError; an unsupported element type throws
// NotImplementedError.
Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const std::filesystem::path& base_dir,
                         const std::string& what);

// Fills `proto` with t's dtype, shape and raw data (contiguous copy).
void tensor_to_proto(const Tensor& t, ::onnx::TensorProto& proto);

}  // namespace ath::onnx::detail
