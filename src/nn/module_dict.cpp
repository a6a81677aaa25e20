#include "athanor/nn/module_dict.h"

#include <algorithm>

namespace ath::nn {

ModuleDict::ModuleDict(std::vector<Item> items) : Module("ModuleDict") {
  for (auto& [key, module] : items) insert(std::move(key), std::move(module));
}

Module& ModuleDict::insert(std::string key, std::shared_ptr<Module> module) {
  ATH_CHECK(module != nullptr, ValueError, "ModuleDict: cannot insert a null module at '{}'", key);
  ATH_CHECK(!contains(key), ValueError, "ModuleDict: key '{}' is already present", key);
  register_module(key, module);  // validates the name
  items_.emplace_back(std::move(key), std::move(module));
  return *items_.back().second;
}

bool ModuleDict::contains(const std::string& key) const {
  return std::any_of(items_.begin(), items_.end(), [&](const Item& e) { return e.first == key; });
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [key, m] : items_) out.push_back(key);
  return out;
}

std::shared_ptr<Module> ModuleDict::ptr(const std::string& key) const {
  for (const auto& [k, m] : items_) {
    if (k == key) return m;
  }
  ATH_THROW(KeyError, "ModuleDict: no module under key '{}'", key);
}

Module& ModuleDict::operator[](const std::string& key) const { return *ptr(key); }

}  // namespace ath::nn
