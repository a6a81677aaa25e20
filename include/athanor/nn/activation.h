// Activation modules: the elementwise nonlinearities of athanor/ops/activations.h (and sigmoid,
// tanh, softmax, log_softmax) as layers, with PyTorch's options, defaults and reprs, so they can
// sit in a Sequential. None has parameters. PyTorch's `inplace` flags are not offered: every
// activation returns a new tensor.
//
//   #include "athanor/nn/linear.h"
//   #include "athanor/nn/sequential.h"
//   nn::Sequential mlp;
//   mlp.emplace_back<nn::Linear>(nn::LinearOptions{.in = 16, .out = 32});
//   mlp.emplace_back<nn::GELU>(nn::GELUOptions{.approximate = GeluApprox::Tanh});
//   nn::LeakyReLU leaky({.negative_slope = 0.2});
//   nn::Softmax softmax({.dim = -1});
//   Tensor p = softmax(leaky(mlp(randn({4, 16}))));   // [4, 32]; each row sums to 1
#pragma once

#include <optional>

#include "athanor/nn/module.h"
#include "athanor/ops/activations.h"

namespace ath::nn {

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override;
};

struct LeakyReLUOptions {
  double negative_slope = 0.01;
};
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(LeakyReLUOptions options = {}) : Module("LeakyReLU"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  LeakyReLUOptions options;
};

struct ELUOptions {
  double alpha = 1.0;
};
class ELU : public Module {
 public:
  explicit ELU(ELUOptions options = {}) : Module("ELU"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  ELUOptions options;
};

class SELU : public Module {
 public:
  SELU() : Module("SELU") {}
  Tensor forward(const Tensor& x) override;
};

struct GELUOptions {
  GeluApprox approximate = GeluApprox::None;  // PyTorch's approximate='none' | 'tanh'
};
class GELU : public Module {
 public:
  explicit GELU(GELUOptions options = {}) : Module("GELU"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  GELUOptions options;
};

class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& x) override;
};

class Mish : public Module {
 public:
  Mish() : Module("Mish") {}
  Tensor forward(const Tensor& x) override;
};

struct SoftplusOptions {
  double beta = 1.0;
  double threshold = 20.0;  // linear where beta * x > threshold
};
class Softplus : public Module {
 public:
  explicit Softplus(SoftplusOptions options = {}) : Module("Softplus"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  SoftplusOptions options;
};

struct HardtanhOptions {
  double min_val = -1.0;
  double max_val = 1.0;
};
class Hardtanh : public Module {
 public:
  explicit Hardtanh(HardtanhOptions options = {});  // ValueError unless max_val > min_val
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  HardtanhOptions options;
};

class Hardsigmoid : public Module {
 public:
  Hardsigmoid() : Module("Hardsigmoid") {}
  Tensor forward(const Tensor& x) override;
};

class Hardswish : public Module {
 public:
  Hardswish() : Module("Hardswish") {}
  Tensor forward(const Tensor& x) override;
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) override;
};

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& x) override;
};

struct SoftmaxOptions {
  // Unset is PyTorch's legacy implicit dim (a deprecated default there): 0 for 0-, 1- and 3-D
  // inputs, else 1.
  std::optional<int64_t> dim;
};
class Softmax : public Module {
 public:
  explicit Softmax(SoftmaxOptions options = {}) : Module("Softmax"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  SoftmaxOptions options;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(SoftmaxOptions options = {}) : Module("LogSoftmax"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  SoftmaxOptions options;
};

}  // namespace ath::nn
