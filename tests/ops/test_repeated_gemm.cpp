// White-box tests of RepeatedGemm (src/ops/kernels/cpu/repeated_gemm.h), the product with a
// right operand packed once that the recurrent kernels run every time step: against a float64
// loop for each operand layout and row count, the same bits whatever the thread count and
// whether it runs inside a parallel region, and the fallback paths (few calls, float64).
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "ops/kernels/cpu/repeated_gemm.h"
#include "support/expect_error.h"
#include "support/reference.h"

namespace ath {
namespace {

using kernels::RepeatedGemm;

// a [m, k] @ b [k, n] (+ bias [n]) in float64.
std::vector<double> reference(const Tensor& a, const Tensor& b, const Tensor& bias) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const std::vector<double> av = testing::values(a), bv = testing::values(b);
  const std::vector<double> biasv = bias.defined() ? testing::values(bias) : std::vector<double>();
  std::vector<double> c(static_cast<std::size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = bias.defined() ? biasv[j] : 0.0;
      for (int64_t q = 0; q < k; ++q) s += av[i * k + q] * bv[q * n + j];
      c[i * n + j] = s;
    }
  return c;
}

void expect_matches(const Tensor& c, const std::vector<double>& want) {
  const std::vector<double> got = testing::values(c);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << "element " << i;
}

// b as the recurrent kernels pass it: W [n, k] read transposed, or W [k, n] row-major.
Tensor right_operand(bool transposed, int64_t k, int64_t n) {
  return transposed ? randn({n, k}).t() : randn({k, n});
}

TEST(RepeatedGemm, MatchesFloat64ForEachLayoutRowCountAndBias) {
  manual_seed(0);
  for (bool transposed : {true, false})
    for (int64_t rows : {1, 7, 16})
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "transposed " << transposed << " rows " << rows << " bias " << with_bias);
        const Tensor b = right_operand(transposed, 96, 160);
        const Tensor bias = with_bias ? randn({160}) : Tensor();
        const RepeatedGemm product(rows, b, bias, /*calls=*/8);
        for (int call = 0; call < 3; ++call) {  // the packed copy is reused, not consumed
          const Tensor a = randn({rows, 96}), c = empty({rows, 160});
          product(a, c);
          expect_matches(c, reference(a, b, bias));
        }
      }
}

// The GRU backward's form: every call adds a matrix of its own (a post-op when packed, a
// prefilled sum when not).
TEST(RepeatedGemm, AddsEachCallsAddend) {
  manual_seed(3);
  const Tensor b = randn({96, 48});
  for (int64_t calls : {int64_t{2}, int64_t{16}}) {
    SCOPED_TRACE(::testing::Message() << "calls " << calls);
    const RepeatedGemm product(7, b, {}, calls, /*with_addend=*/true);
    for (int call = 0; call < 3; ++call) {
      const Tensor a = randn({7, 96}), addend = randn({7, 48}), c = empty({7, 48});
      product(a, c, addend);
      std::vector<double> want = reference(a, b, {});
      const std::vector<double> add = testing::values(addend);
      for (std::size_t i = 0; i < want.size(); ++i) want[i] += add[i];
      expect_matches(c, want);
    }
  }
}

TEST(RepeatedGemm, FewCallsAndFloat64RunThePlainProduct) {
  manual_seed(1);
  const Tensor b = right_operand(true, 32, 48), a = randn({5, 32});
  for (int64_t calls : {int64_t{0}, int64_t{1}, RepeatedGemm::kMinCalls - 1}) {
    const Tensor c = empty({5, 48});
    RepeatedGemm(5, b, {}, calls)(a, c);
    expect_matches(c, reference(a, b, {}));
  }
  const Tensor b64 = b.to(kFloat64), a64 = a.to(kFloat64), c64 = empty({5, 48}, kFloat64);
  RepeatedGemm(5, b64, {}, 64)(a64, c64);
  expect_matches(c64, reference(a64, b64, {}));
}

// The recurrent kernels promise results independent of the thread count: the packed product
// must give the same bits on one thread, on all, and from inside a parallel region (where it
// runs on the calling thread alone).
TEST(RepeatedGemm, SameBitsWhateverTheThreadCount) {
  manual_seed(2);
  const Tensor b = right_operand(true, 256, 1024), a = randn({32, 256});
  auto run = [&](int threads, bool in_region) {
    const int prev = get_num_threads();
    set_num_threads(threads);
    Tensor c = empty({32, 1024});
    auto body = [&] { RepeatedGemm(32, b, {}, 64)(a, c); };
    if (in_region) {
      parallel_for(0, 2, 1, [&](int64_t i0, int64_t) {
        if (i0 == 0) body();
      });
    } else {
      body();
    }
    set_num_threads(prev);
    return c.to_vector<float>();
  };
  const std::vector<float> one = run(1, false);
  EXPECT_EQ(one, run(2, false));
  EXPECT_EQ(one, run(2, true));
}

TEST(RepeatedGemm, BadOperandsAreRefused) {
  const Tensor b = randn({16, 24});
  const RepeatedGemm product(4, b, {}, 8), adding(4, b, {}, 8, /*with_addend=*/true);
  const Tensor a = randn({4, 16}), c = empty({4, 24});
  const Tensor strided = randn({4, 32}).narrow(1, 0, 16);
  testing::expect_error_naming([&] { product(strided, c); }, "repeated matrix product");
  testing::expect_error_naming([&] { product(a, c, randn({4, 24})); }, "addend");
  testing::expect_error_naming([&] { adding(a, c); }, "addend");
  testing::expect_error_naming([&] { adding(a, c, randn({4, 23})); }, "addend");
  testing::expect_error_naming([&] { RepeatedGemm(4, b, randn({24}), 8, true); }, "not both");
}

}  // namespace
}  // namespace ath
