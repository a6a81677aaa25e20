// Indexing, shaping and creation behaviour the op table does not reach: error types and
// messages, result dtypes, views, multi-output ops, determinism under threads, double backward,
// and golden values from torch for arange/linspace.
#include <gtest/gtest.h>

#include <cstring>

#include "athanor/athanor.h"
#include "support/golden.h"

namespace ath {
namespace {

Tensor ids(std::vector<int64_t> v) { return from_vector(v); }
[[maybe_unused]] Tensor ids(std::vector<int64_t> v, const Shape& s) { return from_vector(v, s); }

template <class E, class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const Error& e) {
    return std::string("wrong error type: ") + e.what();
  }
  return "no error";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(IndexingErrors, TypedAndDescriptive) {
  std::string m = error_of<IndexError>([] { index_select(zeros({2, 4}), 1, ids({0, 4})); });
  EXPECT_TRUE(contains(m, "index_select") && contains(m, "index 4") && contains(m, "size 4")) << m;
  m = error_of<IndexError>([] { gather(zeros({2, 3}), 0, ids({-1}, Shape{1, 1})); });
  EXPECT_TRUE(contains(m, "gather") && contains(m, "index -1") && contains(m, "size 2")) << m;
  m = error_of<IndexError>([] { scatter_add(zeros({3}), 0, ids({7}), ones({1})); });
  EXPECT_TRUE(contains(m, "scatter_add") && contains(m, "index 7")) << m;
  m = error_of<IndexError>([] { index_add(zeros({3}), 0, ids({3}), ones({1})); });
  EXPECT_TRUE(contains(m, "index_add") && contains(m, "size 3")) << m;
  m = error_of<IndexError>([] { one_hot(ids({1, 5}), 3); });
  EXPECT_TRUE(contains(m, "one_hot") && contains(m, "5")) << m;
  EXPECT_TRUE(contains(error_of<IndexError>([] { topk(zeros({3}), 4); }), "topk"));
  EXPECT_TRUE(contains(error_of<IndexError>([] { sort(zeros({3}), 1); }), "sort"));

  m = error_of<DTypeError>([] { index_select(zeros({3}), 0, zeros({1})); });
  EXPECT_TRUE(contains(m, "index_select") && contains(m, "float32")) << m;
  EXPECT_TRUE(
      contains(error_of<DTypeError>([] { gather(zeros({3}), 0, ids({0}).to(kInt32)); }), "gather"));
  EXPECT_TRUE(
      contains(error_of<DTypeError>([] { masked_fill(zeros({3}), zeros({3}, kUInt8), 1.0); }),
               "masked_fill"));
  EXPECT_TRUE(
      contains(error_of<DTypeError>([] { where(zeros({2}), zeros({2}), zeros({2})); }), "where"));
  EXPECT_TRUE(contains(error_of<DTypeError>([] { one_hot(ids({1}).to(kInt32)); }), "one_hot"));

  EXPECT_TRUE(contains(error_of<ShapeError>([] { cat({zeros({2, 3}), zeros({2, 4})}); }), "cat"));
  EXPECT_TRUE(contains(error_of<ShapeError>([] { stack({zeros({2}), zeros({3})}); }), "stack"));
  EXPECT_TRUE(contains(error_of<ValueError>([] { cat({}); }), "cat"));
  EXPECT_TRUE(contains(error_of<ValueError>([] { split(zeros({5}), {2, 2}); }), "split"));
  EXPECT_TRUE(contains(error_of<ValueError>([] { flip(zeros({2}), {0, -1}); }), "flip"));
}

TEST(CreationErrors, ValueErrors) {
  EXPECT_TRUE(contains(error_of<ValueError>([] { arange(0, 5, 0); }), "arange"));
  EXPECT_TRUE(contains(error_of<ValueError>([] { arange(0, 5, 0.5, kInt64); }), "nonzero"));
  EXPECT_TRUE(contains(error_of<ValueError>([] { arange(5, 0, 1); }), "step sign"));
  EXPECT_TRUE(contains(error_of<ValueError>([] { linspace(0, 1, -2); }), "linspace"));
  EXPECT_TRUE(contains(error_of<ValueError>([] { eye(-1); }), "eye"));
  EXPECT_TRUE(contains(error_of<ValueError>([] { rand({2, -1}); }), "rand"));
  EXPECT_TRUE(contains(error_of<ValueError>([] { randn({-1}); }), "randn"));
  EXPECT_TRUE(contains(error_of<ValueError>([] { randint(2, 2, {3}); }), "randint"));
  EXPECT_TRUE(contains(error_of<ValueError>([] { bernoulli(full({2}, -0.5)); }), "bernoulli"));
  EXPECT_TRUE(contains(error_of<ValueError>([] { bernoulli({2}, 1.5); }), "bernoulli"));
}

TEST(Creation, DtypesLikeTorch) {
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(arange(0, 5, 1).dtype(), kInt64);
  EXPECT_EQ(arange(0.0, 5, 1).dtype(), kFloat32);
  EXPECT_EQ(arange(0, 1, 0.25).dtype(), kFloat32);
  EXPECT_EQ(arange(0, 4, 1, kBFloat16).dtype(), kBFloat16);
  EXPECT_EQ(linspace(0, 1, 3).dtype(), kFloat32);
  EXPECT_EQ(eye(2).dtype(), kFloat32);
  EXPECT_EQ(eye(2, 5).shape(), (Shape{2, 5}));
  EXPECT_EQ(eye(0).numel(), 0);
  EXPECT_EQ(randint(0, 3, {2}).dtype(), kInt64);
  EXPECT_EQ(rand({2}).dtype(), kFloat32);
}

TEST(Creation, GoldenArangeLinspaceFromTorch) {
  for (const testing::GoldenCase& c : testing::load_golden("creation")) {
    SCOPED_TRACE(c.name);
    const Tensor& want = c.t("out");
    Tensor got;
    auto scalar = [&](const char* key) -> Scalar {
      const auto& v = c.attrs[key];
      return v.is_number_integer() ? Scalar(v.get<int64_t>()) : Scalar(v.get<double>());
    };
    if (c.attrs["op"] == "arange") {
      got = arange(scalar("start"), scalar("end"), scalar("step"), want.dtype());
    } else {
      got = linspace(c.attrs["start"].get<double>(), c.attrs["end"].get<double>(),
                     c.attrs["steps"].get<int64_t>(), want.dtype());
    }
    ASSERT_EQ(got.dtype(), want.dtype());
    // torch's vectorized CPU loops accumulate partly in the element type, so floating values
    // may differ in the last place; sizes and integer values match exactly.
    double tol = want.dtype() == kFloat16 ? 1e-3 : want.dtype() == kBFloat16 ? 8e-3 : 1e-6;
    if (!is_floating(want.dtype())) tol = 0;
    testing::expect_close(got, want, tol, tol, c.name);
  }
}

TEST(Indexing, SortReturnsValuesAndInt64Indices) {
  Tensor x = from_vector<float>({3, 1, 2, 1, 0, 5}, Shape{2, 3});
  auto [v, i] = sort(x, 1, /*descending=*/false, /*stable=*/true);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{1, 2, 3, 0, 1, 5}));
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0, 1, 0, 2}));
  auto [tv, ti] = topk(x, 2, 0);
  EXPECT_EQ(tv.shape(), (Shape{2, 3}));
  EXPECT_EQ(ti.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 1, 1, 0}));
  // Gradient of the values only; the indices carry none.
  Tensor y = x.clone().requires_grad_();
  auto [yv, yi] = topk(y, 1, 1);
  EXPECT_FALSE(yi.requires_grad());
  yv.sum().backward();
  EXPECT_EQ(y.grad().to_vector<float>(), (std::vector<float>{1, 0, 0, 0, 0, 1}));
}

