// The op table: one row per (op, case). Each row says how to build inputs, how to call the op,
// and how to compute the expected result naively in float64. The table test checks, per row:
//   - forward in every listed dtype against the float64 reference (dtype-scaled tolerances),
//   - the gradient of every differentiable input against central finite differences,
//   - each bad call throws ath::Error whose message names the op.
// A coverage test walks the registry and fails for any op with no row.
//
// Adding rows for a family (see tests/ops/table_*.cpp):
//
//   ATH_OP_ROWS(my_family) {
//     return {
//       Row("neg").inputs({In::randn({2, 3})}).call([](auto& x) { return neg(x[0]); })
//           .ref(unary_ref([](double v) { return -v; })),
//     };
//   }
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "athanor/athanor.h"

namespace ath::testing {

using Tensors = std::vector<Tensor>;
using OpFn = std::function<Tensor(const Tensors&)>;
using RefFn = std::function<Tensor(const Tensors&)>;  // gets float64 inputs, returns float64

// How one input is made. Values are deterministic (seeded by the row's name).
struct In {
  enum class Kind { Normal, Uniform, Positive, Int, Bool, Fixed };
  Shape shape;
  Kind kind = Kind::Normal;
  double lo = -1, hi = 1;      // Uniform/Positive/Int range (Int: [lo, hi))
  bool differentiable = true;  // gradcheck it (floating kinds only)
  bool noncontiguous = false;  // built as a transposed/strided view of a larger tensor
  DType int_dtype = kInt64;    // for Int/Bool kinds: the dtype the op receives
  std::vector<double> values;  // Fixed

  static In randn(Shape s) { return In{.shape = s}; }
  static In uniform(Shape s, double lo, double hi) {
    return In{.shape = s, .kind = Kind::Uniform, .lo = lo, .hi = hi};
  }
  static In positive(Shape s, double lo = 0.5, double hi = 2.0) {
    return In{.shape = s, .kind = Kind::Positive, .lo = lo, .hi = hi};
  }
  static In ints(Shape s, int64_t lo, int64_t hi, DType t = kInt64) {
    return In{.shape = s,
              .kind = Kind::Int,
              .lo = double(lo),
              .hi = double(hi),
              .differentiable = false,
              .int_dtype = t};
  }
  static In bools(Shape s) {
    return In{.shape = s, .kind = Kind::Bool, .differentiable = false, .int_dtype = kBool};
  }
  static In fixed(Shape s, std::vector<double> v) {
    return In{.shape = s, .kind = Kind::Fixed, .values = std::move(v)};
  }
  In strided() const {
    In c = *this;
    c.noncontiguous = true;
    return c;
  }
  In no_grad() const {
    In c = *this;
    c.differentiable = false;
    return c;
  }
  In as(DType t) const {
    In c = *this;
    c.int_dtype = t;
    return c;
  }
};

struct Row {
  explicit Row(std::string op_name, std::string label = "")
      : op(std::move(op_name)), name(std::move(label)) {}
  Row& inputs(std::vector<In> v) {
    ins = std::move(v);
    return *this;
  }
  Row& call(OpFn f) {
    fn = std::move(f);
    return *this;
  }
  Row& ref(RefFn f) {
    reference = std::move(f);
    return *this;
  }
  // Floating dtypes to run forward in (floating inputs are converted); default f32 and f64.
  Row& dtypes(std::vector<DType> d) {
    types = std::move(d);
    return *this;
  }
  Row& tol(double r, double a) {
    rtol = r;
    atol = a;
    return *this;
  }
  Row& grad_tol(double r, double a) {
    grad_rtol = r;
    grad_atol = a;
    return *this;
  }
  Row& no_gradcheck() {
    gradcheck = false;
    return *this;
  }
  // A call that must throw ath::Error naming the op.
  Row& bad(std::string what, std::function<void()> f) {
    bad_calls.emplace_back(std::move(what), std::move(f));
    return *this;
  }
  // Compare the output exactly (integer/bool results, indices).
  Row& exact() {
    rtol = 0;
    atol = 0;
    return *this;
  }

  std::string op, name;
  std::vector<In> ins;
  OpFn fn;
  RefFn reference;
  std::vector<DType> types{kFloat32, kFloat64};
  double rtol = 1e-5, atol = 1e-6;
  double grad_rtol = 1e-3, grad_atol = 1e-5;
  bool gradcheck = true;
  std::vector<std::pair<std::string, std::function<void()>>> bad_calls;

  std::string id() const;  // unique test name: op + label
};

// GoogleTest prints a failing row by its id.
inline void PrintTo(const Row& row, std::ostream* os) { *os << row.id(); }

using RowsFn = std::vector<Row> (*)();
struct RowsRegistrar {
  explicit RowsRegistrar(RowsFn fn);
};
const std::vector<Row>& all_rows();

#define ATH_OP_ROWS(family)                                                \
  static std::vector<::ath::testing::Row> family##_rows();                 \
  static ::ath::testing::RowsRegistrar family##_registrar(&family##_rows); \
  static std::vector<::ath::testing::Row> family##_rows()

// Ops covered elsewhere than the table (factories with no tensor input, ops whose rows live in
// dedicated tests); the coverage test accepts them with the reason.
struct CoveredElsewhere {
  CoveredElsewhere(std::string op, std::string where);
};
const std::vector<std::pair<std::string, std::string>>& covered_elsewhere();

// Builds the float64 inputs of a row (seeded by the row id).
Tensors make_inputs(const Row& row);

}  // namespace ath::testing
