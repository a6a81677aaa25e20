// nn::Sequential: runs its children in order, each one's output feeding the next. Children are
// named "0", "1", ... as in PyTorch, so state_dict keys match a torch.nn.Sequential's.
//
//   #include "athanor/nn/flatten.h"
//   #include "athanor/nn/linear.h"
//   nn::Sequential mlp;
//   mlp.emplace_back<nn::Flatten>();
//   mlp.emplace_back<nn::Linear>(nn::LinearOptions{.in = 784, .out = 10});
//   Tensor x = randn({4, 1, 28, 28});
//   Tensor y = mlp(x);
//   auto& fc = mlp.at<nn::Linear>(1);       // typed access; ValueError if it is another type
#pragma once

#include <memory>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/nn/module.h"

namespace ath::nn {

class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  template <class... M>
  explicit Sequential(std::shared_ptr<M>... modules) : Module("Sequential") {
    (push_back(std::move(modules)), ...);
  }

  Module& push_back(std::shared_ptr<Module> module);
  template <class M, class... Args>
  M& emplace_back(Args&&... args) {
    auto m = std::make_shared<M>(std::forward<Args>(args)...);
    push_back(m);
    return *m;
  }

  std::size_t size() const { return layers_.size(); }
  Module& operator[](std::size_t i) const;  // IndexError when out of range
  template <class M>
  M& at(std::size_t i) const {
    auto* m = dynamic_cast<M*>(&(*this)[i]);
    ATH_CHECK(m != nullptr, ValueError, "Sequential: layer {} is a {}, not the type asked for", i,
              (*this)[i].type_name());
    return *m;
  }
  auto begin() const { return layers_.begin(); }
  auto end() const { return layers_.end(); }

  Tensor forward(const Tensor& x) override;

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

}  // namespace ath::nn
