#include "athanor/nn/sequential.h"

#include <string>

namespace ath::nn {

Module& Sequential::push_back(std::shared_ptr<Module> module) {
  ATH_CHECK(module != nullptr, ValueError, "Sequential: cannot append a null module");
  register_module(std::to_string(layers_.size()), module);
  layers_.push_back(std::move(module));
  return *layers_.back();
}

Module& Sequential::operator[](std::size_t i) const {
  ATH_CHECK(i < layers_.size(), IndexError, "Sequential: index {} out of range for {} layers", i,
            layers_.size());
  return *layers_[i];
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (auto& layer : layers_) h = (*layer)(h);
  return h;
}

}  // namespace ath::nn
