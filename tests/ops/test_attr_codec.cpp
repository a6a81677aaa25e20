// attr_codec.h: every kind of attribute field encodes to bytes and decodes back equal; bytes that
// do not hold a struct are a FormatError, never a read past the end. The walk over every op the
// table reaches is OpReplay.EveryRecordedCallsAttributesEncodeAndDecode (test_op_replay.cpp).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/ops/attr_codec.h"
#include "athanor/ops/conv_blocked.h"
#include "athanor/ops/linear_packed.h"

namespace ath {
namespace {

enum class Mode : uint8_t { A, B, C };

struct Inner {
  int32_t k = 0;
  std::optional<double> scale;
  bool operator==(const Inner&) const = default;
};

struct EveryKind {
  int64_t i = 0;
  double d = 0;
  float f = 0;
  bool flag = false;
  Mode mode = Mode::A;
  std::string text;
  Scalar s;
  std::optional<int64_t> maybe;
  Shape shape;
  DimList dims;
  std::array<int64_t, 3> fixed{};
  std::vector<double> list;
  std::vector<bool> bits;
  Inner inner;
  std::vector<Inner> inners;
  DType dtype = kFloat32;
  bool operator==(const EveryKind&) const = default;
};

template <class A>
A round_trip(const A& a) {
  std::string bytes;
  encode_attrs(a, bytes);
  std::string_view in = bytes;
  A back{};
  decode_attrs(in, back);
  EXPECT_TRUE(in.empty()) << in.size() << " bytes left";
  return back;
}

EveryKind full() {
  return {.i = -(int64_t{1} << 60),
          .d = -0.0,
          .f = 1.5f,
          .flag = true,
          .mode = Mode::C,
          .text = std::string("a\0b", 3),
          .s = Scalar(2.5),
          .maybe = 7,
          .shape = {2, 3, 4},
          .dims = {-1},
          .fixed = {1, 2, 3},
          .list = {0.25, -1e300},
          .bits = {true, false, true},
          .inner = {.k = 3, .scale = 0.5},
          .inners = {{.k = 1}, {.k = 2, .scale = 4.0}},
          .dtype = kBFloat16};
}

TEST(AttrCodec, EveryFieldKindRoundTrips) {
  EXPECT_EQ(round_trip(EveryKind{}), EveryKind{});
  const EveryKind a = full();
  const EveryKind b = round_trip(a);
  EXPECT_EQ(b, a);
  EXPECT_TRUE(std::signbit(b.d));  // -0.0 keeps its sign: the bytes, not the value, are stored
  EXPECT_EQ(round_trip(NoAttrs{}), NoAttrs{});
}

TEST(AttrCodec, ScalarsKeepTheirKind) {
  for (const Scalar s :
       {Scalar(true), Scalar(false), Scalar(int64_t{-5}), Scalar(3.0),
        Scalar(std::numeric_limits<double>::infinity()), Scalar(int64_t{1} << 62)}) {
    const Scalar back = round_trip(ClampAttrs{.min = s}).min.value();
    EXPECT_EQ(back.kind(), s.kind());
    EXPECT_EQ(back, s);
  }
  const Scalar nan = round_trip(ClampAttrs{.min = std::nan("")}).min.value();
  EXPECT_TRUE(nan.is_floating() && std::isnan(nan.to_double()));
}

TEST(AttrCodec, NullPointersOnly) {
  struct WithPointer {
    const int* p = nullptr;
    int64_t n = 0;
  };
  EXPECT_EQ(round_trip(WithPointer{.n = 4}).n, 4);
  const int x = 0;
  std::string bytes;
  EXPECT_THROW(encode_attrs(WithPointer{.p = &x}, bytes), NotImplementedError);
  const std::string not_null = std::string(1, '\1') + std::string(8, '\0');
  std::string_view in = not_null;
  WithPointer back;
  EXPECT_THROW(decode_attrs(in, back), FormatError);
}

TEST(AttrCodec, TruncatedBytesAreAFormatErrorAtEveryLength) {
  std::string bytes;
  encode_attrs(full(), bytes);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    std::string_view in(bytes.data(), n);
    EveryKind back;
    EXPECT_THROW(decode_attrs(in, back), FormatError) << "at " << n << " of " << bytes.size();
  }
}

TEST(AttrCodec, CorruptLengthsAndBoolsAreFormatErrors) {
  // A list claiming more entries than bytes are left: refused before anything is allocated.
  std::string bytes;
  encode_attrs(std::vector<double>{1.0}, bytes);
  bytes[7] = '\x7f';  // the length's high byte
  std::string_view in = bytes;
  std::vector<double> list;
  EXPECT_THROW(decode_attrs(in, list), FormatError);
  // A fixed-size list must hold exactly its size.
  bytes.clear();
  encode_attrs(std::vector<int64_t>{1, 2}, bytes);
  in = bytes;
  std::array<int64_t, 3> fixed{};
  EXPECT_THROW(decode_attrs(in, fixed), FormatError);
  // A bool byte other than 0 or 1.
  const std::string two(1, '\2');
  in = two;
  bool flag = false;
  EXPECT_THROW(decode_attrs(in, flag), FormatError);
  // A scalar kind past Floating.
  const std::string kind = std::string(1, '\7') + std::string(8, '\0');
  in = kind;
  Scalar s;
  EXPECT_THROW(decode_attrs(in, s), FormatError);
}

TEST(AttrCodec, TypeErasedThroughTheRegistry) {
  const OpDef& conv = op_convolution();
  const ConvAttrs attrs{.stride = {2, 2}, .pad_l = {1, 1}, .groups = 4};
  const std::string bytes = conv.encode_attrs(&attrs);
  const std::shared_ptr<const void> back = conv.decode_attrs(bytes);
  EXPECT_TRUE(conv.attrs_equal(back.get(), &attrs));
  // Trailing bytes mean the bytes were another struct's.
  EXPECT_THROW(conv.decode_attrs(bytes + "x"), FormatError);
  EXPECT_THROW(conv.decode_attrs(bytes.substr(0, bytes.size() - 1)), FormatError);
}

// The inference-only ops of the blocked_layout and pack_linear passes, which no op-table row
// reaches.
TEST(AttrCodec, InferenceOnlyOps) {
  const ConvBlockedAttrs conv{.conv = {.stride = {2, 2}},
                              .src_shape = {1, 3, 8, 8},
                              .weight_shape = {16, 3, 3, 3},
                              .src_layout = ActivationLayout::Nchw,
                              .dst_layout = ActivationLayout::Blocked16,
                              .with_bias = true,
                              .relu = true,
                              .winograd = true,
                              .pool = {2, 3}};
  const BlockedLayoutAttrs layout{.layout = ActivationLayout::Blocked8, .channels = 20};
  const PoolBlockedAttrs pool{.layout = ActivationLayout::Nhwc,
                              .kernel = {3, 3},
                              .stride = {2, 2},
                              .pad_r = {1, 1},
                              .max = false};
  const LinearPackedAttrs linear{.rows = 4, .in_features = 8, .out_features = 3, .relu = true};
  const std::vector<std::pair<const OpDef*, const void*>> cases = {
      {&op_conv_pack_weight(), &conv}, {&op_conv_blocked(), &conv},
      {&op_to_blocked(), &layout},     {&op_from_blocked(), &layout},
      {&op_pool_blocked(), &pool},     {&op_linear_pack_weight(), &linear},
      {&op_linear_packed(), &linear},
  };
  for (const auto& [op, attrs] : cases) {
    const std::shared_ptr<const void> back = op->decode_attrs(op->encode_attrs(attrs));
    EXPECT_TRUE(op->attrs_equal(back.get(), attrs)) << op->name;
  }
}

}  // namespace
}  // namespace ath
