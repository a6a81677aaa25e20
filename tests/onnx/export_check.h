// What the export tests share: a temporary path per model, reading an exported file back, and
// libonnx's own checks (the checker, then strict shape inference).
//
//   const std::string path = temp_model("gru");
//   export_model(gru, {randn({2, 5, 3})}, path);
//   check_with_libonnx(path);
//   EXPECT_EQ(op_counts(read_model(path)).at("GRU"), 1);
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "onnx/checker.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

namespace ath::onnx::testing {

// A fresh path in the temporary directory (an earlier file of that name removed).
inline std::string temp_model(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "athanor_onnx_export";
  std::filesystem::create_directories(dir);
  const std::filesystem::path p = dir / (name + ".onnx");
  std::filesystem::remove(p);
  return p.string();
}

inline ::onnx::ModelProto read_model(const std::string& path) {
  ::onnx::ModelProto m;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&in)) << path;
  return m;
}

// libonnx's checker, then shape inference with errors raised (ONNX 1.12's strict mode).
inline void check_with_libonnx(const std::string& path) {
  ::onnx::ModelProto m = read_model(path);
  EXPECT_NO_THROW(::onnx::checker::check_model(m)) << path;
  const ::onnx::ShapeInferenceOptions opts(/*check_type_val=*/true, /*strict_mode_val=*/1);
  EXPECT_NO_THROW(
      ::onnx::shape_inference::InferShapes(m, ::onnx::OpSchemaRegistry::Instance(), opts))
      << path;
}

// Node count per ONNX op type.
inline std::map<std::string, int> op_counts(const ::onnx::ModelProto& m) {
  std::map<std::string, int> r;
  for (const auto& n : m.graph().node()) ++r[n.op_type()];
  return r;
}

}  // namespace ath::onnx::testing
