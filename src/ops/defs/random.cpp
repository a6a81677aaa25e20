// Random factories: rand, randn, randint, bernoulli and the *_like forms, and
// philox_seed_offset, the draw they all start with (creation.h's random convention). Element i
// of a draw depends only on (seed, counter base, i): bitwise identical whatever the thread
// count, and the same whenever the op runs again on the same [seed, counter base] input.
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

// The [seed, first counter] input every random op ends with.
void check_seed_offset(const Tensor& t) {
  ATH_CHECK(t.dtype() == kInt64 && t.shape() == Shape{2}, ValueError,
            "expected the [seed, offset] input to be an int64 tensor of shape [2] (from "
            "philox_seed_offset), got {} {}",
            dtype_name(t.dtype()), to_string(t.shape()));
}

// Words of one uniform: as many random bits as the dtype's mantissa holds.
uint64_t uniform_words(DType t) { return t == kFloat64 ? 2 : 1; }

// Checks a factory call before drawing, so a refused call leaves the generator as it was.
template <class A>
void check_before_draw(const Op<A>& op, const A& attrs, const Tensor* data_input = nullptr) {
  static const Tensor* placeholder = new Tensor(zeros({2}, kInt64));  // never freed: no exit race
  // The op's inputs: its data input if it has one (bernoulli's p), then the pair.
  const Tensor in[2] = {data_input != nullptr ? *data_input : *placeholder, *placeholder};
  const TensorSpan inputs = data_input != nullptr ? TensorSpan(in) : TensorSpan(in + 1, 1);
  with_op_context(op, [&] { op.spec().infer(inputs, attrs); });
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

// rand and randn: a floating tensor of the attributes' shape, drawn from the pair.
OutputSpec floating_draw(TensorSpan in, const RandomAttrs& a) {
  check_seed_offset(in[0]);
  return floating_factory(a.shape, a.dtype);
}
constexpr const char* kDrawHasNoGradient =
    "a random factory: its only input is the [seed, offset] pair";

}  // namespace

const Op<PhiloxDrawAttrs>& op_philox_seed_offset() {
  static const auto& op = define_op<PhiloxDrawAttrs>({
      .name = "philox_seed_offset",
      .kind = OpKind::Opaque,
      .num_inputs = 0,
      .infer =
          [](TensorSpan, const PhiloxDrawAttrs&) {
            return OutputSpec{{{Shape{2}, kInt64}}, kInt64};
          },
      .not_differentiable = "draws random counters: no tensor inputs",
  });
  return op;
}

const Op<RandomAttrs>& op_rand() {
  static const auto& op = define_op<RandomAttrs>({.name = "rand",
                                                  .kind = OpKind::Opaque,
                                                  .promote_inputs = 0,
                                                  .infer = floating_draw,
                                                  .not_differentiable = kDrawHasNoGradient});
  return op;
}

const Op<RandomAttrs>& op_randn() {
  static const auto& op = define_op<RandomAttrs>({.name = "randn",
                                                  .kind = OpKind::Opaque,
                                                  .promote_inputs = 0,
                                                  .infer = floating_draw,
                                                  .not_differentiable = kDrawHasNoGradient});
  return op;
}

const Op<RandintAttrs>& op_randint() {
  static const auto& op = define_op<RandintAttrs>({
      .name = "randint",
      .kind = OpKind::Opaque,
      .promote_inputs = 0,
      .infer =
          [](TensorSpan in, const RandintAttrs& a) {
            check_seed_offset(in[0]);
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
      .not_differentiable = kDrawHasNoGradient,
  });
  return op;
}

const Op<BernoulliAttrs>& op_bernoulli() {
  static const auto& op = define_op<BernoulliAttrs>({
      .name = "bernoulli",
      .kind = OpKind::Opaque,
      .num_inputs = 2,
      .promote_inputs = 0,  // p keeps its dtype (the output's); the pair stays int64
      .infer =
          [](TensorSpan in, const BernoulliAttrs&) {
            check_seed_offset(in[1]);
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
      .promote_inputs = 0,
      .infer =
          [](TensorSpan in, const BernoulliScalarAttrs& a) {
            check_seed_offset(in[0]);
            check_sizes(a.shape);
            ATH_CHECK(a.p >= 0 && a.p <= 1, ValueError, "p must be in [0, 1], got {}", a.p);
            return OutputSpec{{{a.shape, a.dtype}}, a.dtype};
          },
      .not_differentiable = kDrawHasNoGradient,
  });
  return op;
}

Tensor philox_seed_offset(uint64_t words, Generator* generator) {
  return call1(op_philox_seed_offset(), TensorSpan(),
               PhiloxDrawAttrs{.words = words, .generator = generator});
}

std::pair<uint64_t, uint64_t> read_philox_seed_offset(const Tensor& seed_offset) {
  check_seed_offset(seed_offset);
  const Tensor t = seed_offset.contiguous();
  const int64_t* v = t.data<int64_t>();
  return {static_cast<uint64_t>(v[0]), static_cast<uint64_t>(v[1])};
}

// Each public function checks its arguments, reserves exactly the words its kernel reads (the
// stream of draws is the same as when kernels reserved for themselves), then calls the op.
Tensor rand(const Shape& shape, RandomOptions options) {
  RandomAttrs a{.shape = shape, .dtype = options.dtype.value_or(kFloat32)};
  check_before_draw(op_rand(), a);
  Tensor so = philox_seed_offset(static_cast<uint64_t>(numel(shape)) * uniform_words(a.dtype),
                                 options.generator);
  return call1(op_rand(), {so}, a);
}

Tensor randn(const Shape& shape, RandomOptions options) {
  RandomAttrs a{.shape = shape, .dtype = options.dtype.value_or(kFloat32)};
  check_before_draw(op_randn(), a);
  Tensor so = philox_seed_offset(static_cast<uint64_t>(numel(shape)) * 2,  // Box-Muller
                                 options.generator);
  return call1(op_randn(), {so}, a);
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, RandomOptions options) {
  RandintAttrs a{.low = low, .high = high, .shape = shape, .dtype = options.dtype.value_or(kInt64)};
  check_before_draw(op_randint(), a);
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  const uint64_t words = range > (uint64_t{1} << 32) ? 2 : 1;
  Tensor so = philox_seed_offset(static_cast<uint64_t>(numel(shape)) * words, options.generator);
  return call1(op_randint(), {so}, a);
}

Tensor bernoulli(const Tensor& p, Generator* generator) {
  check_before_draw(op_bernoulli(), BernoulliAttrs{}, &p);
  Tensor so =
      philox_seed_offset(static_cast<uint64_t>(p.numel()) * uniform_words(p.dtype()), generator);
  return call1(op_bernoulli(), {p, so}, BernoulliAttrs{});
}

Tensor bernoulli(const Shape& shape, double p, RandomOptions options) {
  BernoulliScalarAttrs a{.shape = shape, .p = p, .dtype = options.dtype.value_or(kFloat32)};
  check_before_draw(op_bernoulli_scalar(), a);
  Tensor so = philox_seed_offset(static_cast<uint64_t>(numel(shape)) * 2, options.generator);
  return call1(op_bernoulli_scalar(), {so}, a);
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
