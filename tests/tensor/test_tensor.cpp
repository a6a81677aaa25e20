#include <gtest/gtest.h>

#include "athanor/athanor.h"

namespace ath {
namespace {

TEST(Tensor, ViewsShareStorageAndVersion) {
  Tensor x = zeros({2, 3});
  Tensor row = x.select(0, 1);
  Tensor col = x.t().select(0, 2);
  EXPECT_TRUE(row.shares_storage(x));
  EXPECT_FALSE(x.t().is_contiguous());
  uint32_t v = x.version();
  row.fill_(1.0);
  EXPECT_GT(x.version(), v);  // one counter per storage: views see each other's writes
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 0, 0, 1, 1, 1}));
  col.fill_(5.0);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 0, 5, 1, 1, 5}));
}

TEST(Tensor, FromBlobBorrowsOrOwns) {
  std::vector<float> host{1, 2, 3, 4};
  Tensor b = from_blob(host.data(), {2, 2}, kFloat32);
  host[0] = 9;
  EXPECT_EQ(b.to_vector<float>()[0], 9);  // a view of host memory, not a copy
}

TEST(Tensor, DeleterRunsWhenLastViewDies) {
  bool deleted = false;
  auto* data = new float[3]{1, 2, 3};
  {
    Tensor t = from_blob(data, {3}, kFloat32, [&](void* p) {
      delete[] static_cast<float*>(p);
      deleted = true;
    });
    Tensor v = t.slice(0, 1);
    t = Tensor();
    EXPECT_FALSE(deleted);
    EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{2, 3}));
  }
  EXPECT_TRUE(deleted);
  float src[2] = {7, 8};
  Tensor c = from_blob_copy(src, {2}, kFloat32);
  src[0] = 0;
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{7, 8}));
}

TEST(Tensor, ItemAndConversions) {
  Tensor s = full({}, 2.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_DOUBLE_EQ(s.item<double>(), 2.5);
  EXPECT_EQ(s.item<int64_t>(), 2);
  EXPECT_THROW(zeros({2}).item<float>(), ValueError);
  EXPECT_EQ(full({2}, 3).dtype(), kInt64);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  Tensor h = from_vector<float>({1.5f, -2.0f}).to(kFloat16).to(kBFloat16);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_THROW(zeros({2}).data<double>(), DTypeError);
  EXPECT_THROW(empty({-1}), ShapeError);
}

TEST(Tensor, ContiguousCloneAndCopy) {
  Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor t = x.t();
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_TRUE(x.contiguous().is_same(x));
  Tensor d = zeros({2, 3}, kFloat64);
  d.copy_(from_vector<float>({1, 2, 3}));  // broadcasts and converts
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  Tensor e = x.clone();
  e.zero_();
  EXPECT_EQ(x.to_vector<float>()[0], 1);  // clone is a copy
}

TEST(Tensor, ExpandIsStrideZeroAndReshapeCopiesOnlyWhenNeeded) {
  Tensor x = from_vector<float>({1, 2, 3}, Shape{3, 1});
  Tensor e = x.expand({3, 4});
  EXPECT_EQ(e.strides(), (Strides{1, 0}));
  EXPECT_TRUE(e.shares_storage(x));
  Tensor r = e.reshape({12});  // not viewable: copies
  EXPECT_FALSE(r.shares_storage(x));
  EXPECT_TRUE(x.reshape({3}).shares_storage(x));
  EXPECT_EQ(x.unflatten(0, {1, 3}).shape(), (Shape{1, 3, 1}));
}

}  // namespace
}  // namespace ath
