// ONNX TensorProto files (the .pb tensors of ONNX's test data, `onnx.numpy_helper.from_array`
// written with SerializeToString) read into and written from athanor tensors.
//
//   #include "athanor/onnx/tensor_file.h"
//   const std::string set = "/usr/share/libonnx-testdata/data/node/test_relu/test_data_set_0/";
//   onnx::NamedTensor in = onnx::read_tensor_file(set + "input_0.pb");
//   onnx::write_tensor_file("x.pb", in.tensor, in.name);
//   assert(equal(onnx::read_tensor_file("x.pb").tensor, in.tensor));
#pragma once

#include <string>

#include "athanor/tensor/tensor.h"

namespace ath::onnx {

struct NamedTensor {
  std::string name;  // the TensorProto's name (may be empty)
  Tensor tensor;
};

// Throws IOError when the file cannot be read, FormatError when it is not a TensorProto or its
// data does not match its shape, NotImplementedError for element types athanor lacks.
NamedTensor read_tensor_file(const std::string& path);
void write_tensor_file(const std::string& path, const Tensor& t, const std::string& name = {});

}  // namespace ath::onnx
