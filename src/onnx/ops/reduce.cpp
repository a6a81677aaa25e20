// ONNX reductions. ReduceSum takes its axes as an input from opset 13 (with
// noop_with_empty_axes); the others take an attribute up to opset 17. No axes: all of them.
#include "../op_table.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"

namespace ath::onnx::detail {

namespace {

enum class Kind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

template <Kind K>
void lower_reduce(NodeContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axes;
  bool noop = false;
  if (K == Kind::Sum && c.opset() >= 13) {
    if (c.has(1)) axes = c.ints(1);
    noop = axes.empty() && c.attr_int("noop_with_empty_axes", 0) != 0;
  } else {
    axes = c.attr_ints("axes");
  }
  if (noop) {
    c.out(0, x);
    return;
  }
  const bool keep = c.attr_int("keepdims", 1) != 0;
  DimList dims;
  for (int64_t a : axes) dims.push_back(c.axis(a, x.dim()));
  if (dims.empty()) {
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  }
  Tensor y;
  switch (K) {
    case Kind::Sum:
      y = sum(x, dims, keep);
      break;
    case Kind::Mean:
      y = mean(x, dims, keep);
      break;
    case Kind::Max:
      y = amax(x, dims, keep);
      break;
    case Kind::Min:
      y = amin(x, dims, keep);
      break;
    case Kind::Prod:
      y = prod(x, dims, keep);
      break;
    case Kind::L1:
      y = sum(abs(x), dims, keep);
      break;
    case Kind::L2:
      y = sqrt(sum(mul(x, x), dims, keep));
      break;
    case Kind::LogSum:
      y = log(sum(x, dims, keep));
      break;
    case Kind::LogSumExp:
      y = logsumexp(x, dims, keep);
      break;
    case Kind::SumSquare:
      y = sum(mul(x, x), dims, keep);
      break;
  }
  c.out(0, like_type(y, x));
}

}  // namespace

void add_reduce_ops(OpTable& t) {
  t["ReduceSum"] = {lower_reduce<Kind::Sum>, 1u << 1, 1, kNumericTypes};
  t["ReduceMean"] = {lower_reduce<Kind::Mean>, 0, 1, kNumericTypes};
  t["ReduceMax"] = {lower_reduce<Kind::Max>, 0, 1, kNumericTypes};
  t["ReduceMin"] = {lower_reduce<Kind::Min>, 0, 1, kNumericTypes};
  t["ReduceProd"] = {lower_reduce<Kind::Prod>, 0, 1, kNumericTypes};
  t["ReduceL1"] = {lower_reduce<Kind::L1>, 0, 1, kNumericTypes};
  t["ReduceL2"] = {lower_reduce<Kind::L2>, 0, 1, kFloatTypes};
  t["ReduceLogSum"] = {lower_reduce<Kind::LogSum>, 0, 1, kFloatTypes};
  t["ReduceLogSumExp"] = {lower_reduce<Kind::LogSumExp>, 0, 1, kFloatTypes};
  t["ReduceSumSquare"] = {lower_reduce<Kind::SumSquare>, 0, 1, kNumericTypes};
}

}  // namespace ath::onnx::detail
