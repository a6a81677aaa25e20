// Op-table rows: eq ne lt le gt ge, logical_and/or/xor/not, isnan/isinf/isfinite (bool results).
#include <cmath>
#include <limits>

#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<DType> kAllFloats{kFloat32, kFloat64, kBFloat16, kFloat16};

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);
using ScalarFn = Tensor (*)(const Tensor&, const Scalar&);

struct CompareCase {
  const char* op;
  BinaryFn fn;
  ScalarFn scalar_fn;
  bool (*ref)(double, double);
};

double as01(bool b) { return b ? 1.0 : 0.0; }
bool truthy(double v) { return v != 0; }  // NaN is nonzero: true

}  // namespace

ATH_OP_ROWS(comparison) {
  const CompareCase cases[] = {
      {"eq", eq, eq, [](double a, double b) { return a == b; }},
      {"ne", ne, ne, [](double a, double b) { return a != b; }},
      {"lt", lt, lt, [](double a, double b) { return a < b; }},
      {"le", le, le, [](double a, double b) { return a <= b; }},
      {"gt", gt, gt, [](double a, double b) { return a > b; }},
      {"ge", ge, ge, [](double a, double b) { return a >= b; }},
  };
  std::vector<Row> rows;
  for (const CompareCase& c : cases) {
    BinaryFn fn = c.fn;
    ScalarFn sfn = c.scalar_fn;
    auto pred = c.ref;
    auto ref = binary_ref([pred](double a, double b) { return as01(pred(a, b)); });
    // Small integers as floats so equal pairs occur; NaN compares false (ne: true).
    rows.push_back(Row(c.op)
                       .inputs({In::fixed({2, 4}, {0, 1, 2, kNaN, -1, 2, 0.5, kInf}),
                                In::fixed({4}, {0, 2, 2, kNaN})})
                       .call([fn](const Tensors& x) { return fn(x[0], x[1]); })
                       .ref(ref)
                       .dtypes(kAllFloats)
                       .exact()
                       .bad("non-broadcastable shapes", [fn] {
                         fn(ones({2, 3}), ones({2}));
                       }));
    rows.push_back(Row(c.op, "int_mixed_dtypes")
                       .inputs({In::ints({3, 4}, -2, 3, kInt32), In::ints({4}, -2, 3, kUInt8)})
                       .call([fn](const Tensors& x) { return fn(x[0], x[1]); })
                       .ref(ref)
                       .exact());
    rows.push_back(Row(c.op, "int_vs_float")  // compares in float
                       .inputs({In::ints({6}, -3, 3), In::fixed({}, {0.5})})
                       .call([fn](const Tensors& x) { return fn(x[0], x[1]); })
                       .ref(ref)
                       .exact());
    rows.push_back(Row(c.op, "scalar")
                       .inputs({In::ints({2, 3}, -3, 3).strided()})
                       .call([sfn](const Tensors& x) { return sfn(x[0], 1); })
                       .ref(unary_ref([pred](double a) { return as01(pred(a, 1)); }))
                       .exact());
    rows.push_back(Row(c.op, "float_scalar_on_int")  // 2 vs 1.5 compares in float32
                       .inputs({In::ints({5}, -3, 3)})
                       .call([sfn](const Tensors& x) { return sfn(x[0], 1.5); })
                       .ref(unary_ref([pred](double a) { return as01(pred(a, 1.5)); }))
                       .exact());
    rows.push_back(Row(c.op, "bool_zero_size")
                       .inputs({In::bools({0, 3}), In::bools({3})})
                       .call([fn](const Tensors& x) { return fn(x[0], x[1]); })
                       .ref(ref)
                       .exact());
  }

  struct LogicalCase {
    const char* op;
    BinaryFn fn;
    bool (*ref)(bool, bool);
  };
  const LogicalCase logical[] = {
      {"logical_and", logical_and, [](bool a, bool b) { return a && b; }},
      {"logical_or", logical_or, [](bool a, bool b) { return a || b; }},
      {"logical_xor", logical_xor, [](bool a, bool b) { return a != b; }},
  };
  for (const LogicalCase& c : logical) {
    BinaryFn fn = c.fn;
    auto pred = c.ref;
    auto ref = binary_ref([pred](double a, double b) { return as01(pred(truthy(a), truthy(b))); });
    rows.push_back(Row(c.op)
                       .inputs({In::bools({3, 4}), In::bools({4})})
                       .call([fn](const Tensors& x) { return fn(x[0], x[1]); })
                       .ref(ref)
                       .exact()
                       .bad("non-broadcastable shapes", [fn] { fn(ones({2}), ones({3})); }));
    rows.push_back(Row(c.op, "mixed_dtypes")  // float (with NaN) against int
                       .inputs({In::fixed({4}, {0.0, 0.5, kNaN, 0.0}).strided(),
                                In::ints({2, 4}, 0, 2, kInt32)})
                       .call([fn](const Tensors& x) { return fn(x[0], x[1]); })
                       .ref(ref)
                       .dtypes(kAllFloats)
                       .exact());
    rows.push_back(Row(c.op, "zero_dim")
                       .inputs({In::ints({}, 0, 2), In::ints({3}, -1, 2, kUInt8)})
                       .call([fn](const Tensors& x) { return fn(x[0], x[1]); })
                       .ref(ref)
                       .exact());
  }
  auto not_ref = unary_ref([](double v) { return as01(!truthy(v)); });
  rows.push_back(Row("logical_not")
                     .inputs({In::fixed({5}, {0.0, -0.0, 1.5, kNaN, kInf})})
                     .call([](const Tensors& x) { return logical_not(x[0]); })
                     .ref(not_ref)
                     .dtypes(kAllFloats)
                     .exact());
  rows.push_back(Row("logical_not", "int_bool")
                     .inputs({In::ints({2, 3}, -1, 2).strided()})
                     .call([](const Tensors& x) { return logical_not(logical_not(x[0])); })
                     .ref(unary_ref([](double v) { return as01(truthy(v)); }))
                     .exact());

  struct ClassifyCase {
    const char* op;
    Tensor (*fn)(const Tensor&);
    bool (*ref)(double);
  };
  const ClassifyCase classify[] = {
      {"isnan", isnan, [](double v) { return std::isnan(v); }},
      {"isinf", isinf, [](double v) { return std::isinf(v); }},
      {"isfinite", isfinite, [](double v) { return std::isfinite(v); }},
  };
  for (const ClassifyCase& c : classify) {
    auto fn = c.fn;
    auto pred = c.ref;
    auto ref = unary_ref([pred](double v) { return as01(pred(v)); });
    rows.push_back(Row(c.op)
                       .inputs({In::fixed({2, 3}, {kNaN, kInf, -kInf, 0.0, -1e30, 65504})})
                       .call([fn](const Tensors& x) { return fn(x[0]); })
                       .ref(ref)
                       .dtypes(kAllFloats)
                       .exact());
    rows.push_back(Row(c.op, "strided")
                       .inputs({In::fixed({3}, {kNaN, 1.0, -kInf}).strided()})
                       .call([fn](const Tensors& x) { return fn(x[0]); })
                       .ref(ref)
                       .exact());
    rows.push_back(Row(c.op, "int")  // never NaN or infinite
                       .inputs({In::ints({4}, -9, 9, kInt32)})
                       .call([fn](const Tensors& x) { return fn(x[0]); })
                       .ref(ref)
                       .exact());
  }
  return rows;
}

}  // namespace ath::testing
