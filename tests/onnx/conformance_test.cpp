// ONNX's backend node tests (Debian's libonnx-testdata) through InferenceSession: every test's
// outcome must be the one tests/onnx/node_expectations.txt records (tests not listed must pass),
// so the file stays true both ways. Prints the pass rate of the supported tests and a per-op
// table. ATH_ONNX_WRITE_EXPECTATIONS=<file> writes the file from this run instead.
#include <fmt/format.h>
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

TEST(OnnxConformance, NodeTestsMatchExpectations) {
  const fs::path suite = fs::path(ATH_ONNX_TESTDATA) / "node";
  // install-deps.sh installs libonnx-testdata: a missing suite is a broken setup, not a skip.
  ASSERT_TRUE(fs::is_directory(suite)) << suite << " is missing: run scripts/install-deps.sh";
  const auto expected = read_expectations(ATH_ONNX_EXPECTATIONS);
  std::vector<NodeTestResult> results;
  for (const fs::path& dir : list_tests(suite)) results.push_back(run_node_test(dir));

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
  for (const auto& [name, e] : expected) {
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
      "ONNX node tests: %zu; passed %d, failed %d, unsupported %d; pass rate of supported "
      "tests: %.1f%% (%d / %d)\n",
      results.size(), total.passed, total.failed, total.unsupported,
      supported > 0 ? 100.0 * total.passed / supported : 0.0, total.passed, supported);
  std::printf(
      "of the passed tests, %d replayed a recorded graph; the rest ran eagerly (a value "
      "read on the host mid-run)\n",
      replayed);

  if (const char* out = std::getenv("ATH_ONNX_WRITE_EXPECTATIONS")) {
    std::ofstream f(out);
    f << "# ONNX backend node tests (libonnx-testdata) that athanor does not pass, with why.\n"
         "# Format: test_name status reason. Tests not listed must pass; conformance_test.cpp\n"
         "# fails when any test's outcome differs from this file. Regenerate with\n"
         "#   ATH_ONNX_WRITE_EXPECTATIONS=$PWD/tests/onnx/node_expectations.txt \\\n"
         "#     build/tests/onnx/athanor_onnx_tests --gtest_filter=OnnxConformance.*\n";
    for (const auto& r : results) {
      if (r.status != "passed") f << r.name << " " << r.status << " " << r.reason << "\n";
    }
    return;
  }
  std::string msg;
  for (const auto& m : mismatches) msg += m + "\n";
  EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " tests differ from "
                                  << ATH_ONNX_EXPECTATIONS << ":\n"
                                  << msg;
}

}  // namespace
}  // namespace ath::onnx::testing
