// athanor run and athanor bench in-process, on a model from Debian's libonnx-testdata: run's
// output against the test data's expected output, bench's report and JSON, and the refused
// inputs and options (status 2 with a message, never a crash). Models with symbolic dimensions,
// several outputs and index inputs are in tests/onnx/cli_commands_test.cpp (they are built with
// the protobuf API).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "athanor/athanor.h"
#include "athanor/cli/app.h"
#include "athanor/io/npy.h"
#include "athanor/onnx/tensor_file.h"
#include "io/temp_dir.h"
#include "support/run_cli.h"

namespace ath::cli {
namespace {

const std::string kConv = "/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d/";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CliOnnx, RunConv2dMatchesTheTestData) {
  testing::TempDir dir;
  const std::string x = dir.file("x.npy"), y = dir.file("y.npy");
  write_npy(x, onnx::read_tensor_file(kConv + "test_data_set_0/input_0.pb").tensor);
  const CmdResult r =
      athanor({"run", kConv + "model.onnx", "--input", "0=" + x, "--output", y, "--threads", "1"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "output '3': float32[2,4,5,4] -> " + y + "\n");
  EXPECT_EQ(r.err, "");
  const Tensor want = onnx::read_tensor_file(kConv + "test_data_set_0/output_0.pb").tensor;
  const Tensor got = read_npy(y);
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_LT(max(abs(got - want)).item<double>(), 1e-4);

  // The same by name, into a directory, and with the one-input shorthand; no output option:
  // printed only.
  const CmdResult named = athanor({"run", kConv + "model.onnx", "--input", x, "--output-dir",
                                   dir.file("outs"), "--output", "3=" + dir.file("named.npy")});
  ASSERT_EQ(named.status, 0) << named.err;
  EXPECT_TRUE(equal(read_npy(dir.file("named.npy")), got));
  EXPECT_FALSE(std::filesystem::exists(dir.file("outs/3.npy")));  // --output NAME wins
  ASSERT_EQ(
      athanor({"run", kConv + "model.onnx", "--input", x, "--output-dir", dir.file("outs")}).status,
      0);
  EXPECT_TRUE(equal(read_npy(dir.file("outs/3.npy")), got));
  const CmdResult printed = athanor({"run", kConv + "model.onnx", "--input", x});
  EXPECT_EQ(printed.status, 0);
  EXPECT_EQ(printed.out, "output '3': float32[2,4,5,4]\n");
}

TEST(CliOnnx, RunRefusesBadInputsWithStatusTwo) {
  testing::TempDir dir;
  const std::string model = kConv + "model.onnx";
  const std::string x = dir.file("x.npy");
  write_npy(x, randn({2, 3, 7, 5}));
  write_npy(dir.file("short.npy"), randn({2, 3, 7}));
  write_npy(dir.file("f64.npy"), randn({2, 3, 7, 5}, {.dtype = kFloat64}));
  testing::write_bytes(dir.file("text.npy"), {'h', 'i', '\n'});
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"run", dir.file("missing.onnx"), "--input", x}, "missing.onnx"},
           {{"run", x, "--input", x}, x},  // a .npy file is no model
           {{"run", model, "--input", "image=" + x},
            "--input 'image=" + x +
                "': the model has no input 'image' (its inputs: 0 "
                "float32[2,3,7,5])"},
           {{"run", model, "--input", "0=" + dir.file("nope.npy")}, "nope.npy"},
           {{"run", model, "--input", "0=" + dir.file("short.npy")},
            "input '0' expects float32[2,3,7,5], got float32[2,3,7]"},
           {{"run", model, "--input", "0=" + dir.file("f64.npy")},
            "input '0' expects float32[2,3,7,5], got float64[2,3,7,5]"},
           {{"run", model, "--input", "0=" + dir.file("text.npy")}, "not a .npy file"},
           {{"run", model}, "input '0' (float32[2,3,7,5]) is missing"},
           {{"run", model, "--input", x, "--output", "logits=" + dir.file("y.npy")},
            "the model has no output 'logits' (its outputs: 3)"},
           {{"run", model, "--input", "0="}, "no file after '='"},
           {{"run", model, "--input", x, "--threads", "two"}, "--threads"}}) {
    const CmdResult r = athanor(args);
    EXPECT_EQ(r.status, 2) << args[1] << " " << r.out;
    EXPECT_EQ(r.err.rfind("athanor: error: ", 0), 0u) << r.err;
    EXPECT_TRUE(contains(r.err, message)) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("y.npy")));
}

