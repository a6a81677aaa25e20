// Gradient buckets of DistributedDataParallel: which parameters' gradients travel together in
// one all-reduce. As PyTorch's DDP: parameters are taken in reverse registration order (the
// order backward usually produces their gradients), a bucket holds one dtype, and it closes
// once it holds at least its cap in bytes (so it may pass the cap by one parameter). The first
// bucket's cap is small (1 MiB) so that communication starts early in the backward pass; the
// others take the main cap (25 MiB). Registration order is only a guess: a pre-norm
// transformer layer registers its LayerNorms last but uses them first, so their gradients come
// last. assign_buckets_in_order takes the order gradients were actually ready in, which DDP
// observes in its first synchronised step and rebuilds its buckets by (PyTorch's
// _rebuild_buckets).
//
//   std::vector<dist::BucketParam> params = {{.numel = 300'000}, {.numel = 100},
//                                            {.numel = 200'000}, {.numel = 10}};
//   auto buckets = dist::assign_buckets(params, {.bucket_cap_bytes = 1 << 20,
//                                                .first_bucket_cap_bytes = 800});
//   // reverse order: params 3 and 2 fill the first bucket (800 bytes reached), 1 and 0 the next
//   assert(buckets.size() == 2 && buckets[0] == std::vector<int64_t>({3, 2}));
//   assert(buckets[1] == std::vector<int64_t>({1, 0}));
//   // Gradients observed in the order 3, 1, 2, 0 (parameter 1 before 2): with a 400-byte first
//   // cap the first bucket is 3 and 1, complete as soon as parameter 1's gradient is.
//   auto rebuilt = dist::assign_buckets_in_order(params, {3, 1, 2, 0},
//                                                {.bucket_cap_bytes = 1 << 20,
//                                                 .first_bucket_cap_bytes = 400});
//   assert(rebuilt.size() == 2 && rebuilt[0] == std::vector<int64_t>({3, 1}));
//   assert(rebuilt[1] == std::vector<int64_t>({2, 0}));
#pragma once

#include <cstdint>
#include <vector>

#include "athanor/core/dtype.h"

namespace ath::dist {

inline constexpr int64_t kDefaultBucketCapBytes = 25 * 1024 * 1024;
inline constexpr int64_t kDefaultFirstBucketCapBytes = 1024 * 1024;

struct BucketCaps {
  int64_t bucket_cap_bytes = kDefaultBucketCapBytes;
  int64_t first_bucket_cap_bytes = kDefaultFirstBucketCapBytes;
};

// What the assignment needs to know of a parameter.
struct BucketParam {
  int64_t numel = 0;
  DType dtype = kFloat32;
};

// The buckets, in the order their all-reduces are launched; each lists indices into `params`
// (given in registration order), in reverse registration order. Every parameter is in exactly
// one bucket. Caps must be positive (ValueError otherwise). Each dtype starts with the first
// bucket's cap.
std::vector<std::vector<int64_t>> assign_buckets(const std::vector<BucketParam>& params,
                                                 const BucketCaps& caps = {});

// The same, filling buckets in `order`: the order the gradients become ready in, listing every
// index of `params` exactly once (ValueError naming the index otherwise). Each bucket lists its
// members in that order, and the buckets come in the order of their first members.
// assign_buckets(params, caps) is this with order = n-1, ..., 1, 0.
std::vector<std::vector<int64_t>> assign_buckets_in_order(const std::vector<BucketParam>& params,
                                                          const std::vector<int64_t>& order,
                                                          const BucketCaps& caps = {});

}  // namespace ath::dist