TEST(Indexing, NonzeroAndMaskedSelectSizeTheirOutput) {
  Tensor x = from_vector<int64_t>({0, 4, 0, 0, -2, 0, 1, 0}, Shape{2, 2, 2});
  Tensor nz = nonzero(x);
  EXPECT_EQ(nz.shape(), (Shape{3, 3}));
  EXPECT_EQ(nz.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1, 0}));
  Tensor m = from_vector<bool>({true, false, true});
  EXPECT_EQ(masked_select(arange(0, 6, 1, kFloat32).view({2, 3}), m).to_vector<float>(),
            (std::vector<float>{0, 2, 3, 5}));
  EXPECT_EQ(nonzero(zeros({4})).shape(), (Shape{0, 1}));
}

TEST(Indexing, WhereAndCatPromoteLikeTorch) {
  Tensor c = from_vector<bool>({true, false});
  EXPECT_EQ(where(c, zeros({2}, kInt32), 0.5).dtype(), kFloat32);
  EXPECT_EQ(where(c, zeros({2}, kFloat16), 2.0).dtype(), kFloat16);
  EXPECT_EQ(where(c, zeros({2}, kInt32), zeros({2}, kFloat16)).dtype(), kFloat16);
  EXPECT_EQ(where(c, 1, 2).dtype(), kInt64);
  EXPECT_EQ(where(c, 1, 2.5).to_vector<float>(), (std::vector<float>{1, 2.5}));
  EXPECT_EQ(cat({zeros({2}, kInt32), ones({1}, kBool)}).dtype(), kInt32);
  // A skipped empty tensor still takes part in type promotion, as in torch.
  EXPECT_EQ(cat({zeros({0}, kFloat64), ones({2})}).dtype(), kFloat64);
  EXPECT_EQ(cat({zeros({0}), ones({2, 2})}, 1).shape(), (Shape{2, 2}));
  EXPECT_EQ(masked_fill(zeros({3}, kInt64), from_vector<bool>({true, false, true}), 0.5)
                .to_vector<int64_t>(),
            (std::vector<int64_t>{0, 0, 0}));
}