TEST(CliOnnx, BenchPrintsAReportOrOneJsonObject) {
  const std::string model = kConv + "model.onnx";
  const CmdResult j =
      athanor({"bench", model, "--json", "--iterations", "5", "--warmup", "2", "--threads", "1"});
  ASSERT_EQ(j.status, 0) << j.err;
  const nlohmann::json r = nlohmann::json::parse(j.out);
  for (const char* key : {"p50_ms", "p90_ms", "p99_ms", "min_ms", "max_ms", "mean_ms",
                          "throughput_per_s", "first_run_ms", "batch", "threads", "iterations",
                          "traces", "replays", "runs", "eager_runs", "inputs"}) {
    EXPECT_TRUE(r.contains(key)) << key;
  }
  EXPECT_EQ(r["iterations"], 5);
  EXPECT_EQ(r["threads"], 1);
  EXPECT_EQ(r["batch"], 2);  // the input's fixed first dimension
  EXPECT_EQ(r["traces"], 1);
  EXPECT_EQ(r["replays"], 7);
  EXPECT_EQ(r["inputs"][0]["type"], "float32[2,3,7,5]");
  EXPECT_EQ(r["inputs"][0]["source"], "random");
  const double min = r["min_ms"], p50 = r["p50_ms"], p99 = r["p99_ms"], max = r["max_ms"];
  EXPECT_TRUE(0 < min && min <= p50 && p50 <= p99 && p99 <= max) << j.out;
  EXPECT_NEAR(r["throughput_per_s"].get<double>(), 2 * 1000.0 / r["mean_ms"].get<double>(), 1e-6);
  EXPECT_GT(r["first_run_ms"].get<double>(), 0);

  testing::TempDir dir;
  write_npy(dir.file("x.npy"), randn({2, 3, 7, 5}));
  const CmdResult h = athanor({"bench", model, "--duration", "0.05", "--warmup", "0", "--input",
                               "0=" + dir.file("x.npy"), "--batch", "4"});
  ASSERT_EQ(h.status, 0) << h.err;
  for (const char* part : {"input '0': float32[2,3,7,5] (", "first run: ", "latency (ms): min ",
                           "throughput: ", "session: ", "note: --batch 4 set no dimension"}) {
    EXPECT_TRUE(contains(h.out, part)) << part << "\n" << h.out;
  }
}

// --plan: the first command writes the plan, the next one (a new process, usually) replays it.
TEST(CliOnnx, RunAndBenchSaveAndLoadAPlan) {
  testing::TempDir dir;
  const std::string plan = dir.file("conv.plan");
  write_npy(dir.file("x.npy"), onnx::read_tensor_file(kConv + "test_data_set_0/input_0.pb").tensor);
  const CmdResult run = athanor({"run", kConv + "model.onnx", "--input", dir.file("x.npy"),
                                 "--output", dir.file("y.npy"), "--plan", plan});
  ASSERT_EQ(run.status, 0) << run.err;
  const CmdResult bench = athanor({"bench", kConv + "model.onnx", "--json", "--iterations", "2",
                                   "--warmup", "0", "--plan", plan});
  ASSERT_EQ(bench.status, 0) << bench.err;
  const nlohmann::json r = nlohmann::json::parse(bench.out);
  EXPECT_EQ(r["plan_graphs_loaded"], 1) << bench.out;
  EXPECT_EQ(r["traces"], 0);
  EXPECT_EQ(r["plan_writes"], 0);
}

TEST(CliOnnx, BenchRefusesBadOptionsWithStatusTwo) {
  const std::string model = kConv + "model.onnx";
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"bench", model, "--iterations", "0"}, "--iterations must be at least 1"},
           {{"bench", model, "--iterations", "3", "--duration", "1"}, "excludes"},
           {{"bench", model, "--duration", "-1"}, "--duration must be positive"},
           {{"bench", model, "--batch", "0"}, "--batch must be at least 1"},
           {{"bench", model, "--shape", "x=1x2"}, "the model has no input 'x'"},
           {{"bench", model, "--shape", "0=2x3x7xfive"}, "not a shape like 1x3x224x224"},
           {{"bench", model, "--shape", "0=2x3x7"}, "expects float32[2,3,7,5], got float32[2,3,7]"},
           {{"bench", "/nonexistent/model.onnx"}, "/nonexistent/model.onnx"}}) {
    const CmdResult r = athanor(args);
    EXPECT_EQ(r.status, 2) << args[2];
    EXPECT_EQ(r.err.rfind("athanor: error: ", 0), 0u) << r.err;
    EXPECT_TRUE(contains(r.err, message)) << r.err;
  }
}

}  // namespace
}  // namespace ath::cli
