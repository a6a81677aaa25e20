// Tensor printing: exact expected strings (torch 1.13's formatting of the same values, with
// athanor's always-present shape/dtype suffix), plus golden printouts from tools/golden/print.py.
#include <gtest/gtest.h>

#include <sstream>

#include "athanor/athanor.h"
#include "support/golden.h"

namespace ath {
namespace {

Tensor f32(std::vector<float> v) { return from_vector(v); }
Tensor f32(std::vector<float> v, const Shape& s) { return from_vector(v, s); }
Tensor i64(std::vector<int64_t> v) { return from_vector(v); }
Tensor i64(std::vector<int64_t> v, const Shape& s) { return from_vector(v, s); }

TEST(Print, FloatMatrixCommonWidth) {
  EXPECT_EQ(f32({1.0f, -2.5f, 3.0f, 4.0f}, Shape{2, 2}).to_string(),
            R"(tensor([[ 1.0000, -2.5000],
        [ 3.0000,  4.0000]], shape=[2, 2], dtype=float32))");
}

TEST(Print, IntegersAndBools) {
  EXPECT_EQ(i64({1, 2, 3}).to_string(), "tensor([1, 2, 3], shape=[3], dtype=int64)");
  EXPECT_EQ(i64({1, -20, 300, 4}, Shape{2, 2}).to_string(),
            R"(tensor([[  1, -20],
        [300,   4]], shape=[2, 2], dtype=int64))");
  EXPECT_EQ(from_vector<bool>({true, false}).to_string(),
            "tensor([ True, False], shape=[2], dtype=bool)");
  EXPECT_EQ(from_vector<uint8_t>({1, 255}).to_string(),
            "tensor([  1, 255], shape=[2], dtype=uint8)");
  EXPECT_EQ(arange(8).view({2, 2, 2}).to_string(),
            R"(tensor([[[0, 1],
         [2, 3]],

        [[4, 5],
         [6, 7]]], shape=[2, 2, 2], dtype=int64))");
}

TEST(Print, FloatModes) {
  // All integers: no decimals, a trailing point.
  EXPECT_EQ(f32({1, 2, -3}).to_string(), "tensor([ 1.,  2., -3.], shape=[3], dtype=float32)");
  EXPECT_EQ(zeros({3}).to_string(), "tensor([0., 0., 0.], shape=[3], dtype=float32)");
  EXPECT_EQ(f32({-0.0f, 1.0f}).to_string(), "tensor([-0., 1.], shape=[2], dtype=float32)");
  // Scientific when the range needs it.
  EXPECT_EQ(f32({1e-5f, 1.0f, 123456.0f}).to_string(),
            "tensor([1.0000e-05, 1.0000e+00, 1.2346e+05], shape=[3], dtype=float32)");
  EXPECT_EQ(f32({1e9f, 2.0f}).to_string(),
            "tensor([1.0000e+09, 2.0000e+00], shape=[2], dtype=float32)");
  EXPECT_EQ(f32({NAN, INFINITY, -INFINITY, 1.5f}).to_string(),
            "tensor([   nan,    inf,   -inf, 1.5000], shape=[4], dtype=float32)");
  EXPECT_EQ(f32({0.1f, 0.2f}).to(kFloat16).to_string(),
            "tensor([0.1000, 0.2000], shape=[2], dtype=float16)");
  EXPECT_EQ(from_vector<double>({0.1234567, 2}, Shape{1, 2}).to_string(),
            "tensor([[0.1235, 2.0000]], shape=[1, 2], dtype=float64)");
}

TEST(Print, ZeroDimEmptyAndUndefined) {
  EXPECT_EQ(full({}, 0.5).to_string(), "tensor(0.5000, shape=[], dtype=float32)");
  EXPECT_EQ(scalar_tensor(7).to_string(), "tensor(7, shape=[], dtype=int64)");
  EXPECT_EQ(zeros({0}).to_string(), "tensor([], shape=[0], dtype=float32)");
  EXPECT_EQ(zeros({2, 0}, kInt64).to_string(), "tensor([], shape=[2, 0], dtype=int64)");
  EXPECT_EQ(Tensor().to_string(), "tensor(undefined)");
}

