// nn::ModuleDict: submodules registered under string keys, kept in insertion order (PyTorch's
// ModuleDict), so state_dict keys read "heads.cls.weight". It has no forward of its own.
//
//   #include "athanor/nn/linear.h"
//   nn::ModuleDict heads;
//   heads.emplace<nn::Linear>("cls", nn::LinearOptions{.in = 64, .out = 10});
//   heads.insert("box", std::make_shared<nn::Linear>(nn::LinearOptions{.in = 64, .out = 4}));
//   Tensor h = randn({2, 64});
//   Tensor logits = heads["cls"](h);
//   std::string order;
//   for (auto& [key, module] : heads) order += key + ' ';   // insertion order
//   assert(order == "cls box ");
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/nn/module.h"

namespace ath::nn {

class ModuleDict : public Module {
 public:
  using Item = std::pair<std::string, std::shared_ptr<Module>>;

  ModuleDict() : Module("ModuleDict") {}
  explicit ModuleDict(std::vector<Item> items);

  // Adds (and co-owns) a module under `key`, a valid name (non-empty, no '.'). A key already
  // present is a ValueError (PyTorch would replace the module: athanor's children are fixed
  // once registered).
  Module& insert(std::string key, std::shared_ptr<Module> module);
  template <class M, class... Args>
  M& emplace(std::string key, Args&&... args) {
    auto m = std::make_shared<M>(std::forward<Args>(args)...);
    insert(std::move(key), m);
    return *m;
  }

  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  bool contains(const std::string& key) const;
  std::vector<std::string> keys() const;
  // KeyError naming the key when absent.
  Module& operator[](const std::string& key) const;
  std::shared_ptr<Module> ptr(const std::string& key) const;
  template <class M>
  M& at(const std::string& key) const {
    auto* m = dynamic_cast<M*>(&(*this)[key]);
    ATH_CHECK(m != nullptr, ValueError, "ModuleDict: '{}' is a {}, not the type asked for", key,
              (*this)[key].type_name());
    return *m;
  }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
};

}  // namespace ath::nn
