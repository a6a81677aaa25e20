// Runs ONNX backend test directories (model.onnx + test_data_set_*/input_*.pb, output_*.pb)
// through InferenceSession and classifies each: passed, failed (wrong result or an error), or
// unsupported (the loader or a lowering refused it with NotImplementedError).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ath::onnx::testing {

struct NodeTestResult {
  std::string name;              // the directory's name: "test_abs"
  std::string status;            // "passed", "failed", "unsupported"
  std::string reason;            // one line; empty when passed
  std::vector<std::string> ops;  // the op types the model uses
  bool replayed = false;         // the second run replayed a recorded graph (not eager)
};

NodeTestResult run_node_test(const std::filesystem::path& dir);

// Every test directory under `suite`, sorted by name.
std::vector<std::filesystem::path> list_tests(const std::filesystem::path& suite);

// "test_name status reason" lines: the expected status of each test not expected to pass.
std::map<std::string, std::pair<std::string, std::string>> read_expectations(
    const std::filesystem::path& file);

}  // namespace ath::onnx::testing
