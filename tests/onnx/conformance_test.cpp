// ONNX's backend node tests (Debian's libonnx-testdata) through InferenceSession: every test's
// outcome must be the one tests/onnx/node_expectations.txt records (tests not listed must pass),
// so the file stays true both ways. Prints the pass rate of the supported tests and a per-op
// table. ATH_ONNX_WRITE_EXPECTATIONS=1 rewrites the files from this run instead. The
// pytorch-operator, pytorch-converted and simple suites are checked the same way against
// pytorch_simple_expectations.txt.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "onnx/node_conformance.h"

namespace ath::onnx::testing {
namespace {

namespace fs = std::filesystem;

struct Counts {
  int passed = 0, failed = 0, unsupported = 0;
};

// Runs every test of `suites` (directories under the test data) and checks each outcome against
// `expectations`; tests are named "test_x" for one suite, "suite/test_x" for several.
void check_suites(const std::vector<std::string>& suites, const fs::path& expectations) {
  const auto expected = read_expectations(expectations);
  std::vector<NodeTestResult> results;
  for (const std::string& name : suites) {
    const fs::path suite = fs::path(ATH_ONNX_TESTDATA) / name;
    // install-deps.sh installs libonnx-testdata: a missing suite is a broken setup, not a skip.
    ASSERT_TRUE(fs::is_directory(suite)) << suite << " is missing: run scripts/install-deps.sh";
    for (const fs::path& dir : list_tests(suite)) {
      results.push_back(run_node_test(dir));
      if (suites.size() > 1) results.back().name = name + "/" + results.back().name;
    }
  }

  Counts total;
  int replayed = 0;
  std::map<std::string, Counts> per_op;
  std::vector<std::string> mismatches;
  for (const auto& r : results) {
    Counts& t = total;
    (r.status == "passed" ? t.passed : r.status == "failed" ? t.failed : t.unsupported)++;
    for (const auto& op : r.ops) {
      Counts& c = per_op[op];
      (r.status == "passed" ? c.passed : r.status == "failed" ? c.failed : c.unsupported)++;
    }
    replayed += r.replayed ? 1 : 0;
    auto it = expected.find(r.name);
    const std::string want = it == expected.end() ? "passed" : it->second.first;
    if (want != r.status)
      mismatches.push_back(
          fmt::format("{}: expected {}, got {} {}", r.name, want, r.status, r.reason));
  }
  for (const auto& entry : expected) {
    const std::string& name = entry.first;
    if (!std::any_of(results.begin(), results.end(), [&](const auto& r) { return r.name == name; }))
      mismatches.push_back(
          fmt::format("{}: listed in the expectations but not in the suite", name));
  }

  std::string table = "op: passed / failed / unsupported\n";
  for (const auto& [op, c] : per_op)
    table += fmt::format("  {:<28} {:>3} / {:>3} / {:>3}\n", op, c.passed, c.failed, c.unsupported);
  const int supported = total.passed + total.failed;
  std::printf("%s", table.c_str());
  std::printf(
      "ONNX %s tests: %zu; passed %d, failed %d, unsupported %d; pass rate of supported "
      "tests: %.1f%% (%d / %d)\n",
      fmt::format("{}", fmt::join(suites, " + ")).c_str(), results.size(), total.passed,
      total.failed, total.unsupported, supported > 0 ? 100.0 * total.passed / supported : 0.0,
      total.passed, supported);
  std::printf(
      "of the passed tests, %d replayed a recorded graph; the rest ran eagerly (a value "
      "read on the host mid-run)\n",
      replayed);

  if (std::getenv("ATH_ONNX_WRITE_EXPECTATIONS") != nullptr) {
    std::ofstream f(expectations);
    f << "# ONNX backend tests (libonnx-testdata: " << fmt::format("{}", fmt::join(suites, ", "))
      << ") that athanor does not pass, with why.\n"
         "# Format: test_name status reason. Tests not listed must pass; conformance_test.cpp\n"
         "# fails when any test's outcome differs from this file. Regenerate with\n"
         "#   ATH_ONNX_WRITE_EXPECTATIONS=1 build/tests/onnx/athanor_onnx_tests \\\n"
         "#     --gtest_filter=OnnxConformance.*\n";
    for (const auto& r : results) {
      if (r.status != "passed") f << r.name << " " << r.status << " " << r.reason << "\n";
    }
    return;
  }
  std::string msg;
  for (const auto& m : mismatches) msg += m + "\n";
  EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " tests differ from " << expectations
                                  << ":\n"
                                  << msg;
}

TEST(OnnxConformance, NodeTestsMatchExpectations) {
  check_suites({"node"}, fs::path(ATH_ONNX_EXPECTATIONS_DIR) / "node_expectations.txt");
}

// The models PyTorch exported (operators and small modules) and the "simple" suite.
TEST(OnnxConformance, PyTorchAndSimpleSuitesMatchExpectations) {
  check_suites({"pytorch-operator", "pytorch-converted", "simple"},
               fs::path(ATH_ONNX_EXPECTATIONS_DIR) / "pytorch_simple_expectations.txt");
}

}  // namespace
}  // namespace ath::onnx::testing
