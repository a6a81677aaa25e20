// nn::ModuleList: a list of submodules registered as "0", "1", ... (PyTorch's names), for
// models that iterate over layers themselves. It has no forward of its own.
//
//   #include "athanor/nn/linear.h"
//   nn::ModuleList blocks;
//   for (int i = 0; i < 4; ++i)
//     blocks.emplace_back<nn::Linear>(nn::LinearOptions{.in = 64, .out = 64});
//   Tensor h = randn({2, 64});
//   for (auto& block : blocks) h = relu((*block)(h));
//   auto& last = blocks.at<nn::Linear>(-1);   // negative indices count from the end
#pragma once

#include <memory>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/nn/module.h"

namespace ath::nn {

class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  template <class... M>
  explicit ModuleList(std::shared_ptr<M>... modules) : Module("ModuleList") {
    (push_back(std::move(modules)), ...);
  }

  // Appends (and co-owns) a module; ValueError for a null one.
  Module& push_back(std::shared_ptr<Module> module);
  template <class M, class... Args>
  M& emplace_back(Args&&... args) {
    auto m = std::make_shared<M>(std::forward<Args>(args)...);
    push_back(m);
    return *m;
  }
  // Appends every module of `other` (shared, not copied), as PyTorch's extend.
  void extend(const ModuleList& other);

  std::size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  // Negative indices count from the end; IndexError when out of range.
  Module& operator[](int64_t i) const;
  std::shared_ptr<Module> ptr(int64_t i) const;
  template <class M>
  M& at(int64_t i) const {
    auto* m = dynamic_cast<M*>(&(*this)[i]);
    ATH_CHECK(m != nullptr, ValueError, "ModuleList: module {} is a {}, not the type asked for", i,
              (*this)[i].type_name());
    return *m;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace ath::nn
