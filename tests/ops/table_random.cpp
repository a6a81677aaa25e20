// Op-table rows: the random ops (philox_seed_offset, rand, randn, randint, bernoulli). The
// references recompute the documented counter contract from core/rng.h: a fresh Generator(seed)
// reserves from counter 0, and element i is a function of (seed, 0, i) only.
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

constexpr uint64_t kSeed = 1234;

Tensor seq_ref(int64_t n, const std::function<double(int64_t)>& f) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(f(i));
  return make_f64({n}, v);
}

}  // namespace

ATH_OP_ROWS(random) {
  return {
      // The draw every random op starts with: [seed, first counter], counters reserved now.
      Row("philox_seed_offset")
          .call([](const Tensors&) {
            Generator g(kSeed);
            philox_seed_offset(10, &g);  // 10 words: counters 0, 1, 2
            return philox_seed_offset(1, &g);
          })
          .ref([](const Tensors&) {
            return from_vector<double>({double(kSeed), 3});
          })
          .exact(),
      Row("rand", "float32")
          .call([](const Tensors&) {
            Generator g(kSeed);
            return rand({5000}, {.generator = &g});
          })
          .ref([](const Tensors&) {
            return seq_ref(5000, [](int64_t i) { return philox_uniform(kSeed, 0, i); });
          })
          .exact()
          .bad("negative size",
               [] {
                 rand({2, -1});
               })
          .bad("integer dtype", [] { rand({2}, {.dtype = kInt64}); }),
      Row("rand", "float64")
          .call([](const Tensors&) {
            Generator g(kSeed);
            return rand({100}, {.dtype = kFloat64, .generator = &g});
          })
          .ref([](const Tensors&) {
            return seq_ref(100, [](int64_t i) { return philox_uniform_double(kSeed, 0, i); });
          })
          .exact(),
      Row("randn")
          .call([](const Tensors&) {
            Generator g(kSeed);
            return randn({2, 500}, {.generator = &g}).flatten();
          })
          .ref([](const Tensors&) {
            return seq_ref(1000, [](int64_t i) { return philox_normal(kSeed, 0, i); });
          })
          .bad("negative size", [] { randn({-3}); })
          .bad("bool dtype", [] { randn({3}, {.dtype = kBool}); }),
      Row("randint")
          .call([](const Tensors&) {
            Generator g(kSeed);
            return randint(-3, 7, {300}, {.dtype = kInt64, .generator = &g});
          })
          .ref([](const Tensors&) {
            return seq_ref(300, [](int64_t i) { return -3.0 + philox_word(kSeed, 0, i) % 10; });
          })
          .exact()
          .bad("low >= high", [] { randint(3, 3, {2}); })
          .bad("range too wide for uint8", [] { randint(0, 300, {2}, {.dtype = kUInt8}); })
          .bad("negative size", [] { randint(0, 3, {-2}); }),
      Row("bernoulli", "float32")
          .inputs({In::uniform({40, 50}, 0, 1).no_grad()})
          .call([](const Tensors& x) {
            Generator g(kSeed);
            return bernoulli(x[0], &g);
          })
          .ref([](const Tensors& x) {
            std::vector<double> p = values(x[0]);
            return make_f64(x[0].shape(), [&] {
              std::vector<double> v;
              for (std::size_t i = 0; i < p.size(); ++i) {
                v.push_back(philox_uniform(kSeed, 0, i) < p[i] ? 1 : 0);
              }
              return v;
            }());
          })
          .dtypes({kFloat32})
          .exact()
          .bad("p above 1", [] { bernoulli(full({2}, 1.5)); })
          .bad("NaN p", [] { bernoulli(full({2}, NAN)); })
          .bad("integer p", [] { bernoulli(zeros({2}, kInt64)); }),
      Row("bernoulli", "float64_strided")
          .inputs({In::uniform({10, 20}, 0, 1).no_grad().strided()})
          .call([](const Tensors& x) {
            Generator g(kSeed);
            return bernoulli(x[0], &g);
          })
          .ref([](const Tensors& x) {
            std::vector<double> p = values(x[0]), v;
            for (std::size_t i = 0; i < p.size(); ++i) {
              v.push_back(philox_uniform_double(kSeed, 0, i) < p[i] ? 1 : 0);
            }
            return make_f64(x[0].shape(), v);
          })
          .dtypes({kFloat64})
          .exact(),
      Row("bernoulli_scalar")
          .call([](const Tensors&) {
            Generator g(kSeed);
            return bernoulli({400}, 0.3, {.dtype = kBFloat16, .generator = &g});
          })
          .ref([](const Tensors&) {
            return seq_ref(400, [](int64_t i) {
              return philox_uniform_double(kSeed, 0, i) < 0.3 ? 1.0 : 0.0;
            });
          })
          .exact()
          .bad("p below 0", [] { bernoulli({2}, -0.1); })
          .bad("p above 1", [] { bernoulli({2}, 1.01); })
          .bad("negative size", [] { bernoulli({-2}, 0.5); }),
  };
}

}  // namespace ath::testing
