#include "athanor/onnx/tensor_file.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "athanor/core/error.h"
#include "tensor_proto.h"

namespace ath::onnx {

NamedTensor read_tensor_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ATH_CHECK(in.good(), IOError, "{}: cannot open the tensor file", path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ::onnx::TensorProto proto;
  ATH_CHECK(bytes.size() < (std::size_t{1} << 31) &&
                proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())),
            FormatError, "{}: not an ONNX TensorProto (the protobuf does not parse)", path);
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  return {proto.name(), detail::tensor_from_proto(proto, dir, path)};
}

void write_tensor_file(const std::string& path, const Tensor& t, const std::string& name) {
  ::onnx::TensorProto proto;
  detail::tensor_to_proto(t, proto);
  proto.set_name(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ATH_CHECK(out.good() && proto.SerializeToOstream(&out), IOError, "{}: cannot write", path);
}

}  // namespace ath::onnx
