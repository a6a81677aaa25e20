// DistributedDataParallel's bucket assignment: reverse registration order or an observed order,
// the first bucket's smaller cap, the main cap, one dtype a bucket; and the buckets a wrapped MLP
// gets.
#include "ddp_test_util.h"
#include "support/expect_error.h"

namespace ath::dist::testing {
namespace {

using Buckets = std::vector<std::vector<int64_t>>;

std::vector<BucketParam> floats(const std::vector<int64_t>& numels) {
  std::vector<BucketParam> out;
  for (int64_t n : numels) out.push_back({.numel = n, .dtype = kFloat32});
  return out;
}

TEST(DDPBuckets, ReverseOrderAndFirstBucketCap) {
  // 4-byte elements. Reverse: 5 (40 B) then 4 (400 B) reach the first cap of 100 B; then 3, 2
  // (800 + 400 B) reach the 1000 B cap; 1 and 0 are what is left.
  const Buckets got = assign_buckets(floats({10, 20, 100, 200, 100, 10}),
                                     {.bucket_cap_bytes = 1000, .first_bucket_cap_bytes = 100});
  EXPECT_EQ(got, (Buckets{{5, 4}, {3, 2}, {1, 0}}));
}

TEST(DDPBuckets, BucketClosesOnceItReachesItsCap) {
  // Exactly at the cap closes (40 + 60 B); 4 bytes short keeps the bucket open.
  EXPECT_EQ(assign_buckets(floats({10, 15, 10}),
                           {.bucket_cap_bytes = 100, .first_bucket_cap_bytes = 100}),
            (Buckets{{2, 1}, {0}}));
  EXPECT_EQ(assign_buckets(floats({10, 14, 10}),
                           {.bucket_cap_bytes = 100, .first_bucket_cap_bytes = 100}),
            (Buckets{{2, 1, 0}}));
  // A parameter larger than the cap is a bucket of its own.
  EXPECT_EQ(
      assign_buckets(floats({1000, 1000}), {.bucket_cap_bytes = 8, .first_bucket_cap_bytes = 8}),
      (Buckets{{1}, {0}}));
}

TEST(DDPBuckets, DefaultCapsAre25MiBAndFirst1MiB) {
  EXPECT_EQ(kDefaultBucketCapBytes, 25 * 1024 * 1024);
  EXPECT_EQ(kDefaultFirstBucketCapBytes, 1024 * 1024);
  // 2^18 floats = 1 MiB: one such parameter fills the first bucket; then 25 of them fill the
  // next; the last 5 remain.
  const Buckets got = assign_buckets(floats(std::vector<int64_t>(31, 1 << 18)));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], (std::vector<int64_t>{30}));
  EXPECT_EQ(got[1].size(), 25u);
  EXPECT_EQ(got[1].front(), 29);
  EXPECT_EQ(got[1].back(), 5);
  EXPECT_EQ(got[2], (std::vector<int64_t>{4, 3, 2, 1, 0}));
}

TEST(DDPBuckets, OneDtypePerBucket) {
  std::vector<BucketParam> params = {{.numel = 4, .dtype = kFloat64},
                                     {.numel = 4, .dtype = kFloat32},
                                     {.numel = 4, .dtype = kFloat64},
                                     {.numel = 4, .dtype = kFloat32}};
  const Buckets got =
      assign_buckets(params, {.bucket_cap_bytes = 1 << 20, .first_bucket_cap_bytes = 1 << 20});
  EXPECT_EQ(got, (Buckets{{3, 1}, {2, 0}}));
}

TEST(DDPBuckets, InObservedOrder) {
  // The order the gradients arrived in, not reverse registration: 1 (400 B) reaches the first
  // cap of 100 B; 4, 5, 0, 2 (680 B) the main cap of 600 B; 3 is left.
  const std::vector<BucketParam> params = floats({10, 100, 50, 200, 100, 10});
  EXPECT_EQ(assign_buckets_in_order(params, {1, 4, 5, 0, 2, 3},
                                    {.bucket_cap_bytes = 600, .first_bucket_cap_bytes = 100}),
            (Buckets{{1}, {4, 5, 0, 2}, {3}}));
  // Reverse registration order is assign_buckets.
  EXPECT_EQ(assign_buckets_in_order(params, {5, 4, 3, 2, 1, 0}), assign_buckets(params));
}

TEST(DDPBuckets, InObservedOrderInterleavesDtypes) {
  std::vector<BucketParam> params = floats({10, 10, 10});
  params[1].dtype = kFloat64;
  // The float64 bucket closes first, but the float32 one's first gradient came first: it is
  // launched first.
  EXPECT_EQ(assign_buckets_in_order(params, {0, 1, 2},
                                    {.bucket_cap_bytes = 80, .first_bucket_cap_bytes = 80}),
            (Buckets{{0, 2}, {1}}));
}

TEST(DDPBuckets, BadOrderIsRefused) {
  ath::testing::expect_error_naming(
      [] {
        assign_buckets_in_order(floats({1, 1}), {0});
      },
      "lists 1 indices for 2 parameters");
  ath::testing::expect_error_naming(
      [] {
        assign_buckets_in_order(floats({1, 1}), {0, 2});
      },
      "index 2 at position 1");
  ath::testing::expect_error_naming(
      [] {
        assign_buckets_in_order(floats({1, 1}), {1, 1});
      },
      "index 1 appears twice");
}

TEST(DDPBuckets, BadCapsAreRefused) {
  ath::testing::expect_error_naming([] { assign_buckets(floats({1}), {.bucket_cap_bytes = 0}); },
                                    "bucket_cap_bytes=0");
}

TEST(DDPBuckets, WrappedMlp) {
  // fc1.weight 512 B, fc1.bias 64 B, fc2.weight 256 B, fc2.bias 16 B. Caps 64 / 256: bucket 0 =
  // fc2.bias + fc2.weight (272 B >= 64), bucket 1 = fc1.bias + fc1.weight.
  Mlp model(1);
  DistributedDataParallel ddp(model, {.bucket_cap_bytes = 256, .first_bucket_cap_bytes = 64});
  const auto& b = ddp.buckets();
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].names, (std::vector<std::string>{"fc2.bias", "fc2.weight"}));
  EXPECT_EQ(b[0].numel, 4 + 64);
  EXPECT_EQ(b[0].bytes, 272);
  EXPECT_EQ(b[1].names, (std::vector<std::string>{"fc1.bias", "fc1.weight"}));
  EXPECT_EQ(b[1].bytes, 576);
  // Default caps: everything in the first bucket.
  Mlp other(1);
  DistributedDataParallel whole(other);
  ASSERT_EQ(whole.buckets().size(), 1u);
  EXPECT_EQ(whole.buckets()[0].names.size(), 4u);
  EXPECT_EQ(whole.buckets()[0].dtype, kFloat32);
}

TEST(DDPBuckets, FrozenParametersAreLeftOut) {
  Mlp model(1);
  model.fc1->weight.requires_grad_(false);
  DistributedDataParallel ddp(model);
  ASSERT_EQ(ddp.buckets().size(), 1u);
  EXPECT_EQ(ddp.buckets()[0].names,
            (std::vector<std::string>{"fc2.bias", "fc2.weight", "fc1.bias"}));
}

}  // namespace
}  // namespace ath::dist::testing
