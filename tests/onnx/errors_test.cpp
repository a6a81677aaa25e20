// What the loader and run() say about bad models and bad inputs: typed errors naming the file,
// the node or the input, never a crash.
#include <gtest/gtest.h>

#include <fstream>

#include "athanor/core/error.h"
#include "athanor/onnx/session.h"
#include "athanor/ops/ops.h"
#include "onnx/model_builder.h"

namespace ath::onnx::testing {
namespace {

constexpr int kF = ::onnx::TensorProto::FLOAT;

template <class E>
std::string error_of(const std::string& path) {
  try {
    InferenceSession s(path);
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong error type: ") + e.what();
  }
  return "no error";
}

TEST(OnnxErrors, EveryUnsupportedNodeIsListed) {
  ModelBuilder m(13);
  m.input("x", kF, {2});
  m.node("Relu", {"x"}, {"a"});
  m.node("FancyOp", {"a"}, {"b"}, "first_fancy");
  m.node("AnotherFancyOp", {"b"}, {"y"}, "second_fancy");
  m.output("y", kF);
  const std::string msg = error_of<NotImplementedError>(m.save("unsupported"));
  EXPECT_NE(msg.find("2 unsupported node(s)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FancyOp(opset 13) float node 'first_fancy'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("AnotherFancyOp(opset 13) ? node 'second_fancy'"), std::string::npos) << msg;
}

TEST(OnnxErrors, UnsupportedElementTypeIsNamed) {
  ModelBuilder m(13);
  m.input("x", ::onnx::TensorProto::INT8, {2});
  m.node("Relu", {"x"}, {"y"});
  m.output("y", ::onnx::TensorProto::INT8);
  const std::string msg = error_of<NotImplementedError>(m.save("int8"));
  EXPECT_NE(msg.find("int8"), std::string::npos) << msg;
}

TEST(OnnxErrors, DanglingValueNamesTheNode) {
  ModelBuilder m(13);
  m.input("x", kF, {2});
  m.node("Add", {"x", "nowhere"}, {"y"}, "adder");
  m.output("y", kF);
  const std::string msg = error_of<FormatError>(m.save("dangling"));
  EXPECT_NE(msg.find("'adder'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'nowhere'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.onnx"), std::string::npos) << msg;
}

TEST(OnnxErrors, CycleIsAFormatError) {
  ModelBuilder m(13);
  m.input("x", kF, {2});
  m.node("Add", {"x", "b"}, {"a"}, "n1");
  m.node("Relu", {"a"}, {"b"}, "n2");
  m.output("b", kF);
  const std::string msg = error_of<FormatError>(m.save("cycle"));
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
}

TEST(OnnxErrors, ValueDefinedTwice) {
  ModelBuilder m(13);
  m.input("x", kF, {2});
  m.node("Relu", {"x"}, {"y"});
  m.node("Neg", {"x"}, {"y"});
  m.output("y", kF);
  EXPECT_NE(error_of<FormatError>(m.save("twice")).find("already defined"), std::string::npos);
}

TEST(OnnxErrors, BadProtobufIsAFormatError) {
  const auto path = std::filesystem::temp_directory_path() / "athanor_onnx_garbage.onnx";
  std::ofstream(path, std::ios::binary) << "\x0a\xff\xff\xff\xff garbage";
  const std::string msg = error_of<FormatError>(path.string());
  EXPECT_NE(msg.find("athanor_onnx_garbage.onnx"), std::string::npos) << msg;
}

TEST(OnnxErrors, InitializerShorterThanItsShape) {
  ModelBuilder m(13);
  m.input("x", kF, {4});
  auto* w = m.initializer("w", from_vector<float>({1, 2, 3, 4}));
  w->set_dims(0, 1000);  // claims 1000 floats, holds 4
  m.node("Mul", {"x", "w"}, {"y"});
  m.output("y", kF);
  const std::string msg = error_of<FormatError>(m.save("short_init"));
  EXPECT_NE(msg.find("initializer 'w'"), std::string::npos) << msg;
}

TEST(OnnxErrors, AbsurdShapeIsRefused) {
  ModelBuilder m(13);
  m.input("x", kF, {4});
  auto* w = m.initializer("w", from_vector<float>({1}));
  w->clear_dims();
  for (int i = 0; i < 4; ++i) w->add_dims(int64_t{1} << 20);
  m.node("Mul", {"x", "w"}, {"y"});
  m.output("y", kF);
  EXPECT_NE(error_of<FormatError>(m.save("absurd")).find("initializer 'w'"), std::string::npos);
}

TEST(OnnxErrors, ExternalDataMayNotLeaveTheModelsDirectory) {
  ModelBuilder m(13);
  m.input("x", kF, {1});
  auto* w = m.initializer("w", from_vector<float>({1}));
  w->clear_raw_data();
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value("../../etc/passwd");
  m.node("Mul", {"x", "w"}, {"y"});
  m.output("y", kF);
  EXPECT_NE(error_of<FormatError>(m.save("escape")).find("leaves the model's directory"),
            std::string::npos);
}

TEST(OnnxErrors, RunChecksInputNamesTypesAndShapes) {
  ModelBuilder m(13);
  m.input("image", kF, {"N", 3, 8});
  m.node("Relu", {"image"}, {"y"});
  m.output("y", kF);
  InferenceSession s(m.save("run_checks"));
  auto message = [&](const std::vector<std::pair<std::string, Tensor>>& in) {
    try {
      s.run(in);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no ValueError");
  };
  EXPECT_NE(message({{"img", randn({1, 3, 8})}}).find("no input 'img' (its inputs: image)"),
            std::string::npos);
  const std::string dtype = message({{"image", zeros({1, 3, 8}, kFloat64)}});
  EXPECT_NE(dtype.find("input 'image' expects float32[N,3,8], got float64[1,3,8]"),
            std::string::npos)
      << dtype;
  const std::string shape = message({{"image", randn({1, 4, 8})}});
  EXPECT_NE(shape.find("expects float32[N,3,8], got float32[1,4,8]"), std::string::npos) << shape;
  EXPECT_NE(message({}).find("input 'image' (float32[N,3,8]) is missing"), std::string::npos);
}

}  // namespace
}  // namespace ath::onnx::testing
