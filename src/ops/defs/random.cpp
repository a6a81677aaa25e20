// Random factories: rand, randn, randint, bernoulli and the *_like forms. Each is an op whose
// kernel reserves Philox counters from the generator when it runs (see creation.h), so element
// i depends only on (seed, counter base, i): bitwise identical whatever the thread count.
#include <limits>

#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/indexing.h"

namespace ath {

namespace {

void check_sizes(const Shape& shape) {
  for (int64_t s : shape) {
    ATH_CHECK(s >= 0, ValueError, "negative size in shape {}", to_string(shape));
  }
}

OutputSpec floating_factory(const Shape& shape, DType dtype) {
  check_sizes(shape);
  ATH_CHECK(is_floating(dtype), DTypeError, "expected a floating dtype, got {}", dtype_name(dtype));
  return OutputSpec{{{shape, dtype}}, dtype};
}

// [lowest, highest] of an integer dtype, as doubles (exact for the ranges checked).
std::pair<double, double> integer_range(DType t) {
  switch (t) {
    case kBool:
      return {0, 1};
    case kUInt8:
      return {0, 255};
    case kInt32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default:
      return {-9.3e18, 9.3e18};
  }
}

}  // namespace

const Op<RandomAttrs>& op_rand() {
  static const auto& op = define_op<RandomAttrs>({
      .name = "rand",
      .kind = OpKind::Opaque,
      .num_inputs = 0,
      .infer = [](TensorSpan, const RandomAttrs& a) { return floating_factory(a.shape, a.dtype); },
      .not_differentiable = "a random factory: no tensor inputs",
  });
  return op;
}

const Op<RandomAttrs>& op_randn() {
  static const auto& op = define_op<RandomAttrs>({
      .name = "randn",
      .kind = OpKind::Opaque,
      .num_inputs = 0,
      .infer = [](TensorSpan, const RandomAttrs& a) { return floating_factory(a.shape, a.dtype); },
      .not_differentiable = "a random factory: no tensor inputs",
  });
  return op;
}

const Op<RandintAttrs>& op_randint() {
  static const auto& op = define_op<RandintAttrs>({
      .name = "randint",
      .kind = OpKind::Opaque,
      .num_inputs = 0,
      .infer =
          [](TensorSpan, const RandintAttrs& a) {
            check_sizes(a.shape);
            ATH_CHECK(a.low < a.high, ValueError, "low ({}) must be less than high ({})", a.low,
                      a.high);
            if (!is_floating(a.dtype)) {
              auto [lo, hi] = integer_range(a.dtype);
              ATH_CHECK(double(a.low) >= lo && double(a.high - 1) <= hi, ValueError,
                        "range [{}, {}) doesn't fit dtype {}", a.low, a.high, dtype_name(a.dtype));
            }
            return OutputSpec{{{a.shape, a.dtype}}, a.dtype};
          },
      .not_differentiable = "a random factory: no tensor inputs",
  });
  return op;
}

const Op<BernoulliAttrs>& op_bernoulli() {
  static const auto& op = define_op<BernoulliAttrs>({
      .name = "bernoulli",
      .kind = OpKind::Opaque,
      .infer =
          [](TensorSpan in, const BernoulliAttrs&) {
            // p's values are checked against [0, 1] by the kernel, which reads them anyway.
            return floating_factory(in[0].shape(), in[0].dtype());
          },
      .not_differentiable = "sampling has no gradient",
  });
  return op;
}

const Op<BernoulliScalarAttrs>& op_bernoulli_scalar() {
  static const auto& op = define_op<BernoulliScalarAttrs>({
      .name = "bernoulli_scalar",
      .kind = OpKind::Opaque,
      .num_inputs = 0,
      .infer =
          [](TensorSpan, const BernoulliScalarAttrs& a) {
            check_sizes(a.shape);
            ATH_CHECK(a.p >= 0 && a.p <= 1, ValueError, "p must be in [0, 1], got {}", a.p);
            return OutputSpec{{{a.shape, a.dtype}}, a.dtype};
          },
      .not_differentiable = "a random factory: no tensor inputs",
  });
  return op;
}

Tensor rand(const Shape& shape, RandomOptions options) {
  return call1(op_rand(), TensorSpan(),
               RandomAttrs{.shape = shape,
                           .dtype = options.dtype.value_or(kFloat32),
                           .generator = options.generator});
}

Tensor randn(const Shape& shape, RandomOptions options) {
  return call1(op_randn(), TensorSpan(),
               RandomAttrs{.shape = shape,
                           .dtype = options.dtype.value_or(kFloat32),
                           .generator = options.generator});
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, RandomOptions options) {
  return call1(op_randint(), TensorSpan(),
               RandintAttrs{.low = low,
                            .high = high,
                            .shape = shape,
                            .dtype = options.dtype.value_or(kInt64),
                            .generator = options.generator});
}

Tensor bernoulli(const Tensor& p, Generator* generator) {
  return call1(op_bernoulli(), {p}, BernoulliAttrs{.generator = generator});
}

Tensor bernoulli(const Shape& shape, double p, RandomOptions options) {
  return call1(op_bernoulli_scalar(), TensorSpan(),
               BernoulliScalarAttrs{.shape = shape,
                                    .p = p,
                                    .dtype = options.dtype.value_or(kFloat32),
                                    .generator = options.generator});
}

Tensor rand_like(const Tensor& t, Generator* generator) {
  return rand(t.shape(), {.dtype = t.dtype(), .generator = generator});
}

Tensor randperm(int64_t n, Generator* generator) {
  ATH_CHECK(n >= 0, ValueError, "randperm: n must be non-negative, got {}", n);
  return argsort(rand({n}, {.dtype = kFloat64, .generator = generator}), 0, false, true);
}

Tensor randn_like(const Tensor& t, Generator* generator) {
  return randn(t.shape(), {.dtype = t.dtype(), .generator = generator});
}

}  // namespace ath