TEST(Print, LineWrapAndSuffixWrap) {
  EXPECT_EQ((arange(0, 30, 1, kFloat32) / 3.0).to_string(),
            R"(tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,
        3.0000, 3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667,
        6.0000, 6.3333, 6.6667, 7.0000, 7.3333, 7.6667, 8.0000, 8.3333, 8.6667,
        9.0000, 9.3333, 9.6667], shape=[30], dtype=float32))");
  EXPECT_EQ((arange(0, 26, 1, kFloat32) / 4.0).to_string(),
            R"(tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000, 1.2500, 1.5000, 1.7500, 2.0000,
        2.2500, 2.5000, 2.7500, 3.0000, 3.2500, 3.5000, 3.7500, 4.0000, 4.2500,
        4.5000, 4.7500, 5.0000, 5.2500, 5.5000, 5.7500, 6.0000, 6.2500],
       shape=[26], dtype=float32))");
}

TEST(Print, SummarizesLargeTensors) {
  EXPECT_EQ(arange(0, 2000, 1, kFloat32).to_string(),
            R"(tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,
        1.9990e+03], shape=[2000], dtype=float32))");
  EXPECT_EQ(arange(2000).view({40, 50}).to_string(),
            R"(tensor([[   0,    1,    2,  ...,   47,   48,   49],
        [  50,   51,   52,  ...,   97,   98,   99],
        [ 100,  101,  102,  ...,  147,  148,  149],
        ...,
        [1850, 1851, 1852,  ..., 1897, 1898, 1899],
        [1900, 1901, 1902,  ..., 1947, 1948, 1949],
        [1950, 1951, 1952,  ..., 1997, 1998, 1999]], shape=[40, 50],
       dtype=int64))");
  std::string s = (arange(0, 1200, 1, kFloat32).view({2, 30, 20}) / 7.0).to_string();
  const std::string head = R"(tensor([[[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 2.4286e+00,
          2.5714e+00, 2.7143e+00],
         [2.8571e+00, 3.0000e+00, 3.1429e+00,  ..., 5.2857e+00,
)";
  EXPECT_EQ(s.substr(0, head.size()), head);
  EXPECT_NE(s.find(R"(          8.5429e+01, 8.5571e+01]],

        [[8.5714e+01,)"),
            std::string::npos);
  const std::string tail = R"(
          1.7114e+02, 1.7129e+02]]], shape=[2, 30, 20], dtype=float32))";
  EXPECT_EQ(s.substr(s.size() - tail.size()), tail);
}

TEST(Print, NonContiguousViewsPrintTheirValues) {
  Tensor m = f32({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(m.t().to_string(), R"(tensor([[1., 4.],
        [2., 5.],
        [3., 6.]], shape=[3, 2], dtype=float32))");
  EXPECT_EQ(m.select(1, 2).to_string(), "tensor([3., 6.], shape=[2], dtype=float32)");
}

TEST(Print, AutogradSuffixes) {
  Tensor x = arange(0, 20, 1, kFloat32).view({4, 5}).clone().detach().requires_grad_();
  EXPECT_EQ(x.to_string(), R"(tensor([[ 0.,  1.,  2.,  3.,  4.],
        [ 5.,  6.,  7.,  8.,  9.],
        [10., 11., 12., 13., 14.],
        [15., 16., 17., 18., 19.]], shape=[4, 5], dtype=float32,
       requires_grad=True))");
  Tensor y = f32({1, 2}).requires_grad_();
  EXPECT_EQ((y * 2.0).to_string(),
            "tensor([2., 4.], shape=[2], dtype=float32, grad_fn=<MulBackward>)");
  EXPECT_EQ(index_select(y, 0, i64({1})).sum().to_string(),
            "tensor(2., shape=[], dtype=float32, grad_fn=<SumBackward>)");
  EXPECT_EQ(index_select(y, 0, i64({1})).to_string(),
            "tensor([2.], shape=[1], dtype=float32, grad_fn=<IndexSelectBackward>)");
  std::ostringstream os;
  os << y.detach();
  EXPECT_EQ(os.str(), "tensor([1., 2.], shape=[2], dtype=float32)");
}

TEST(Print, GoldenPrintoutsFromTorch) {
  for (const testing::GoldenCase& c : testing::load_golden("print")) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.t("x").to_string(), c.attrs["text"].get<std::string>());
  }
}

}  // namespace
}  // namespace ath
