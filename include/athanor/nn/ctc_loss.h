// nn::CTCLoss: the CTC loss as a layer, PyTorch's nn.CTCLoss (ops/ctc.h has the function and
// what each argument means). Its forward takes four tensors, so it is called as
// ctc(log_probs, targets, input_lengths, target_lengths); the one-tensor forward throws.
//
//   nn::CTCLoss ctc({.blank = 0, .zero_infinity = true});
//   Tensor log_probs = log_softmax(randn({30, 2, 8}), 2);              // [T, N, C]
//   Tensor targets = from_vector<int64_t>({3, 1, 4, 1, 5, 0}).reshape({2, 3});
//   Tensor loss = ctc(log_probs, targets, full({2}, int64_t(30)),
//                     from_vector<int64_t>({3, 2}));
//   assert(loss.dim() == 0 && ctc.extra_repr() == "blank=0, reduction=mean, zero_infinity=true");
#pragma once

#include "athanor/nn/module.h"
#include "athanor/ops/ctc.h"

namespace ath::nn {

class CTCLoss : public Module {
 public:
  explicit CTCLoss(CtcLossOptions options = {}) : Module("CTCLoss"), options(options) {}
  using Module::forward;     // the one-tensor form: a ValueError naming CTCLoss
  using Module::operator();  // likewise
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths) {
    return ctc_loss(log_probs, targets, input_lengths, target_lengths, options);
  }
  // Runs forward, then the forward hooks, which see log_probs as the input.
  Tensor operator()(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                    const Tensor& target_lengths) {
    Tensor out = forward(log_probs, targets, input_lengths, target_lengths);
    run_forward_hooks(log_probs, out);
    return out;
  }
  std::string extra_repr() const override;

  CtcLossOptions options;
};

}  // namespace ath::nn
