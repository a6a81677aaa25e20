// Creating tensors: constant fills, ranges, identity, random draws, and wrapping host data.
//
//   Tensor z = zeros({2, 3});
//   Tensor r = arange(0, 10, 2);                 // int64 [0, 2, 4, 6, 8]
//   Generator gen(42);
//   Tensor u = rand({4}, {.generator = &gen});   // Philox; same numbers whatever the threads
//   Tensor v = from_vector<float>({1, 2, 3, 4}, {2, 2});
//   float data[3] = {1, 2, 3};
//   Tensor b = from_blob(data, {3}, kFloat32);   // borrows data; data must outlive b
//   assert(r.dtype() == kInt64 && r.numel() == 5 && b.to_vector<float>()[2] == 3);
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "athanor/core/rng.h"
#include "athanor/ops/op.h"

namespace ath {

// (empty() itself is declared in tensor.h: the allocation primitive.) The constant factories
// take a device (core/device.h); the *_like ones make their tensor on t's.
Tensor zeros(const Shape& shape, DType dtype = kFloat32, Device device = kCPU);
Tensor ones(const Shape& shape, DType dtype = kFloat32, Device device = kCPU);
// dtype defaults to the value's: float32 for a floating scalar, int64 for an integer, bool.
Tensor full(const Shape& shape, const Scalar& value, std::optional<DType> dtype = {},
            Device device = kCPU);
Tensor empty_like(const Tensor& t, std::optional<DType> dtype = {});
Tensor zeros_like(const Tensor& t, std::optional<DType> dtype = {});
Tensor ones_like(const Tensor& t, std::optional<DType> dtype = {});
Tensor full_like(const Tensor& t, const Scalar& value, std::optional<DType> dtype = {});

// A 0-dim tensor holding one value.
Tensor scalar_tensor(const Scalar& value, std::optional<DType> dtype = {});

// [start, end) in steps of step; int64 when all three are integers, else float32.
Tensor arange(const Scalar& end);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              std::optional<DType> dtype = {});
Tensor linspace(double start, double end, int64_t steps, DType dtype = kFloat32);
Tensor eye(int64_t n, std::optional<int64_t> m = {}, DType dtype = kFloat32);

struct RandomOptions {
  // Unset: float32 (rand, randn, bernoulli), int64 (randint), as in torch. Optional so that
  // randint(0, 10, {n}, {.generator = &g}) still gives int64.
  std::optional<DType> dtype;
  Generator* generator = nullptr;  // null: the global generator
};
Tensor rand(const Shape& shape, RandomOptions options = {});   // U[0, 1)
Tensor randn(const Shape& shape, RandomOptions options = {});  // N(0, 1)
// Integers in [low, high); dtype defaults to int64.
Tensor randint(int64_t low, int64_t high, const Shape& shape, RandomOptions options = {});
// Each element 1 with probability p[i] (p a floating tensor in [0, 1]), same shape and dtype.
Tensor bernoulli(const Tensor& p, Generator* generator = nullptr);
Tensor bernoulli(const Shape& shape, double p, RandomOptions options = {});
Tensor rand_like(const Tensor& t, Generator* generator = nullptr);
Tensor randn_like(const Tensor& t, Generator* generator = nullptr);
// A random permutation of 0..n-1 (int64): the stable argsort of n float64 uniform draws, so it
// is Philox-determined and independent of the thread count, like every draw here.
Tensor randperm(int64_t n, Generator* generator = nullptr);

// Copies values into a new tensor; shape defaults to 1-D [values.size()].
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape);
template <class T>
Tensor from_vector(const std::vector<T>& values) {
  return from_vector(values, Shape{static_cast<int64_t>(values.size())});
}

// Wraps external memory without copying. With no deleter the memory is borrowed and must
// outlive every tensor viewing it; a deleter runs when the last view is gone.
Tensor from_blob(void* data, const Shape& shape, DType dtype,
                 std::function<void(void*)> deleter = {});
// Same, but copies the data into athanor-owned memory.
Tensor from_blob_copy(const void* data, const Shape& shape, DType dtype);

// ---- factory ops (the shape comes from the attributes) -----------------------------------------
// Registered so a tracer records them. Random numbers follow one convention: the public
// function first calls philox_seed_offset, the only op with state, which reserves the draw's
// Philox counters from the generator and returns them as a tensor [seed, first counter]; the
// random op (rand, randn, randint, bernoulli, dropout) takes that tensor as an input and is a
// pure function of it. A replayed graph runs philox_seed_offset again, so it draws fresh
// numbers each time, while the random ops themselves may be reordered, or re-run for a backward
// pass, without changing a bit. A graph optimizer must never merge (CSE) or constant-fold
// philox_seed_offset.

struct ArangeAttrs {
  Scalar start = 0, step = 1;
  int64_t size = 0;  // computed by arange(): ceil((end - start) / step)
  DType dtype = kInt64;
  bool operator==(const ArangeAttrs&) const = default;
};
struct LinspaceAttrs {
  double start = 0, end = 0;
  int64_t steps = 0;
  DType dtype = kFloat32;
  bool operator==(const LinspaceAttrs&) const = default;
};
struct EyeAttrs {
  int64_t n = 0, m = 0;
  DType dtype = kFloat32;
  bool operator==(const EyeAttrs&) const = default;
};
struct PhiloxDrawAttrs {
  uint64_t words = 0;              // 32-bit random words the draw consumes
  Generator* generator = nullptr;  // null: default_generator()
  bool operator==(const PhiloxDrawAttrs&) const = default;
};
// Reserves ceil(words / 4) counters from the generator now; returns int64 [seed, first counter]
// (the bits of the uint64 values) for a random op to draw from.
Tensor philox_seed_offset(uint64_t words, Generator* generator = nullptr);
// The seed and first counter a random op reads from that tensor (ValueError unless int64 [2]).
std::pair<uint64_t, uint64_t> read_philox_seed_offset(const Tensor& seed_offset);

// The random ops' inputs end with the [seed, first counter] tensor.
struct RandomAttrs {  // rand, randn: (seed_offset)
  Shape shape;
  DType dtype = kFloat32;
  bool operator==(const RandomAttrs&) const = default;
};
struct RandintAttrs {  // (seed_offset)
  int64_t low = 0, high = 1;
  Shape shape;
  DType dtype = kInt64;
  bool operator==(const RandintAttrs&) const = default;
};
struct BernoulliAttrs {  // (p, seed_offset)
  bool operator==(const BernoulliAttrs&) const = default;
};
struct BernoulliScalarAttrs {  // (seed_offset)
  Shape shape;
  double p = 0.5;
  DType dtype = kFloat32;
  bool operator==(const BernoulliScalarAttrs&) const = default;
};

const Op<ArangeAttrs>& op_arange();
const Op<LinspaceAttrs>& op_linspace();
const Op<EyeAttrs>& op_eye();
const Op<PhiloxDrawAttrs>& op_philox_seed_offset();
const Op<RandomAttrs>& op_rand();
const Op<RandomAttrs>& op_randn();
const Op<RandintAttrs>& op_randint();
const Op<BernoulliAttrs>& op_bernoulli();  // (p)
const Op<BernoulliScalarAttrs>& op_bernoulli_scalar();

}  // namespace ath
