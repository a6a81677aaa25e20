// The default collate for every supported sample shape, and user collates.
#include <gtest/gtest.h>

#include "athanor/athanor.h"
#include "athanor/data/collate.h"

namespace ath::data {
namespace {

TEST(DataCollate, TensorsStackIntoAList) {
  std::vector<Tensor> s = {full({2, 3}, 1.0), full({2, 3}, 2.0)};
  Batch b = default_collate(std::move(s));
  EXPECT_EQ(b.size(), 2);
  ASSERT_TRUE(b.holds<TensorList>());
  EXPECT_EQ(b[0].shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(b[0].select(0, 1).sum().item<double>(), 12.0);
}

TEST(DataCollate, NonContiguousSamplesCopyInOrder) {
  Tensor m = arange(0, 6).to(kFloat32).view({2, 3});
  std::vector<Tensor> s = {m.t(), m.t() * 2.0};  // [3, 2], the first non-contiguous
  Batch b = default_collate(std::move(s));
  EXPECT_EQ(b[0].select(0, 0).to_vector<float>(), m.t().contiguous().to_vector<float>());
  EXPECT_EQ(b[0].select(0, 1).to_vector<float>(), (m.t() * 2.0).contiguous().to_vector<float>());
}

TEST(DataCollate, MismatchesAreErrors) {
  EXPECT_THROW(default_collate(std::vector<Tensor>{zeros({2}), zeros({3})}), ShapeError);
  EXPECT_THROW(default_collate(std::vector<Tensor>{zeros({2}), zeros({2}, kFloat64)}), DTypeError);
  EXPECT_THROW(default_collate(std::vector<TensorList>{{zeros({2})}, {zeros({2}), zeros({1})}}),
               ShapeError);
  try {
    default_collate(std::vector<Tensor>{zeros({2}), zeros({2}), zeros({5})});
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("sample 2"), std::string::npos) << e.what();
  }
}

TEST(DataCollate, PairsAndTuplesWithScalars) {
  std::vector<std::pair<Tensor, int64_t>> s = {{zeros({1, 2}), 3}, {ones({1, 2}), 7}};
  Batch b = default_collate(std::move(s));
  EXPECT_EQ(b[0].shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(b[1].dtype(), kInt64);
  EXPECT_EQ(b[1].to_vector<int64_t>(), (std::vector<int64_t>{3, 7}));

  using T = std::tuple<Tensor, float, double, bool, int>;
  std::vector<T> t = {{zeros({2}), 1.5f, 2.5, true, 4}, {ones({2}), -1.f, 0.25, false, 5}};
  Batch tb = default_collate(std::move(t));
  ASSERT_EQ(tb.as<TensorList>().size(), 5u);
  EXPECT_EQ(tb[1].dtype(), kFloat32);
  EXPECT_EQ(tb[2].dtype(), kFloat64);
  EXPECT_EQ(tb[3].dtype(), kBool);
  EXPECT_EQ(tb[4].dtype(), kInt64);
  EXPECT_EQ(tb[2].to_vector<double>(), (std::vector<double>{2.5, 0.25}));
  EXPECT_EQ(tb[3].to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));

  Batch sb = default_collate(std::vector<double>{1.0, 2.0, 3.0});
  EXPECT_EQ(sb[0].to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

struct Pair {
  Tensor image, mask;
  auto fields() { return std::tie(image, mask); }
};

TEST(DataCollate, StructsWithFields) {
  std::vector<Pair> s = {{zeros({3}), ones({2})}, {ones({3}), zeros({2})}};
  Batch b = default_collate(std::move(s));
  ASSERT_TRUE(b.holds<Pair>());
  EXPECT_EQ(b.size(), 2);
  const Pair& p = b.as<Pair>();
  EXPECT_EQ(p.image.shape(), (Shape{2, 3}));
  EXPECT_EQ(p.mask.to_vector<float>(), (std::vector<float>{1, 1, 0, 0}));
  EXPECT_THROW(b.as<TensorList>(), DTypeError);
}

struct Mine {
  int64_t total;
};

TEST(DataCollate, UserFunctions) {
  CollateFn<int64_t> sum = [](std::vector<int64_t>&& v) {
    int64_t t = 0;
    for (auto x : v) t += x;
    return Mine{t};
  };
  EXPECT_FALSE(sum.is_default());
  Batch b = sum({1, 2, 3});
  EXPECT_EQ(b.size(), 3);
  EXPECT_EQ(b.as<Mine>().total, 6);
  CollateFn<int64_t> raw = [](std::vector<int64_t>&& v) {
    return Batch(Mine{0}, 10 * static_cast<int64_t>(v.size()));
  };
  EXPECT_EQ(raw({1, 2}).size(), 20);
  CollateFn<int64_t> dflt;
  EXPECT_TRUE(dflt.is_default());
  EXPECT_EQ(dflt({4, 5})[0].to_vector<int64_t>(), (std::vector<int64_t>{4, 5}));
}

}  // namespace
}  // namespace ath::data
