// Bucket assignment (PyTorch's compute_bucket_assignment_by_size, without sparse gradients):
// one open bucket per dtype, closed once it reaches its cap; the last open ones close at the end.
#include "athanor/dist/ddp_buckets.h"

#include <algorithm>
#include <map>

#include "athanor/core/error.h"

namespace ath::dist {

std::vector<std::vector<int64_t>> assign_buckets(const std::vector<BucketParam>& params,
                                                 const BucketCaps& caps) {
  std::vector<int64_t> reverse(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    reverse[i] = static_cast<int64_t>(params.size() - 1 - i);
  }
  return assign_buckets_in_order(params, reverse, caps);
}

std::vector<std::vector<int64_t>> assign_buckets_in_order(const std::vector<BucketParam>& params,
                                                          const std::vector<int64_t>& order,
                                                          const BucketCaps& caps) {
  ATH_CHECK(caps.bucket_cap_bytes > 0 && caps.first_bucket_cap_bytes > 0, ValueError,
            "DistributedDataParallel: bucket caps must be positive, got bucket_cap_bytes={} and "
            "first_bucket_cap_bytes={}",
            caps.bucket_cap_bytes, caps.first_bucket_cap_bytes);
  ATH_CHECK(order.size() == params.size(), ValueError,
            "assign_buckets_in_order: the order lists {} indices for {} parameters", order.size(),
            params.size());
  // position[i]: where parameter i comes in the order (-1: not yet seen).
  std::vector<int64_t> position(params.size(), -1);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const int64_t i = order[k];
    ATH_CHECK(i >= 0 && i < static_cast<int64_t>(params.size()), ValueError,
              "assign_buckets_in_order: index {} at position {} is out of range for {} "
              "parameters",
              i, k, params.size());
    ATH_CHECK(position[static_cast<std::size_t>(i)] < 0, ValueError,
              "assign_buckets_in_order: index {} appears twice (positions {} and {})", i,
              position[static_cast<std::size_t>(i)], k);
    position[static_cast<std::size_t>(i)] = static_cast<int64_t>(k);
  }
  struct Open {
    std::vector<int64_t> members;
    int64_t bytes = 0;
    int64_t cap = 0;
  };
  std::map<DType, Open> open;
  std::vector<std::vector<int64_t>> buckets;
  for (const int64_t i : order) {
    const BucketParam& p = params[static_cast<std::size_t>(i)];
    ATH_CHECK(p.numel >= 0, ValueError, "assign_buckets: parameter {} has {} elements", i, p.numel);
    auto [it, fresh] = open.try_emplace(p.dtype);
    Open& b = it->second;
    if (fresh) b.cap = caps.first_bucket_cap_bytes;
    b.members.push_back(i);
    b.bytes += p.numel * static_cast<int64_t>(element_size(p.dtype));
    if (b.bytes >= b.cap) {
      buckets.push_back(std::move(b.members));
      b.members.clear();
      b.bytes = 0;
      b.cap = caps.bucket_cap_bytes;
    }
  }
  for (auto& entry : open) {
    if (!entry.second.members.empty()) buckets.push_back(std::move(entry.second.members));
  }
  // Launch order: the bucket whose first gradient comes first first. With one dtype this is
  // already the order above; with several it interleaves their buckets.
  std::stable_sort(buckets.begin(), buckets.end(), [&](const auto& a, const auto& b) {
    return position[static_cast<std::size_t>(a.front())] <
           position[static_cast<std::size_t>(b.front())];
  });
  return buckets;
}

}  // namespace ath::dist
