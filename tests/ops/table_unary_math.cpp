// Op-table rows: the floating-result unary ops (exp ... erf), abs, sign and rounding.
#include <cmath>
#include <limits>
#include <numbers>

#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<DType> kAllFloats{kFloat32, kFloat64, kBFloat16, kFloat16};

using UnaryFn = Tensor (*)(const Tensor&);

// One floating-result unary op: its domain for random floats and for integer inputs.
struct FloatCase {
  const char* op;
  UnaryFn fn;
  double (*ref)(double);
  double lo, hi;     // float inputs, away from poles and branch cuts
  int64_t ilo, ihi;  // integer inputs [ilo, ihi)
};

// Adds the standard rows for one case: all float dtypes, strided, 0-dim, 0-size, integer and
// bool inputs (computed in float32).
void add_float_case_rows(std::vector<Row>& rows, const FloatCase& c) {
  UnaryFn fn = c.fn;
  auto call = [fn](const Tensors& x) { return fn(x[0]); };
  auto ref = unary_ref(c.ref);
  rows.push_back(
      Row(c.op).inputs({In::uniform({3, 4}, c.lo, c.hi)}).call(call).ref(ref).dtypes(kAllFloats));
  rows.push_back(
      Row(c.op, "strided").inputs({In::uniform({2, 5}, c.lo, c.hi).strided()}).call(call).ref(ref));
  rows.push_back(Row(c.op, "zero_dim").inputs({In::uniform({}, c.lo, c.hi)}).call(call).ref(ref));
  rows.push_back(
      Row(c.op, "zero_size").inputs({In::uniform({2, 0}, c.lo, c.hi)}).call(call).ref(ref));
  rows.push_back(Row(c.op, "int")
                     .inputs({In::ints({6}, c.ilo, c.ihi, kInt32)})
                     .call(call)
                     .ref(ref)
                     .tol(1e-6, 1e-6));
  if (c.ilo <= 0 && c.ihi >= 2) {
    rows.push_back(Row(c.op, "bool").inputs({In::bools({4})}).call(call).ref(ref).tol(1e-6, 1e-6));
  }
}

double sigmoid_ref(double v) { return 1 / (1 + std::exp(-v)); }

// Round half to even, written out (not nearbyint) so the reference is independent.
double round_half_even(double v) {
  double f = std::floor(v);
  double d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return std::fmod(f, 2) == 0 ? f : f + 1;
}

}  // namespace

