// athanor run and athanor bench on models built here: symbolic dimensions (--batch, --shape),
// integer index inputs, several outputs (--output NAME=FILE, --output-dir), a bfloat16 output.
// The libonnx-testdata model and the refused inputs are in tests/cli/test_onnx_commands.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "athanor/cli/onnx_bench.h"
#include "athanor/cli/onnx_run.h"
#include "athanor/io/npy.h"
#include "athanor/ops/ops.h"
#include "io/temp_dir.h"
#include "onnx/model_builder.h"

namespace ath::onnx::testing {
namespace {

constexpr int kF = ::onnx::TensorProto::FLOAT;
constexpr int kI64 = ::onnx::TensorProto::INT64;
constexpr int kBF16 = ::onnx::TensorProto::BFLOAT16;

struct Result {
  int status;
  std::string out, err;
};

Result run(const cli::OnnxRunOptions& o) {
  std::ostringstream out, err;
  const int status = cli::onnx_run(o, out, err);
  return {status, out.str(), err.str()};
}

Result bench(const cli::OnnxBenchOptions& o) {
  std::ostringstream out, err;
  const int status = cli::onnx_bench_command(o, out, err);
  return {status, out.str(), err.str()};
}

TEST(OnnxCli, BatchFillsSymbolicFirstDimensions) {
  ModelBuilder m(13);
  m.input("x", kF, {"N", 4});
  const Tensor w = randn({4, 3});
  m.initializer("w", w);
  m.node("MatMul", {"x", "w"}, {"y"});
  m.output("y", kF);
  const std::string model = m.save("cli_matmul");

  const Result r = bench({.model = model, .batch = 3, .warmup = 1, .iterations = 2, .json = true});
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["inputs"][0]["type"], "float32[3,4]");
  EXPECT_EQ(j["batch"], 3);
  EXPECT_TRUE(j["diagnostics"].empty());

  // run: any batch the file has.
  ath::testing::TempDir dir;
  const Tensor x = randn({5, 4});
  write_npy(dir.file("x.npy"), x);
  const Result out =
      run({.model = model, .inputs = {dir.file("x.npy")}, .outputs = {"y=" + dir.file("y.npy")}});
  ASSERT_EQ(out.status, 0) << out.err;
  EXPECT_TRUE(allclose(read_npy(dir.file("y.npy")), matmul(x, w)));
}

// --profile: more runs after the timed ones with every node timed; the report names the ops,
// the JSON lists them with their time per run.
TEST(OnnxCli, ProfileReportsTimePerOp) {
  ModelBuilder m(13);
  m.input("x", kF, {"N", 64});
  m.initializer("w", randn({64, 64}));
  m.node("MatMul", {"x", "w"}, {"h"});
  m.node("Relu", {"h"}, {"y"});
  m.output("y", kF);
  const std::string model = m.save("cli_profile");
  const cli::OnnxBenchOptions o{.model = model,
                                .batch = 4,
                                .warmup = 1,
                                .iterations = 2,
                                .json = true,
                                .batch_parallel = "off",
                                .profile_runs = 5};
  const Result r = bench(o);
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["profile"].empty());
  int nodes = 0;
  for (const auto& op : j["profile"]) {
    EXPECT_GE(op["us_per_run"].get<double>(), 0.0);
    nodes += op["nodes"].get<int>();
  }
  EXPECT_GE(nodes, 1);
  EXPECT_EQ(j["runs"], 1 + 1 + 2 + 5);  // first, warmup, timed, profiled
  EXPECT_NE(j["profile_text"].get<std::string>().find("5 runs"), std::string::npos);

  cli::OnnxBenchOptions text = o;
  text.json = false;
  const Result report = bench(text);
  ASSERT_EQ(report.status, 0) << report.err;
  EXPECT_NE(report.out.find("costliest nodes"), std::string::npos) << report.out;

