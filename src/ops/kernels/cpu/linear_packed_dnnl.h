// The packed weight's size for the shape rule (linear_packed.h). Memory contract of the kernels
// (linear_packed_dnnl.cpp): inputs are only read; each output element is written once.
#pragma once

#include <cstdint>

#include "athanor/ops/linear_packed.h"

namespace ath::kernels {

int64_t linear_packed_weight_bytes(const LinearPackedAttrs& a);

}  // namespace ath::kernels
