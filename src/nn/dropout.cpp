#include "athanor/nn/dropout.h"

#include "athanor/core/error.h"
#include "athanor/ops/ops.h"

namespace ath::nn {

Dropout::Dropout(DropoutOptions o) : Module("Dropout"), options(o) {
  ATH_CHECK(o.p >= 0 && o.p <= 1, ValueError, "Dropout: p must be in [0, 1], got {}", o.p);
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, options.p, is_training()); }

std::string Dropout::extra_repr() const { return fmt::format("p={}", options.p); }

}  // namespace ath::nn