ATH_OP_ROWS(unary_math) {
  const FloatCase cases[] = {
      {"exp", exp, [](double v) { return std::exp(v); }, -3, 3, -3, 4},
      {"exp2", exp2, [](double v) { return std::exp2(v); }, -3, 3, -3, 4},
      {"log", log, [](double v) { return std::log(v); }, 0.2, 4, 1, 6},
      {"log2", log2, [](double v) { return std::log2(v); }, 0.2, 4, 1, 6},
      {"log1p", log1p, [](double v) { return std::log1p(v); }, -0.7, 3, 0, 5},
      {"expm1", expm1, [](double v) { return std::expm1(v); }, -3, 3, -3, 4},
      {"sqrt", sqrt, [](double v) { return std::sqrt(v); }, 0.2, 4, 0, 9},
      {"rsqrt", rsqrt, [](double v) { return 1 / std::sqrt(v); }, 0.2, 4, 1, 9},
      {"reciprocal", reciprocal, [](double v) { return 1 / v; }, 0.3, 3, 1, 5},
      {"sin", sin, [](double v) { return std::sin(v); }, -4, 4, -4, 4},
      {"cos", cos, [](double v) { return std::cos(v); }, -4, 4, -4, 4},
      {"tan", tan, [](double v) { return std::tan(v); }, -1.2, 1.2, -1, 2},
      {"asin", asin, [](double v) { return std::asin(v); }, -0.9, 0.9, 0, 1},
      {"acos", acos, [](double v) { return std::acos(v); }, -0.9, 0.9, 0, 1},
      {"atan", atan, [](double v) { return std::atan(v); }, -3, 3, -3, 4},
      {"tanh", tanh, [](double v) { return std::tanh(v); }, -3, 3, -3, 4},
      {"sigmoid", sigmoid, sigmoid_ref, -5, 5, -5, 5},
      {"erf", erf, [](double v) { return std::erf(v); }, -2.5, 2.5, -2, 3},
  };
  std::vector<Row> rows;
  for (const FloatCase& c : cases) add_float_case_rows(rows, c);

  // IEEE special values: no fast-math shortcut may lose them.
  rows.push_back(Row("exp", "special")
                     .inputs({In::fixed({4}, {kInf, -kInf, kNaN, 0.0})})
                     .call([](const Tensors& x) { return exp(x[0]); })
                     .ref(unary_ref([](double v) { return std::exp(v); }))
                     .dtypes(kAllFloats)
                     .no_gradcheck());
  rows.push_back(Row("log", "special")
                     .inputs({In::fixed({4}, {0.0, -1.0, kInf, kNaN})})
                     .call([](const Tensors& x) { return log(x[0]); })
                     .ref(unary_ref([](double v) { return std::log(v); }))
                     .dtypes(kAllFloats)
                     .no_gradcheck());
  rows.push_back(Row("sqrt", "special")
                     .inputs({In::fixed({3}, {-1.0, 0.0, kInf})})
                     .call([](const Tensors& x) { return sqrt(x[0]); })
                     .ref(unary_ref([](double v) { return std::sqrt(v); }))
                     .dtypes(kAllFloats)
                     .no_gradcheck());
  rows.push_back(Row("sigmoid", "saturated")  // no 0 * inf = NaN at the tails
                     .inputs({In::fixed({4}, {-200.0, -90.0, 90.0, 200.0})})
                     .call([](const Tensors& x) { return sigmoid(x[0]); })
                     .ref(unary_ref(sigmoid_ref))
                     .dtypes(kAllFloats)
                     .no_gradcheck());
  rows.push_back(Row("tanh", "method")
                     .inputs({In::randn({3})})
                     .call([](const Tensors& x) { return x[0].tanh().sigmoid().exp(); })
                     .ref(unary_ref([](double v) { return std::exp(sigmoid_ref(std::tanh(v))); })));
  rows.push_back(Row("sqrt", "method")
                     .inputs({In::positive({3})})
                     .call([](const Tensors& x) { return x[0].sqrt().log(); })
                     .ref(unary_ref([](double v) { return std::log(std::sqrt(v)); })));

  // ---- abs, sign ----
  auto abs_call = [](const Tensors& x) { return abs(x[0]); };
  auto abs_ref = unary_ref([](double v) { return std::fabs(v); });
  auto sign_call = [](const Tensors& x) { return sign(x[0]); };
  auto sign_ref = unary_ref([](double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; });
  rows.push_back(Row("abs")
                     .inputs({In::randn({3, 4}).strided()})
                     .call(abs_call)
                     .ref(abs_ref)
                     .dtypes(kAllFloats)
                     .bad("bool input", [] { abs(zeros({2}, kBool)); }));
  rows.push_back(Row("abs", "method")
                     .inputs({In::randn({})})
                     .call([](const Tensors& x) { return x[0].abs(); })
                     .ref(abs_ref));
  rows.push_back(
      Row("abs", "int").inputs({In::ints({6}, -9, 9)}).call(abs_call).ref(abs_ref).exact());
  rows.push_back(Row("abs", "uint8")
                     .inputs({In::ints({6}, 0, 250, kUInt8)})
                     .call(abs_call)
                     .ref(abs_ref)
                     .exact());
  rows.push_back(Row("abs", "zero_size").inputs({In::randn({0})}).call(abs_call).ref(abs_ref));
  rows.push_back(
      Row("sign").inputs({In::randn({3, 4})}).call(sign_call).ref(sign_ref).dtypes(kAllFloats));
  rows.push_back(Row("sign", "nan_and_zeros")  // torch.sign(NaN) is 0
                     .inputs({In::fixed({4}, {kNaN, -0.0, 0.0, -kInf})})
                     .call(sign_call)
                     .ref(unary_ref([](double v) { return v > 0   ? 1.0
                                                          : v < 0 ? -1.0
                                                                  : 0.0; }))
                     .dtypes(kAllFloats)
                     .no_gradcheck());
  rows.push_back(
      Row("sign", "int").inputs({In::ints({2, 3}, -3, 3)}).call(sign_call).ref(sign_ref).exact());
  rows.push_back(
      Row("sign", "bool").inputs({In::bools({5})}).call(sign_call).ref(sign_ref).exact());

  // ---- rounding: zero gradients; identity on integers; bool refused ----
  struct RoundCase {
    const char* op;
    UnaryFn fn;
    double (*ref)(double);
  };
  const RoundCase rounding[] = {
      {"floor", floor, [](double v) { return std::floor(v); }},
      {"ceil", ceil, [](double v) { return std::ceil(v); }},
      {"trunc", trunc, [](double v) { return std::trunc(v); }},
      {"round", [](const Tensor& x) { return round(x); }, round_half_even},
  };
  for (const RoundCase& c : rounding) {
    UnaryFn fn = c.fn;
    auto call = [fn](const Tensors& x) { return fn(x[0]); };
    rows.push_back(Row(c.op)
                       .inputs({In::uniform({3, 4}, -4, 4).strided()})
                       .call(call)
                       .ref(unary_ref(c.ref))
                       .dtypes(kAllFloats)
                       .bad("bool input", [fn] { fn(zeros({2}, kBool)); }));
    rows.push_back(Row(c.op, "int")
                       .inputs({In::ints({5}, -50, 50, kInt32)})
                       .call(call)
                       .ref(unary_ref(c.ref))
                       .exact());
    rows.push_back(
        Row(c.op, "zero_dim").inputs({In::uniform({}, -4, 4)}).call(call).ref(unary_ref(c.ref)));
    rows.push_back(Row(c.op, "halves")
                       .inputs({In::fixed({8}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, kInf, kNaN})})
                       .call(call)
                       .ref(unary_ref(c.ref))
                       .dtypes(kAllFloats)
                       .no_gradcheck());
  }
  rows.push_back(Row("round", "decimals")
                     .inputs({In::fixed({4}, {1.26, -2.34, 0.049, 7.0})})
                     .call([](const Tensors& x) { return round(x[0], 1); })
                     .ref(unary_ref([](double v) { return round_half_even(v * 10) / 10; }))
                     .tol(1e-6, 1e-6)
                     .bad("decimals on an integer tensor", [] { round(zeros({2}, kInt64), 1); }));
  rows.push_back(Row("round", "negative_decimals")
                     .inputs({In::fixed({3}, {123.0, -157.0, 1234.0})})
                     .call([](const Tensors& x) { return round(x[0], -1); })
                     .ref(unary_ref([](double v) { return round_half_even(v / 10) * 10; })));
  return rows;
}

}  // namespace ath::testing