  // --disable-pass: the pass's node is gone from the profiled graph; an unknown name is refused.
  cli::OnnxBenchOptions plain = o;
  plain.disable_passes = {"pack_linear"};
  const Result unpacked = bench(plain);
  ASSERT_EQ(unpacked.status, 0) << unpacked.err;
  EXPECT_NE(r.out.find("linear_packed"), std::string::npos);
  EXPECT_EQ(unpacked.out.find("linear_packed"), std::string::npos) << unpacked.out;
  plain.disable_passes = {"no_such_pass"};
  const Result unknown = bench(plain);
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("no pass named 'no_such_pass'"), std::string::npos) << unknown.err;

  // Streams have no one graph to profile: refused with the option to use.
  cli::OnnxBenchOptions streams = o;
  streams.batch_parallel = "on";
  const Result refused = bench(streams);
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find("--batch-parallel off"), std::string::npos) << refused.err;
}

TEST(OnnxCli, OtherSymbolicDimensionsNeedAShape) {
  ModelBuilder m(13);
  m.input("tokens", kF, {"N", "S"});
  m.node("Relu", {"tokens"}, {"y"});
  m.output("y", kF);
  const std::string model = m.save("cli_relu_ns");
  const Result refused = bench({.model = model, .iterations = 1});
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find("input 'tokens' (float32[N,S]) has a symbolic dimension 1 ('S'): "
                             "set the whole shape with --shape tokens=..."),
            std::string::npos)
      << refused.err;
  const Result r = bench({.model = model, .shapes = {"tokens=2x7"}, .iterations = 1, .json = true});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["inputs"][0]["type"], "float32[2,7]");
}

TEST(OnnxCli, IntegerInputsAreSmallIndices) {
  // Gather from 8 rows: random indices must stay in [0, 8).
  ModelBuilder m(13);
  m.input("ids", kI64, {"N"});
  m.initializer("table", randn({8, 2}));
  m.node("Gather", {"table", "ids"}, {"y"});
  m.output("y", kF);
  const Result r =
      bench({.model = m.save("cli_gather"), .batch = 64, .iterations = 3, .json = true});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["inputs"][0]["type"], "int64[64]");
}

TEST(OnnxCli, SeveralOutputsByNameOrIntoADirectory) {
  ModelBuilder m(13);
  m.input("x", kF, {2, 3});
  m.node("Relu", {"x"}, {"relu/out"});
  m.node("Neg", {"x"}, {"neg:0"});
  m.node("Cast", {"x"}, {"half"});
  ModelBuilder::attr(m.graph().mutable_node(2), "to", int64_t{kBF16});
  m.output("relu/out", kF);
  m.output("neg:0", kF);
  m.output("half", kBF16);
  const std::string model = m.save("cli_three_outputs");
  ath::testing::TempDir dir;
  const Tensor x = randn({2, 3});
  write_npy(dir.file("x.npy"), x);
  const std::string in = "x=" + dir.file("x.npy");

  const Result one = run({.model = model, .inputs = {in}, .outputs = {dir.file("y.npy")}});
  EXPECT_EQ(one.status, 2);
  EXPECT_NE(one.err.find("the model has 3 outputs"), std::string::npos) << one.err;

  const Result all = run({.model = model,
                          .inputs = {in},
                          .outputs = {"neg:0=" + dir.file("negated.npy")},
                          .output_dir = dir.file("outs")});
  ASSERT_EQ(all.status, 0) << all.err;
  EXPECT_TRUE(equal(read_npy(dir.file("outs/relu_out.npy")), relu(x)));
  EXPECT_TRUE(equal(read_npy(dir.file("negated.npy")), neg(x)));
  EXPECT_FALSE(std::filesystem::exists(dir.file("outs/neg_0.npy")));
  // numpy has no bfloat16: that output is written as float32.
  const Tensor half = read_npy(dir.file("outs/half.npy"));
  EXPECT_EQ(half.dtype(), kFloat32);
  EXPECT_TRUE(equal(half, to_dtype(to_dtype(x, kBFloat16), kFloat32)));
  EXPECT_NE(all.out.find("output 'half': bfloat16[2,3] -> " + dir.file("outs/half.npy") +
                         " (as float32: numpy has no bfloat16)"),
            std::string::npos)
      << all.out;
}

}  // namespace
}  // namespace ath::onnx::testing
