// Random factories: bitwise determinism across thread counts, seeds and generator offsets, and
// statistical sanity of the distributions.
#include <gtest/gtest.h>

#include <cstring>

#include "athanor/athanor.h"

namespace ath {
namespace {

constexpr int64_t kBig = 1 << 20;  // ~1M: split across threads (grain 8192)

struct ThreadCount {  // restores the thread count when the test ends
  int saved = get_num_threads();
  ~ThreadCount() { set_num_threads(saved); }
};

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

// Each draw: fresh generator with `seed`, then the factory.
using Draw = std::function<Tensor(Generator&)>;

std::vector<std::pair<std::string, Draw>> draws() {
  return {
      {"rand", [](Generator& g) { return rand({kBig}, {.generator = &g}); }},
      {"rand_f64", [](Generator& g) { return rand({kBig}, {.dtype = kFloat64, .generator = &g}); }},
      {"rand_f16", [](Generator& g) { return rand({kBig}, {.dtype = kFloat16, .generator = &g}); }},
      {"rand_bf16",
       [](Generator& g) { return rand({kBig}, {.dtype = kBFloat16, .generator = &g}); }},
      {"randn",
       [](Generator& g) {
         return randn({1024, 1024}, {.generator = &g});
       }},
      {"randn_f64",
       [](Generator& g) { return randn({kBig}, {.dtype = kFloat64, .generator = &g}); }},
      {"randint", [](Generator& g) { return randint(-5, 1000, {kBig}, {.generator = &g}); }},
      {"randint_wide",
       [](Generator& g) {
         return randint(0, int64_t{1} << 40, {kBig}, {.dtype = kInt64, .generator = &g});
       }},
      {"bernoulli_tensor",
       [](Generator& g) {
         Generator pg(99);
         return bernoulli(rand({kBig}, {.generator = &pg}), &g);
       }},
      {"bernoulli_scalar", [](Generator& g) { return bernoulli({kBig}, 0.25, {.generator = &g}); }},
  };
}

TEST(RandomDeterminism, SameSeedSameBitsWhateverTheThreadCount) {
  ThreadCount restore;
  for (const auto& [name, draw] : draws()) {
    SCOPED_TRACE(name);
    set_num_threads(1);
    Generator g1(2024);
    Tensor one = draw(g1);
    set_num_threads(2);
    Generator g2(2024);
    Tensor two = draw(g2);
    EXPECT_TRUE(bitwise_equal(one, two));
    EXPECT_EQ(g1.offset(), g2.offset());
  }
}

TEST(RandomDeterminism, DifferentSeedDifferentNumbers) {
  for (const auto& [name, draw] : draws()) {
    SCOPED_TRACE(name);
    Generator a(1), b(2);
    EXPECT_FALSE(bitwise_equal(draw(a), draw(b)));
  }
}

TEST(RandomDeterminism, OffsetAdvancesSoDrawsDiffer) {
  for (const auto& [name, draw] : draws()) {
    SCOPED_TRACE(name);
    Generator g(7);
    EXPECT_EQ(g.offset(), 0u);
    Tensor first = draw(g);
    uint64_t after_first = g.offset();
    EXPECT_GT(after_first, 0u);
    Tensor second = draw(g);
    EXPECT_GT(g.offset(), after_first);
    EXPECT_FALSE(bitwise_equal(first, second));
  }
}

TEST(RandomDeterminism, DefaultGeneratorFollowsManualSeed) {
  manual_seed(5);
  Tensor a = randn({1000});
  Tensor b = randn({1000});
  manual_seed(5);
  Tensor c = randn({1000});
  EXPECT_TRUE(bitwise_equal(a, c));
  EXPECT_FALSE(bitwise_equal(a, b));
  Tensor x = zeros({3, 4}, kFloat64);
  manual_seed(5);
  Tensor l = randn_like(x);
  EXPECT_EQ(l.dtype(), kFloat64);
  EXPECT_EQ(l.shape(), x.shape());
  EXPECT_EQ(rand_like(x).dtype(), kFloat64);
  EXPECT_THROW(rand_like(zeros({2}, kInt64)), DTypeError);
}

std::pair<double, double> mean_var(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) s += (x - m) * (x - m);
  return {m, s / static_cast<double>(v.size())};
}

TEST(RandomStatistics, MomentsAndRanges) {
  Generator g(11);
  auto [nm, nv] = mean_var(randn({kBig}, {.generator = &g}));
  EXPECT_NEAR(nm, 0.0, 0.005);  // standard error 1e-3
  EXPECT_NEAR(nv, 1.0, 0.01);
  auto [nm64, nv64] = mean_var(randn({kBig}, {.dtype = kFloat64, .generator = &g}));
  EXPECT_NEAR(nm64, 0.0, 0.005);
  EXPECT_NEAR(nv64, 1.0, 0.01);

  for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    Tensor u = rand({kBig}, {.dtype = t, .generator = &g});
    EXPECT_EQ(u.dtype(), t);
    auto [um, uv] = mean_var(u);
    EXPECT_NEAR(um, 0.5, t == kBFloat16 ? 0.01 : 0.003);
    EXPECT_NEAR(uv, 1.0 / 12.0, 0.003);
    std::vector<double> v = u.to_vector<double>();
    EXPECT_GE(*std::min_element(v.begin(), v.end()), 0.0);
    EXPECT_LT(*std::max_element(v.begin(), v.end()), 1.0);  // never rounds up to 1
  }

