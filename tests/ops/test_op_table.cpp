// Runs every row of the op table (tests/ops/table_*.cpp) and checks the registry is covered.
#include <gtest/gtest.h>

#include <set>

#include "athanor/ops/op.h"
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {
namespace {

bool is_float_input(const In& in) { return in.kind != In::Kind::Int && in.kind != In::Kind::Bool; }

// Tolerances grow with the dtype's rounding error; the row's own are for float32/float64.
std::pair<double, double> tolerance(const Row& row, DType t) {
  switch (t) {
    case kBFloat16:
      return {std::max(row.rtol, 2e-2), std::max(row.atol, 2e-2)};
    case kFloat16:
      return {std::max(row.rtol, 2e-3), std::max(row.atol, 2e-3)};
    default:
      return {row.rtol, row.atol};
  }
}

class OpTable : public ::testing::TestWithParam<Row> {};

TEST_P(OpTable, ForwardMatchesFloat64Reference) {
  const Row& row = GetParam();
  Tensors base = make_inputs(row);
  for (DType t : row.types) {
    SCOPED_TRACE(fmt::format("dtype {}", dtype_name(t)));
    Tensors in = base;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (is_float_input(row.ins[i])) {
        Tensor c = base[i].to(t);
        if (row.ins[i].noncontiguous && !c.shape().empty()) {  // keep the strided layout
          Shape big = c.shape();
          big.back() *= 2;
          Tensor buf = zeros(big, t);
          Tensor v = buf.slice(-1, 0, {}, 2);
          v.copy_(c);
          c = v;
        }
        in[i] = c;
      }
    }
    Tensors in64;  // the reference sees exactly the (rounded) values the op sees
    for (const Tensor& x : in) in64.push_back(is_floating(x.dtype()) ? x.to(kFloat64) : x);
    Tensor out = row.fn(in);
    Tensor want = row.reference(in64);
    ASSERT_EQ(out.shape(), want.shape())
        << "shape " << to_string(out.shape()) << " vs reference " << to_string(want.shape());
    std::vector<double> got = values(out), exp = values(want);
    auto [rtol, atol] = tolerance(row, is_floating(out.dtype()) ? t : kFloat64);
    for (std::size_t k = 0; k < got.size(); ++k) {
      if (std::isnan(exp[k])) {
        EXPECT_TRUE(std::isnan(got[k])) << "element " << k;
        continue;
      }
      if (std::isinf(exp[k])) {
        EXPECT_EQ(got[k], exp[k]) << "element " << k;
        continue;
      }
      ASSERT_LE(std::abs(got[k] - exp[k]), atol + rtol * std::abs(exp[k]))
          << "element " << k << ": got " << got[k] << ", reference " << exp[k];
    }
  }
}

TEST_P(OpTable, GradientMatchesFiniteDifferences) {
  const Row& row = GetParam();
  const OpDef* op = find_op(row.op);
  if (!row.gradcheck || (op != nullptr && !op->differentiable))
    GTEST_SKIP() << "not differentiable";
  Tensors in = make_inputs(row);
  bool any = false;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (is_float_input(row.ins[i]) && row.ins[i].differentiable) {
      in[i].requires_grad_();
      any = true;
    }
  }
  if (!any) GTEST_SKIP() << "no differentiable input";
  auto fn = [&](const std::vector<Tensor>& x) { return std::vector<Tensor>{row.fn(x)}; };
  GradcheckResult r = gradcheck(fn, in, {.atol = row.grad_atol, .rtol = row.grad_rtol});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST_P(OpTable, BadInputThrowsErrorNamingTheOp) {
  const Row& row = GetParam();
  if (row.bad_calls.empty()) GTEST_SKIP() << "no bad-input cases in this row";
  for (const auto& [what, call] : row.bad_calls) {
    try {
      call();
      ADD_FAILURE() << "no error for: " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(row.op), std::string::npos)
          << "error for '" << what << "' does not name op '" << row.op << "': " << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, OpTable, ::testing::ValuesIn(all_rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.id(); });

// The registry walk: every op must have a shape rule, a gradient or an explicit
// not-differentiable mark, a float64 (reference-dtype) CPU kernel unless it is a view, and a row.
TEST(OpRegistry, EveryOpIsDefinedAndTested) {
  std::set<std::string> with_rows;
  for (const Row& r : all_rows()) with_rows.insert(r.op);
  for (const auto& [op, where] : covered_elsewhere()) with_rows.insert(op);
  for (const OpDef* op : all_ops()) {
    SCOPED_TRACE(op->name);
    EXPECT_TRUE(op->has_shape_rule()) << op->name << " has no shape rule";
    EXPECT_TRUE(op->differentiable || !op->not_differentiable_reason.empty())
        << op->name << " has neither a gradient nor a not-differentiable reason";
    if (op->kind != OpKind::View) {
      bool any_kernel = false;
      for (DType t : kAllTypes) any_kernel = any_kernel || op->has_kernel(DeviceType::CPU, t);
      EXPECT_TRUE(any_kernel) << op->name << " has no CPU kernel";
    }
    EXPECT_TRUE(with_rows.count(op->name)) << op->name << " has no row in the op table";
  }
}

}  // namespace
}  // namespace ath::testing
