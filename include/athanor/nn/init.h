// nn::init: PyTorch's parameter initialisers, in place (a Tensor is a handle: the argument's
// data is written and the same handle returned) and without recording autograd history.
// Layers use them for their default initialisation (Linear: kaiming_uniform_ with a = sqrt(5)),
// so an athanor model starts from the same distributions as its PyTorch twin. Random draws come
// from Philox (the global generator unless one is passed), so a seed fixes them whatever the
// thread count; they are not PyTorch's stream, whose numbers nobody can reproduce outside it.
//
//   Tensor w = empty({128, 784}), bias = empty({128});
//   nn::init::kaiming_uniform_(w, {.a = std::sqrt(5.0)});
//   nn::init::zeros_(bias);
#pragma once

#include <string_view>

#include "athanor/core/rng.h"
#include "athanor/tensor/tensor.h"

namespace ath::nn::init {

enum class FanMode { FanIn, FanOut };

// PyTorch's recommended gain for a nonlinearity: "linear", "conv*", "sigmoid" -> 1, "tanh" ->
// 5/3, "relu" -> sqrt(2), "leaky_relu" -> sqrt(2 / (1 + param^2)) (param defaults to 0.01),
// "selu" -> 3/4. Anything else is a ValueError.
double calculate_gain(std::string_view nonlinearity, double param = 0.01);
// (fan_in, fan_out) of a weight of at least 2 dims: dims 1 and 0 times the receptive field.
std::pair<int64_t, int64_t> fan_in_and_fan_out(const Tensor& t);

Tensor uniform_(Tensor t, double a = 0.0, double b = 1.0, Generator* gen = nullptr);
Tensor normal_(Tensor t, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
// Normal(mean, std) truncated to [a, b] by inverse-CDF sampling, as PyTorch does.
Tensor trunc_normal_(Tensor t, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                     Generator* gen = nullptr);
Tensor constant_(Tensor t, double value);
Tensor zeros_(Tensor t);
Tensor ones_(Tensor t);
Tensor xavier_uniform_(Tensor t, double gain = 1.0, Generator* gen = nullptr);
Tensor xavier_normal_(Tensor t, double gain = 1.0, Generator* gen = nullptr);

struct KaimingOptions {
  double a = 0.0;  // negative slope of the leaky_relu that follows
  FanMode mode = FanMode::FanIn;
  std::string_view nonlinearity = "leaky_relu";
  Generator* generator = nullptr;
};
Tensor kaiming_uniform_(Tensor t, KaimingOptions options = {});
Tensor kaiming_normal_(Tensor t, KaimingOptions options = {});
// A (semi-)orthogonal matrix from the QR decomposition of a normal draw, signs fixed so that
// R's diagonal is positive; dims past the first are flattened.
Tensor orthogonal_(Tensor t, double gain = 1.0, Generator* gen = nullptr);

}  // namespace ath::nn::init
