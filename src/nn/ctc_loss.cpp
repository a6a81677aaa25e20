#include "athanor/nn/ctc_loss.h"

#include <fmt/format.h>

namespace ath::nn {

// PyTorch prints CTCLoss() with no options; the options are what a reader needs.
std::string CTCLoss::extra_repr() const {
  return fmt::format("blank={}, reduction={}, zero_infinity={}", options.blank,
                     reduction_name(options.reduction), options.zero_infinity);
}

}  // namespace ath::nn
