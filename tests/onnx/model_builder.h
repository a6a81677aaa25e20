// Builds small ONNX models in tests with the protobuf API and writes them to a temporary file.
//
//   ModelBuilder m(13);
//   m.input("x", ::onnx::TensorProto::FLOAT, {"N", 4});
//   m.initializer("w", randn({4, 3}));
//   m.node("MatMul", {"x", "w"}, {"y"});
//   m.output("y", ::onnx::TensorProto::FLOAT);
//   InferenceSession s(m.save("mlp"));
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "athanor/tensor/tensor.h"
#include "onnx/onnx_pb.h"
#include "onnx/tensor_proto.h"

namespace ath::onnx::testing {

using Dim = std::variant<int64_t, std::string>;

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset) {
    model_.set_ir_version(8);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
  }
  ::onnx::ModelProto& proto() { return model_; }
  ::onnx::GraphProto& graph() { return *model_.mutable_graph(); }

  void input(const std::string& name, int type, const std::vector<Dim>& dims) {
    value(graph().add_input(), name, type, dims);
  }
  void output(const std::string& name, int type) {
    auto* v = graph().add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(type);
  }
  ::onnx::TensorProto* initializer(const std::string& name, const Tensor& t) {
    auto* p = graph().add_initializer();
    detail::tensor_to_proto(t, *p);
    p->set_name(name);
    return p;
  }
  ::onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = {}) {
    auto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + std::to_string(graph().node_size()) : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }
  static void attr(::onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(::onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  // Writes the model into a fresh temporary directory; returns the file's path.
  std::string save(const std::string& name) const {
    // One directory per process: CTest runs each test case as its own process, in parallel,
    // and two cases saving models of the same name must not overwrite each other's.
    const auto dir = std::filesystem::temp_directory_path() /
                     ("athanor_onnx_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto path = dir / "model.onnx";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    model_.SerializeToOstream(&out);
    return path.string();
  }

 private:
  static void value(::onnx::ValueInfoProto* v, const std::string& name, int type,
                    const std::vector<Dim>& dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    auto* shape = tt->mutable_shape();
    for (const Dim& d : dims) {
      auto* dim = shape->add_dim();
      if (std::holds_alternative<int64_t>(d)) {
        dim->set_dim_value(std::get<int64_t>(d));
      } else {
        dim->set_dim_param(std::get<std::string>(d));
      }
    }
  }
  ::onnx::ModelProto model_;
};

}  // namespace ath::onnx::testing
