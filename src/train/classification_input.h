// Decoding and validating the (preds, target) pair every classification metric takes, once, into
// plain per-sample class indices.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "athanor/tensor/tensor.h"

namespace ath::train::detail {

struct ClassificationBatch {
  int64_t num_classes = 0;        // from the options, else the scores' class dim, else 0 (unknown)
  std::vector<int64_t> target;    // per kept sample (ignore_index removed)
  std::vector<int64_t> pred;      // top-1 prediction
  std::vector<uint8_t> in_top_k;  // target among the k best scores (top_k > 1 only)
};

// metric: the name errors start with. num_classes 0 = unknown (accepted only by Accuracy).
ClassificationBatch decode_classification(const char* metric, const Tensor& preds,
                                          const Tensor& target, int64_t num_classes, int64_t top_k,
                                          std::optional<int64_t> ignore_index);

}  // namespace ath::train::detail
