#include "athanor/nn/flatten.h"

#include <algorithm>

#include "athanor/core/error.h"
#include "athanor/ops/ops.h"
#include "repr.h"

namespace ath::nn {

Tensor Flatten::forward(const Tensor& x) { return x.flatten(options.start_dim, options.end_dim); }

std::string Flatten::extra_repr() const {
  return fmt::format("start_dim={}, end_dim={}", options.start_dim, options.end_dim);
}

Unflatten::Unflatten(UnflattenOptions o) : Module("Unflatten"), options(std::move(o)) {
  const Shape& s = options.sizes;
  ATH_CHECK(!s.empty(), ValueError, "Unflatten: sizes (unflattened_size) must not be empty");
  ATH_CHECK(std::count(s.begin(), s.end(), int64_t{-1}) <= 1 &&
                std::all_of(s.begin(), s.end(), [](int64_t v) { return v >= -1; }),
            ValueError, "Unflatten: sizes must be non-negative with at most one -1, got {}",
            ath::to_string(s));
}

Tensor Unflatten::forward(const Tensor& x) { return x.unflatten(options.dim, options.sizes); }

std::string Unflatten::extra_repr() const {
  return fmt::format("dim={}, unflattened_size={}", options.dim, detail::py_tuple(options.sizes));
}

}  // namespace ath::nn