  std::vector<int64_t> ri = randint(-5, 5, {kBig}, {.generator = &g}).to_vector<int64_t>();
  EXPECT_EQ(*std::min_element(ri.begin(), ri.end()), -5);
  EXPECT_EQ(*std::max_element(ri.begin(), ri.end()), 4);
  auto [rm, rv] = mean_var(from_vector(ri).to(kFloat64));
  EXPECT_NEAR(rm, -0.5, 0.02);
  EXPECT_NEAR(rv, 99.0 / 12.0, 0.1);  // discrete uniform over 10 values

  auto [bm, bv] = mean_var(bernoulli({kBig}, 0.25, {.generator = &g}));
  EXPECT_NEAR(bm, 0.25, 0.003);
  EXPECT_NEAR(bv, 0.25 * 0.75, 0.003);
  Tensor p = full({kBig}, 0.7);
  auto [pm, pv] = mean_var(bernoulli(p, &g));
  EXPECT_NEAR(pm, 0.7, 0.003);
  (void)pv;
  // The endpoints are exact.
  EXPECT_EQ(bernoulli(zeros({1000}), &g).sum().item<double>(), 0.0);
  EXPECT_EQ(bernoulli(ones({1000}), &g).sum().item<double>(), 1000.0);
}

TEST(RandomFactories, DtypesAndEmptyShapes) {
  Generator g(3);
  EXPECT_EQ(randint(0, 3, {2}, {.generator = &g}).dtype(), kInt64);
  EXPECT_EQ(randint(0, 2, {4}, {.dtype = kBool, .generator = &g}).dtype(), kBool);
  EXPECT_EQ(randint(0, 200, {4}, {.dtype = kUInt8, .generator = &g}).dtype(), kUInt8);
  EXPECT_EQ(randint(0, 10, {4}, {.dtype = kFloat32, .generator = &g}).dtype(), kFloat32);
  uint64_t before = g.offset();
  EXPECT_EQ(rand({0, 3}, {.generator = &g}).numel(), 0);
  EXPECT_EQ(g.offset(), before);  // an empty draw reserves nothing
  EXPECT_EQ(randn({}, {.generator = &g}).dim(), 0);
  EXPECT_THROW(rand({-1}), ValueError);
  EXPECT_THROW(randint(5, 2, {3}), ValueError);
  EXPECT_THROW(bernoulli({3}, 2.0), ValueError);
}

}  // namespace
}  // namespace ath