TEST(Shaping, SplitAndChunkAreViews) {
  Tensor x = arange(0, 10, 1, kFloat32);
  std::vector<Tensor> parts = chunk(x, 3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].numel(), 4);
  EXPECT_EQ(parts[2].numel(), 2);
  for (const Tensor& p : parts) EXPECT_TRUE(p.shares_storage(x));
  parts[1].fill_(-1);
  EXPECT_EQ(x.to_vector<float>()[5], -1.0f);
  EXPECT_EQ(chunk(arange(6), 4).size(), 3u);  // ceil(6/4) = 2 per piece: 3 pieces, like torch
  EXPECT_EQ(chunk(zeros({0}), 3).size(), 3u);
  EXPECT_EQ(split(zeros({0}), int64_t{0}).size(), 1u);
  std::vector<Tensor> s = split(x, std::vector<int64_t>{2, 0, 8});
  EXPECT_EQ(s[1].numel(), 0);
  EXPECT_EQ(s[2].shape(), (Shape{8}));
}

TEST(Shaping, RepeatRollFlipTriangles) {
  Tensor x = arange(6).view({2, 3});
  EXPECT_EQ(repeat(arange(3), {2, 2}).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(roll(x, {1}).to_vector<int64_t>(), (std::vector<int64_t>{5, 0, 1, 2, 3, 4}));
  EXPECT_EQ(roll(x, {1, -1}, {0, 1}).to_vector<int64_t>(),
            (std::vector<int64_t>{4, 5, 3, 1, 2, 0}));  // torch's own result
  EXPECT_EQ(flip(x, {0, 1}).to_vector<int64_t>(), (std::vector<int64_t>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(triu(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 0, 0, 5}));
  EXPECT_EQ(tril(x, -1).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 3, 0, 0}));
  Tensor r = repeat(x, {1, 1});
  EXPECT_FALSE(r.shares_storage(x));  // always a copy
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

TEST(Indexing, AccumulationIsDeterministicAcrossThreads) {
  int saved = get_num_threads();
  Generator g(5);
  Tensor src = randn({20000, 64}, {.generator = &g});
  Tensor index = randint(0, 50, {20000, 64}, {.generator = &g});  // many duplicates
  Tensor rows = randint(0, 50, {20000}, {.generator = &g});
  std::vector<Tensor> results[2];
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    auto& r = results[threads - 1];
    r.push_back(scatter_add(zeros({50, 64}), 0, index, src));
    r.push_back(index_add(zeros({50, 64}), 0, rows, src));
    r.push_back(scatter(zeros({50, 64}), 0, index, src));
    r.push_back(sort(src, 0).first);
    r.push_back(gather(src, 0, index));
  }
  set_num_threads(saved);
  for (std::size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_TRUE(bitwise_equal(results[0][i], results[1][i])) << "result " << i;
  }
}

TEST(Indexing, DoubleBackwardThroughGatherAndIndexSelect) {
  Tensor index = ids({2, 0, 2, 1, 1, 0}, Shape{2, 3});
  auto first_grad = [&](const std::vector<Tensor>& in) {
    AutoGradMode record(true);  // gradcheck evaluates fn under no-grad for finite differences
    Tensor y = gather(in[0], 1, index);
    Tensor z = index_select(in[0], 0, ids({1, 1}));
    Tensor loss = (y * y).sum() + (z * z * z).sum();
    return grad({loss}, {in[0]}, {}, {.retain_graph = true, .create_graph = true});
  };
  Tensor x = randn({2, 3}, {.dtype = kFloat64}).requires_grad_();
  GradcheckResult r = gradcheck(first_grad, {x});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(Indexing, MaskedFillTensorValueGetsTheMaskedGradient) {
  Tensor x = zeros({2, 3}).requires_grad_();
  Tensor v = full({}, 2.0).requires_grad_();
  Tensor m = from_vector<bool>({true, false, true});
  masked_fill(x, m, v).sum().backward();
  EXPECT_EQ(v.grad().item<float>(), 4.0f);
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0, 1, 0, 0, 1, 0}));
}

}  // namespace
}  // namespace ath

namespace ath {
namespace {
TEST(Creation, RandpermIsAPermutationFixedBySeed) {
  Generator g1(7), g2(7);
  Tensor p = randperm(1000, &g1);
  EXPECT_EQ(p.dtype(), kInt64);
  std::vector<int64_t> v = p.to_vector<int64_t>();
  std::vector<int64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_EQ(randperm(1000, &g2).to_vector<int64_t>(), v);
  EXPECT_NE(randperm(1000, &g1).to_vector<int64_t>(), v);
  EXPECT_EQ(randperm(0).numel(), 0);
  EXPECT_THROW(randperm(-1), ValueError);
}
}  // namespace
}  // namespace ath
